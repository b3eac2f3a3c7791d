//! Operational metrics in the Prometheus/OpenMetrics text format (prometheus-client).
//!
//! [`Metrics`] (`node.rs`) holds every series the handler counts, with its groups for the
//! 2025 era (`legacy.rs`), the tasks extension (`tasks.rs`) and the audit trail (`audit.rs`),
//! and their label sets (`labels.rs`). `registry.rs` registers them once, when the metrics
//! are made, and encodes them at each scrape with what is only read then (`collectors.rs`:
//! catalog revisions, the bus backend's own counters).

mod audit;
mod collectors;
mod era2025;
mod labels;
mod node;
mod registry;
mod tasks;
#[cfg(feature = "events")]
mod webhooks;

pub(crate) use audit::AuditMetrics;
pub(crate) use labels::{ListenRefusal, ReasonLabel, VersionLabel};
pub(crate) use node::Metrics;
pub(crate) use tasks::ORPHANED_REASONS;
#[cfg(feature = "events")]
pub(crate) use webhooks::WebhookMetrics;
