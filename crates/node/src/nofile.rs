//! The open-file limit: each listen stream holds a socket, so a node needs a soft
//! `RLIMIT_NOFILE` above `--max-streams`. At start the node raises its soft limit to the hard
//! one (what an unprivileged process may do), logs both, and warns when the configured streams
//! plus headroom for everything else would not fit.

/// Descriptors kept for everything but listen streams: the listeners, the bus connections,
/// plain requests in flight, the runtime, logs.
pub(crate) const HEADROOM: u64 = 256;

/// What the limit is after raising it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FileLimit {
    /// The soft limit before.
    pub(crate) before: u64,
    /// The soft limit now.
    pub(crate) soft: u64,
    /// The hard limit.
    pub(crate) hard: u64,
}

/// Raise the soft limit to the hard limit; `None` where the platform has no such limit.
pub(crate) fn raise() -> Option<FileLimit> {
    let (before, hard) = rlimit::getrlimit(rlimit::Resource::NOFILE).ok()?;
    let soft = match rlimit::setrlimit(rlimit::Resource::NOFILE, hard, hard) {
        Ok(()) => hard,
        Err(e) => {
            tracing::warn!(error = %e, soft = before, hard, "could not raise the open-file limit");
            before
        }
    };
    Some(FileLimit { before, soft, hard })
}

/// Log the limit, and warn when `max_streams` plus [`HEADROOM`] exceeds it.
pub(crate) fn report(limit: Option<FileLimit>, max_streams: usize) {
    let Some(limit) = limit else { return };
    tracing::info!(soft_before = limit.before, soft = limit.soft, hard = limit.hard, "open-file limit");
    let needed = max_streams as u64 + HEADROOM;
    if needed > limit.soft {
        tracing::warn!(
            max_streams,
            needed,
            limit = limit.soft,
            "--max-streams plus headroom exceeds the open-file limit: streams past about {} will fail to open; raise the hard limit (ulimit -Hn, or the container runtime's nofile) or lower --max-streams",
            limit.soft.saturating_sub(HEADROOM)
        );
    }
}
