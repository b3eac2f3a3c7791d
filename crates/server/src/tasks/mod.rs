//! The `io.modelcontextprotocol/tasks` extension (the ext-tasks specification): a `tools/call`
//! may answer with a durable task instead of its result; the client polls `tasks/get`, answers
//! input requests with `tasks/update`, cancels with `tasks/cancel`, and may follow the task on
//! a listen stream (`notifications/tasks`). In a fleet each of those lands on any replica, so a
//! task lives in the fleet's task store (a bus keyspace) and every change is announced on the
//! bus.
//!
//! - `options`: [`TaskOptions`] per handler (per tool: the catalog's [`TaskSupport`](crate::catalog::TaskSupport)).
//! - `record`: the stored task and its state machine (pure).
//! - `store`: the records, per-principal counts and node incarnations on the keyspace contract.
//! - `shared`: `Tasks`, this node's part — create, change-and-announce, orphan judgement, drain.
//! - `link`: what the handler's context knows of its task (`run_as_task`, progress → status).
//! - `running`: this node's runners, which updates, cancels and events reach.
//! - `follow`: task events from the bus, and the listen streams following tasks.
//! - `handle`: [`TaskHandle`], for tasks whose work lives outside the handler.
//!
//! The methods are `methods`' (`tasks`: `tasks/get`, `tasks/update`, `tasks/cancel`;
//! `task_tool` and `task_call`: a `tools/call` that may become a task, and its runner).
//!
//! What it leaves to others: the wire vocabulary is `mcp_fleet_protocol::tasks`; listen streams
//! (indexing followers, writing frames) are the listen router's; the keyspace semantics are
//! the bus backends'.

mod follow;
mod handle;
mod link;
mod options;
mod record;
mod running;
mod shared;
mod store;

pub use crate::task_handle::TaskHandle;
pub use options::TaskOptions;

pub(crate) use follow::{TaskSignal, TaskSignals};
pub(crate) use link::{Phase, TaskLink};
pub(crate) use record::{TaskRecord, binding, is_task_id, new_task_id};
pub(crate) use running::{Bells, Registered};
pub(crate) use shared::{Orphaned, TaskParts, Tasks, now_ms};

/// The extension as discover advertises it (no settings: the client declares it per request).
pub(crate) fn extension() -> crate::extensions::Extension {
    crate::extensions::Extension::new(mcp_fleet_protocol::tasks::TASKS_EXTENSION, serde_json::json!({}))
        .unwrap_or_else(|e| unreachable!("the tasks extension's id is well-formed: {e}"))
}
