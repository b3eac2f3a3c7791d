//! `mcp-fleet-loadtest`: measures change-notification fan-out of mcp-fleet nodes from
//! outside — many `subscriptions/listen` streams (optionally real re-listing clients, built
//! on `mcp-fleet-client`) or 2025-era session GET streams, timed change events published through a node's admin endpoint or
//! straight onto the bus, loss verification, and exact latency histograms merged across
//! loader processes. The binary (`main.rs`) is a thin wrapper around [`run()`].
//!
//! - [`args`]: the command line; [`plan`]: what each stream follows, the change sequence.
//! - [`run`][mod@run]: the coordinator; [`worker`]: loader processes and their protocol.
//! - [`loader`]: one process's streams; [`probe`]: the client observer that measures;
//!   [`legacy`]: the 2025-era client (`--era 2025`: a session and its GET stream).
//! - [`verify`]: per stream and key, was anything lost (epoch-aware)?
//! - [`deliveries`], [`convergence`]: delivery latency and time to convergence.
//! - [`publish`]: admin or bus publishing, in the three load shapes.
//! - [`metrics`], [`procfs`]: the nodes' own counters, CPU and memory.
//! - [`results`], [`report`], [`table`], [`hist`], [`progress`], [`clock`]: figures and their output;
//!   [`html`]: the self-contained HTML report (`--html`, `report … --html`).
//! - [`limit`]: the machine's raw fan-out limit, measured in the same run.
//! - [`cleanup`]: what the benchmark binaries leave on the shared brokers, removed.
//! - [`webhook_receiver`]: `events-bench`'s webhook endpoint, checking every signature.
//!
//! ```no_run
//! use clap::Parser;
//! # async fn run() -> Result<(), mcp_fleet_loadtest::error::LoadtestError> {
//! let args = mcp_fleet_loadtest::args::Args::parse_from([
//!     "mcp-fleet-loadtest", "--url", "http://127.0.0.1:8080/mcp", "--admin", "127.0.0.1:9090",
//!     "--streams", "100", "--events", "5", "--relist", "--verify",
//! ]);
//! let report = mcp_fleet_loadtest::run(&args, None).await?;
//! assert!(report.verify.passed);
//! # Ok(())
//! # }
//! ```

pub mod args;
pub mod cleanup;
pub mod clock;
pub mod convergence;
pub mod deliveries;
pub mod error;
pub mod hist;
pub mod html;
pub mod legacy;
pub mod limit;
pub mod loader;
pub mod metrics;
pub mod plan;
pub mod probe;
pub mod procfs;
pub mod progress;
pub mod publish;
pub mod report;
pub mod results;
pub mod run;
pub mod sim;
pub mod table;
pub mod verify;
pub mod webhook_receiver;
pub mod worker;

pub use run::run;

/// Raise the soft `RLIMIT_NOFILE` to the hard limit (each listen stream over HTTP/1.1 is a
/// socket); returns the new soft limit.
pub fn raise_file_limit() -> Result<u64, error::LoadtestError> {
    rlimit::increase_nofile_limit(u64::MAX).map_err(error::LoadtestError::io("raising RLIMIT_NOFILE"))
}
