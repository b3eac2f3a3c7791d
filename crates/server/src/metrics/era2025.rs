//! Metrics of the 2025 era's clients (see `crate::era2025`): sessions, GET streams and their
//! resumption, server-to-client requests, and requests by protocol version.

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;

use super::labels::{ReasonLabel, VersionLabel};

/// Metrics of 2025-era clients (see `crate::era2025`).
#[derive(Debug, Clone, Default)]
pub(crate) struct Era2025Metrics {
    /// Sessions created by `initialize` on this node.
    pub(crate) sessions_created: Counter,
    /// Sessions ended by DELETE on this node.
    pub(crate) sessions_ended: Counter,
    /// Requests naming an unknown or ended session, or another principal's (answered 404).
    pub(crate) sessions_not_found: Counter,
    /// Open GET streams.
    pub(crate) streams_open: Gauge,
    /// GET streams refused at the node's limit.
    pub(crate) streams_refused: Counter,
    /// GET streams opened with `Last-Event-ID`: `replayed` from the history, or `invalidated`
    /// (the history could not tell: the gap rule).
    pub(crate) resumes: Family<ReasonLabel, Counter>,
    /// Notification events written to GET streams.
    pub(crate) frames_written: Counter,
    /// Server-to-client requests sent (sampling, elicitation, roots).
    pub(crate) server_requests: Counter,
    /// Requests served, by the protocol version they speak.
    pub(crate) requests: Family<VersionLabel, Counter>,
}
