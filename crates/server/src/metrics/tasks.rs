//! Metrics of the tasks extension (see `crate::tasks`): tasks created, running by status,
//! finished and their durations, requests routed to the replica running a task, orphans. The
//! tasks module counts through the methods here; registration is `registry.rs`'s.

use mcp_fleet_protocol::tasks::TaskStatus;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};

use super::labels::{MethodLabel, ReasonLabel, StatusLabel};

/// The `reason` label of `tasks_orphaned`, each registered in advance: why a task was failed
/// without its runner's word (the tasks module's `Orphaned` names them by these).
pub(crate) const ORPHANED_REASONS: [&str; 5] =
    ["replica_lost", "replica_restarted", "runner_stopped", "drained", "expired"];

/// Metrics of the tasks extension (see `crate::tasks`).
#[derive(Debug, Clone)]
pub(crate) struct TaskMetrics {
    /// Tasks created on this node.
    pub(crate) created: Counter,
    /// This node's running tasks, by status (`working`, `input_required`).
    pub(super) running: Family<StatusLabel, Gauge>,
    /// Tasks that reached a terminal status through this node, by status.
    pub(super) finished: Family<StatusLabel, Counter>,
    /// Creation to terminal status, by status, in seconds.
    pub(super) duration: Family<StatusLabel, Histogram>,
    /// `tasks/update` and `tasks/cancel` served here for a task running on another replica
    /// (which the change reached through the bus), by method.
    pub(super) routed: Family<MethodLabel, Counter>,
    /// Tasks failed because their runner was gone, by reason.
    pub(super) orphaned: Family<ReasonLabel, Counter>,
}

impl Default for TaskMetrics {
    fn default() -> Self {
        TaskMetrics {
            created: Counter::default(),
            running: Family::default(),
            finished: Family::default(),
            // 10 ms … ~23 h.
            duration: Family::new_with_constructor(|| Histogram::new(exponential_buckets(0.01, 3.0, 16))),
            routed: Family::default(),
            orphaned: Family::default(),
        }
    }
}

impl TaskMetrics {
    /// A task reached `status` after `took`.
    pub(crate) fn finished(&self, status: TaskStatus, took: std::time::Duration) {
        let label = StatusLabel { status: status.as_str() };
        self.finished.get_or_create(&label).inc();
        self.duration.get_or_create(&label).observe(took.as_secs_f64());
    }

    /// A task was failed because its runner was gone (`reason`).
    pub(crate) fn orphaned(&self, reason: &'static str) {
        self.orphaned.get_or_create(&ReasonLabel { reason }).inc();
    }

    /// A `method` for a task running elsewhere was served here.
    pub(crate) fn routed(&self, method: &'static str) {
        self.routed.get_or_create(&MethodLabel { method }).inc();
    }

    /// One running task of this node, counted under `status` until dropped.
    pub(crate) fn active(&self, status: TaskStatus) -> ActiveTask {
        let gauge = self.running.get_or_create(&StatusLabel { status: status.as_str() }).clone();
        gauge.inc();
        ActiveTask { metrics: self.clone(), gauge }
    }
}

/// A running task in [`TaskMetrics`]'s gauge of its status (see [`TaskMetrics::active`]).
pub(crate) struct ActiveTask {
    metrics: TaskMetrics,
    gauge: Gauge,
}

impl ActiveTask {
    /// It moved to `status`.
    pub(crate) fn set(&mut self, status: TaskStatus) {
        self.gauge.dec();
        self.gauge = self.metrics.running.get_or_create(&StatusLabel { status: status.as_str() }).clone();
        self.gauge.inc();
    }
}

impl Drop for ActiveTask {
    fn drop(&mut self) {
        self.gauge.dec();
    }
}
