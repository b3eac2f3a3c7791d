//! `tools/call` (spec digest §10): the tool's required scopes, capability gate and
//! `Mcp-Param-*` checks before dispatch, argument check, then the tool's handler — run by a
//! task's runner when the call may become a task (see `crate::tasks`).

use mcp_fleet_protocol::headers::check_param_headers;
use mcp_fleet_protocol::schema::check_arguments;
use mcp_fleet_protocol::types::CallToolResult;
use mcp_fleet_protocol::{Method, RpcError};
use serde_json::{Value, json};

use super::mrtr::start_call;
use super::{MethodRequest, Prepared};
use crate::catalog::{ToolCall, run_guarded};

/// 403 for a caller without the tool's scopes; the HTTP layer adds the `WWW-Authenticate`
/// challenge naming `data.requiredScopes` (see [`required_scopes`]).
fn insufficient_scope(scopes: &[String]) -> RpcError {
    RpcError::invalid_request("Insufficient scope for this tool")
        .with_status(http::StatusCode::FORBIDDEN)
        .with_data(json!({ REQUIRED_SCOPES: scopes }))
}

const REQUIRED_SCOPES: &str = "requiredScopes";

/// The scopes a 403 from [`insufficient_scope`] names, for its challenge.
pub(crate) fn required_scopes(error: &RpcError) -> Option<Vec<&str>> {
    if error.status != http::StatusCode::FORBIDDEN {
        return None;
    }
    let scopes = error.data.as_ref()?.get(REQUIRED_SCOPES)?.as_array()?;
    Some(scopes.iter().filter_map(Value::as_str).collect())
}

pub(super) fn prepare_call(req: &MethodRequest<'_>) -> Result<Prepared, RpcError> {
    let name = req.string_param("name")?;
    let Some(entry) = req.catalog.tools.get(&name).cloned() else {
        let err =
            RpcError::invalid_params(format!("Unknown tool: {name}")).with_data(serde_json::json!({"name": name}));
        return Err(err.in_band());
    };
    if !entry.allows(req.ctx.principal.as_ref()) {
        return Err(insufficient_scope(&entry.required_scopes));
    }
    // Step 11: declared capability requirements, before any stream opens (so 400 is possible).
    if let Some(missing) = entry.required_capabilities.as_ref().and_then(|r| req.meta.missing_capabilities(r)) {
        return Err(RpcError::missing_capability(missing));
    }
    crate::tasks::refuse_without_extension(req, entry.task_support)?;
    let arguments = req.object_param("arguments")?;
    // Step 12: every x-mcp-header declaration must be mirrored faithfully (a 2026-07-28 rule;
    // 2025-era clients send no such headers).
    if !req.legacy {
        check_param_headers(req.headers, &entry.param_headers, &Value::Object(arguments.clone()))?;
    }

    let definition = serde_json::to_value(&entry.def).unwrap_or(Value::Null);
    let (ctx, notifications, finisher) = start_call(req, Method::ToolsCall, &name, &definition)?;
    if let Err(problem) = check_arguments(&entry.def.input_schema, &arguments) {
        // A tool input error is a result (isError), not a protocol error.
        return finisher.finish(CallToolResult::error(problem).into(), None).map(Prepared::Immediate);
    }
    if let Some(tasks) = crate::tasks::for_tool(req, entry.task_support) {
        let parts = crate::tasks::CallParts { handler: entry.run.clone(), tool: name, arguments, ctx, finisher };
        // Its errors carry their statuses already (a refused task is 429, not in-band).
        return Ok(Prepared::Call { future: Box::pin(tasks.call(parts).answer()), notifications });
    }
    let future = async move {
        let outcome = run_guarded(&entry.run, ToolCall { arguments, ctx }).await?;
        finisher.finish(outcome, None)
    };
    Ok(Prepared::call(future, notifications))
}
