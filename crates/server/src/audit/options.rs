//! [`AuditOptions`]: where audit records go and how many may wait for their sinks.

use std::path::PathBuf;
use std::sync::Arc;

use super::sink::{AuditSink, JsonLinesSink};

/// The audit trail's settings ([`HandlerOptions::audit`](crate::HandlerOptions::audit)). Off
/// unless given: a handler without them records nothing and pays nothing.
///
/// ```
/// use mcp_fleet_server::{audit::AuditOptions, HandlerOptions};
/// let options = HandlerOptions::default().audit(AuditOptions::file("/var/log/mcp/audit.jsonl"));
/// let verbose = HandlerOptions::default().audit(AuditOptions::stdout().arguments(true));
/// ```
#[derive(Clone)]
pub struct AuditOptions {
    pub(crate) sinks: Vec<Arc<dyn AuditSink>>,
    pub(crate) arguments: bool,
    pub(crate) capacity: usize,
}

impl std::fmt::Debug for AuditOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuditOptions")
            .field("sinks", &self.sinks.len())
            .field("arguments", &self.arguments)
            .field("capacity", &self.capacity)
            .finish()
    }
}

impl AuditOptions {
    /// Records waiting for the sinks at most, by default; past it they are dropped and counted.
    /// At 10 000 calls/s this is about a second of a stalled sink.
    pub const DEFAULT_CAPACITY: usize = 8192;

    /// Records to `sink` only.
    pub fn sink(sink: impl AuditSink) -> Self {
        AuditOptions { sinks: vec![Arc::new(sink)], arguments: false, capacity: Self::DEFAULT_CAPACITY }
    }

    /// Records appended to the file at `path` as JSON lines (created if missing; opened by the
    /// writer thread, so a FIFO nobody reads yet never blocks the start).
    pub fn file(path: impl Into<PathBuf>) -> Self {
        Self::sink(JsonLinesSink::file(path))
    }

    /// Records written to standard output as JSON lines.
    pub fn stdout() -> Self {
        Self::sink(JsonLinesSink::stdout())
    }

    /// Another sink, beside those already given (each record goes to every sink, in order).
    pub fn also(mut self, sink: impl AuditSink) -> Self {
        self.sinks.push(Arc::new(sink));
        self
    }

    /// Whether records carry the arguments themselves, beside their digest. Default `false`:
    /// arguments may hold personal data or secrets; the digest proves which arguments a call
    /// had without keeping them.
    pub fn arguments(mut self, on: bool) -> Self {
        self.arguments = on;
        self
    }

    /// How many records may wait for the sinks (default [`Self::DEFAULT_CAPACITY`], at least 1).
    pub fn capacity(mut self, records: usize) -> Self {
        self.capacity = records.max(1);
        self
    }
}
