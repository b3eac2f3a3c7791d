//! Metrics of the audit trail (see `crate::audit`): records written, dropped, sink errors.

use prometheus_client::metrics::counter::Counter;

/// Metrics of the audit trail.
#[derive(Debug, Clone, Default)]
pub(crate) struct AuditMetrics {
    /// Records every sink took.
    pub(crate) written: Counter,
    /// Records dropped because the queue to the sinks was full (a slow or stalled sink).
    pub(crate) dropped: Counter,
    /// Writes or flushes a sink failed.
    pub(crate) sink_errors: Counter,
}
