//! The audit trail: one structured record per `tools/call`, `prompts/get` and
//! `resources/read` this node answers, and per task transition (the tasks extension), each
//! saying which code answered (node, execution epoch, executable digest), against which catalog
//! revision, for whom (issuer, tenant, subject), with what (a SHA-256 of the arguments; the
//! arguments themselves only when [`AuditOptions::arguments`] says so), how it ended, how long
//! it took and in which trace.
//!
//! - `record`: [`AuditRecord`] and its parts, what sinks see (serialised as one JSON object).
//! - `options`: [`AuditOptions`], the sinks and the bound of the queue.
//! - `sink`: the [`AuditSink`] contract, and the JSON-lines sink (a file, or stdout).
//! - `trail`: the queue and its writer thread; a call's record from its start to its end.
//!
//! **Bounded and non-blocking.** A call never waits for a sink: its record goes into a bounded
//! queue (`try_send`), a dedicated thread writes it; when the queue is full the record is
//! dropped and counted (`mcp_fleet_audit_records_dropped_total`). A sink that stalls (a FIFO
//! nobody reads, a full disk) costs records, never latency.
//!
//! What it leaves to others: when a call starts and ends is the methods' business (they call
//! `AuditTrail::start` and finish what it returns); exporting the records anywhere but
//! a JSON-lines stream is a sink's (the node's OpenTelemetry logs sink, say).

mod options;
mod record;
mod sink;
mod trail;

pub use options::AuditOptions;
pub use record::{AuditOrigin, AuditPrincipal, AuditRecord};
pub use sink::{AuditSink, JsonLinesSink};

pub(crate) use record::Ending;
pub(crate) use trail::{AuditTrail, CallFacts, CallStart, TaskTransition};
