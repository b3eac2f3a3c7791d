//! [`TaskHandle`]: one task of the fleet, for work that lives outside the handler — an external
//! job that a webhook or a poller completes later, on any replica. A handler creates one with
//! [`CallContext::detach_task`](crate::CallContext::detach_task) (the call answers with the
//! task at once); anyone holding the id gets one from [`McpHandler::task`].
//!
//! A detached task has no runner, so no replica's death fails it: it ends when its handle
//! completes or fails it, when the client cancels it (read [`TaskHandle::is_cancelled`] to stop
//! the external work), or when its TTL passes.
//!
//! The handle lives below both the call context (which gives one out, `detach_task`) and the
//! tasks module (which does the work): it holds a [`TaskControl`], which `tasks` implements.

use std::sync::Arc;

use futures_util::future::BoxFuture;
use mcp_fleet_protocol::RpcError;
use mcp_fleet_protocol::tasks::TaskStatus;
use mcp_fleet_protocol::types::CallToolResult;

use crate::error::ServerError;

/// What a [`TaskHandle`] asks of the fleet's task store (the tasks module implements it).
pub(crate) trait TaskControl: Send + Sync {
    /// Task `id`'s status; `None` once the store forgot it.
    fn status<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<TaskStatus>, ServerError>>;
    /// Set task `id`'s status message; `false` once it ended.
    fn set_status_message<'a>(&'a self, id: &'a str, message: String) -> BoxFuture<'a, Result<bool, ServerError>>;
    /// Complete task `id` with `result`; `false` when it had already ended.
    fn complete<'a>(&'a self, id: &'a str, result: CallToolResult) -> BoxFuture<'a, Result<bool, ServerError>>;
    /// Fail task `id` with `error`; `false` when it had already ended.
    fn fail<'a>(&'a self, id: &'a str, error: RpcError) -> BoxFuture<'a, Result<bool, ServerError>>;
}

/// A handle on one task (cheap to clone; see the module docs).
///
/// ```no_run
/// use mcp_fleet_server::{McpHandler, McpServer, catalog::TaskSupport, types::{CallToolResult, Tool}};
/// # async fn run(server: McpServer, handler: McpHandler) -> Result<(), Box<dyn std::error::Error>> {
/// let render = server.tool(Tool::new("render", "Renders a video"), |call| async move {
///     let task = call.ctx.detach_task().await?;   // the client gets the task now
///     // submit_job(task.id()) …                   // the job system calls back later
///     Ok(CallToolResult::text(format!("submitted as {}", task.id())))
/// });
/// render.task_support(TaskSupport::Required).await?;
/// // Later, in the job system's webhook, on whichever replica receives it:
/// if let Some(task) = handler.task("0123456789abcdef0123456789abcdef") {
///     task.complete(CallToolResult::text("https://cdn.example.com/video.mp4")).await?;
/// }
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct TaskHandle {
    control: Arc<dyn TaskControl>,
    id: String,
}

impl std::fmt::Debug for TaskHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskHandle").field("id", &self.id).finish()
    }
}

impl TaskHandle {
    pub(crate) fn new(control: Arc<dyn TaskControl>, id: String) -> Self {
        TaskHandle { control, id }
    }

    /// The task's id (what the client polls; give it to the external job as its reference).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The task's status; `None` once the store forgot it (its TTL passed).
    pub async fn status(&self) -> Result<Option<TaskStatus>, ServerError> {
        self.control.status(&self.id).await
    }

    /// Whether the client cancelled the task (stop the external work then).
    pub async fn is_cancelled(&self) -> Result<bool, ServerError> {
        Ok(self.status().await? == Some(TaskStatus::Cancelled))
    }

    /// Set the task's status message (what a client polling it reads); `false` once it ended.
    pub async fn set_status_message(&self, message: impl Into<String>) -> Result<bool, ServerError> {
        self.control.set_status_message(&self.id, message.into()).await
    }

    /// Complete the task with `result` (`isError` results too); `false` when it had already
    /// ended (cancelled, say) — the result is then dropped.
    pub async fn complete(&self, result: CallToolResult) -> Result<bool, ServerError> {
        self.control.complete(&self.id, result).await
    }

    /// Fail the task with the JSON-RPC `error`; `false` when it had already ended.
    pub async fn fail(&self, error: RpcError) -> Result<bool, ServerError> {
        self.control.fail(&self.id, error).await
    }
}
