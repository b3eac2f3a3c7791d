//! Metrics of the events extension's webhook deliveries (see `crate::events`): POSTs by
//! outcome, callbacks refused before connecting (the SSRF rules) by reason, deliveries this
//! node took over from a replica whose lease lapsed, and what it is following now.

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;

use super::labels::ReasonLabel;

/// Metrics of webhook deliveries.
#[derive(Debug, Clone, Default)]
pub(crate) struct WebhookMetrics {
    /// Delivery attempts by outcome (`delivered`, or the failure's label).
    pub(super) attempts: Family<ReasonLabel, Counter>,
    /// Callbacks refused before any connection, by reason (`loopback`, `private`,
    /// `link_local`, `metadata`, …, and `redirect` for a 3xx not followed).
    pub(super) refused: Family<ReasonLabel, Counter>,
    /// Deliveries given up, by reason (`expired`, `unsubscribed`, `not_retryable`).
    pub(super) abandoned: Family<ReasonLabel, Counter>,
    /// Deliveries this node claimed after the replica holding them stopped renewing its lease.
    pub(super) taken_over: Counter,
    /// Deliveries this node follows now (its own and the ones it watches for a takeover).
    pub(super) following: Gauge,
}

impl WebhookMetrics {
    /// One attempt ended as `outcome`.
    pub(crate) fn attempt(&self, outcome: &'static str) {
        self.attempts.get_or_create(&ReasonLabel { reason: outcome }).inc();
    }

    /// A callback was refused before connecting, for `reason`.
    pub(crate) fn refused(&self, reason: &'static str) {
        self.refused.get_or_create(&ReasonLabel { reason }).inc();
    }

    /// A delivery was given up, for `reason`.
    pub(crate) fn abandoned(&self, reason: &'static str) {
        self.abandoned.get_or_create(&ReasonLabel { reason }).inc();
    }

    /// A delivery was taken over from a lapsed lease.
    pub(crate) fn taken_over(&self) {
        self.taken_over.inc();
    }

    /// The gauge of deliveries followed on this node.
    pub(crate) fn following(&self) -> &Gauge {
        &self.following
    }
}
