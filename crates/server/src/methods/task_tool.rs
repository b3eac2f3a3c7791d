//! Where `tools/call` meets the tasks extension: the `-32021` of a `Required` tool for a client
//! that did not declare the extension (ladder step 11, before the handler runs), and the
//! [`TaskCall`] of a call that may become a task.

use std::sync::Arc;

use mcp_fleet_protocol::RpcError;
use mcp_fleet_protocol::tasks::{declares_tasks, required_capability};
use serde_json::{Map, Value};

use super::task_call::TaskCall;
use super::{Finisher, MethodRequest};
use crate::catalog::TaskSupport;
use crate::catalog::ToolFn;
use crate::context::CallContext;
use crate::tasks::{TaskLink, Tasks, binding};

/// Step 11 for a tool that cannot serve a client without a task: "the server MUST return an
/// error with the code `-32021`, indicating the required extension".
pub(crate) fn refuse_without_extension(req: &MethodRequest<'_>, support: TaskSupport) -> Result<(), RpcError> {
    let served = req.shared.tasks.is_some() && !req.era2025 && declares_tasks(&req.meta);
    match support {
        TaskSupport::Required if !served => Err(RpcError::missing_capability(required_capability())),
        _ => Ok(()),
    }
}

/// The task store, when this call may become a task: the tool supports tasks and the client
/// declared the extension on this very request ("a server MUST NOT return `CreateTaskResult`
/// to a client that did not include the extension capability on its request").
pub(crate) fn for_tool(req: &MethodRequest<'_>, support: TaskSupport) -> Option<Arc<Tasks>> {
    let eligible = support != TaskSupport::Forbidden && !req.era2025 && declares_tasks(&req.meta);
    req.shared.tasks.clone().filter(|_| eligible)
}

/// The call of `handler` that may become a task: its context linked to the runner.
pub(crate) struct CallParts {
    pub(crate) handler: ToolFn,
    pub(crate) tool: String,
    pub(crate) arguments: Map<String, Value>,
    pub(crate) ctx: CallContext,
    pub(crate) finisher: Finisher,
}

impl Tasks {
    /// A runner for `parts` (see [`TaskCall`]).
    pub(crate) fn call(self: &Arc<Self>, parts: CallParts) -> TaskCall {
        let link = Arc::new(TaskLink::new(true, self.clone()));
        let mut ctx = parts.ctx;
        ctx.task = Some(link.clone());
        let principal = binding(ctx.principal.as_ref());
        TaskCall {
            tasks: self.clone(),
            handler: parts.handler,
            tool: parts.tool,
            arguments: parts.arguments,
            ctx,
            link,
            finisher: parts.finisher,
            principal,
        }
    }
}
