//! [`LoadtestError`]: why a run could not be carried out (as opposed to a run that found
//! lost events, which is a result, not an error).

use mcp_fleet_client::ClientError;

/// Why the load tester stopped.
#[derive(Debug, thiserror::Error)]
pub enum LoadtestError {
    /// The command line does not describe a possible run.
    #[error("usage: {0}")]
    Usage(String),
    /// A client-side failure that stops the run (bad URL, …).
    #[error(transparent)]
    Client(#[from] ClientError),
    /// Publishing a change failed in a way that stops the run.
    #[error("publish: {0}")]
    Publish(String),
    /// The event bus could not be used.
    #[error("event bus: {0}")]
    Bus(#[from] mcp_fleet_bus::BusError),
    /// Streams did not open in time.
    #[error("only {ready} of {wanted} streams were ready after {secs} s")]
    OpenTimeout {
        /// Streams ready.
        ready: usize,
        /// Streams wanted.
        wanted: usize,
        /// The limit, in seconds.
        secs: u64,
    },
    /// A worker process failed or spoke nonsense.
    #[error("worker: {0}")]
    Worker(String),
    /// Reading `/proc`, writing the JSON file, spawning a worker, …
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
}

impl LoadtestError {
    /// An I/O error while doing `what`.
    pub fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> LoadtestError {
        let what = what.into();
        move |source| LoadtestError::Io { what, source }
    }
}
