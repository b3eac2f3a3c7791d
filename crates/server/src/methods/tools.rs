//! `tools/call` (spec digest §10): the tool's required scopes, capability gate and
//! `Mcp-Param-*` checks before dispatch, argument check, then the tool's handler — run by a
//! task's runner when the call may become a task (see `crate::tasks`) — and the check of its
//! structured output.
//!
//! Both checks use the schemas compiled when the tool was registered (`ToolEntry::schemas`).
//! Bad arguments are the model's mistake: an `isError` result it can fix (spec digest §21.4).
//! A `structuredContent` that breaks `outputSchema` is the handler's: the spec says a server
//! MUST return conforming structured results, so the call fails with `-32603` naming the
//! failing path (and `mcp_fleet_tool_output_invalid` counts it) instead of sending bad data.
//! The handler's interceptors (`crate::intercept`) run around the handler and its output
//! check, after every check above.

use mcp_fleet_protocol::headers::check_param_headers;
use mcp_fleet_protocol::schema::ToolSchemas;
use mcp_fleet_protocol::types::CallToolResult;
use mcp_fleet_protocol::{Method, RpcError};
use serde_json::{Map, Value, json};

use futures_util::TryFutureExt as _;

use super::mrtr::start_call;
use super::{CallResult, MethodRequest, Prepared};
use crate::catalog::{ToolCall, ToolEntry, ToolFn, run_guarded};
use crate::intercept::intercepted;
use crate::metrics::Metrics;
use crate::outcome::Outcome;

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

/// `tools/call`: the tool found and admitted ([`admit_call`]), its arguments checked against
/// its input schema, and the call prepared — run here, or as a task.
pub(super) fn prepare_call(req: &mut MethodRequest<'_>) -> Result<Prepared, RpcError> {
    let name = req.string_param("name")?;
    // Borrowed from the snapshot the request holds: the handler's future takes only what it
    // needs (the handler, the schemas when an output check wraps it), never the definition.
    let catalog = req.catalog.clone();
    let Some(entry) = catalog.tools.get(&name) else {
        let err =
            RpcError::invalid_params(format!("Unknown tool: {name}")).with_data(serde_json::json!({"name": name}));
        return Err(err.in_band());
    };
    admit_call(req, entry)?;
    // Decided before `start_call`, which moves the envelope into the call context.
    let tasks = super::task_tool::for_tool(req, entry.task_support);
    let (ctx, notifications, finisher) = start_call(req, Method::ToolsCall, &name, &entry.revision)?;
    // The state binding has read them: take them out of the request. An object, or absent or
    // null (then `{}`), as checked above.
    let arguments = match req.params.remove("arguments") {
        Some(Value::Object(arguments)) => arguments,
        _ => Map::new(),
    };
    let arguments = Value::Object(arguments);
    if let Err(violation) = entry.schemas.input.check(&arguments) {
        // A tool input error is a result (isError), not a protocol error.
        return finisher.finish(CallToolResult::invalid_arguments(&violation).into(), None).map(Prepared::Immediate);
    }
    // Built as an object two statements above.
    let Value::Object(arguments) = arguments else { return Err(RpcError::internal("arguments are an object")) };
    let handler = checked_output(&entry.run, &entry.schemas, &req.shared.metrics);
    let handler =
        intercepted(handler, &req.shared.options.interceptors, &name, catalog.tools.revision, entry.cache_hint);
    if let Some(tasks) = tasks {
        let parts = super::task_tool::CallParts { handler, tool: name, arguments, ctx, finisher };
        // Its errors carry their statuses already (a refused task is 429, not in-band).
        let answer = tasks.call(parts).answer().map_ok(CallResult::Value);
        return Ok(Prepared::Call { future: Box::pin(answer), notifications });
    }
    let future = async move {
        let outcome = run_guarded(&handler, ToolCall { arguments, ctx }).await?;
        finisher.finish_tool_call(outcome)
    };
    Ok(Prepared::call_written(future, notifications))
}

/// The checks a known tool's call passes before any stream opens (so an HTTP status is still
/// possible): the caller's scopes; step 11, the client capabilities it declares it needs; the
/// tasks extension a task-only tool needs; `arguments` an object; and step 12, every
/// `x-mcp-header` mirrored faithfully (a 2026-07-28 rule; 2025-era clients send no such
/// headers). The arguments are read in place here, and taken out of the request (not copied)
/// for the handler once these are done.
fn admit_call(req: &MethodRequest<'_>, entry: &ToolEntry) -> Result<(), RpcError> {
    if !entry.allows(req.ctx.principal.as_ref()) {
        return Err(insufficient_scope(&entry.required_scopes));
    }
    if let Some(missing) = entry.required_capabilities.as_ref().and_then(|r| req.meta.missing_capabilities(r)) {
        return Err(RpcError::missing_capability(missing));
    }
    super::task_tool::refuse_without_extension(req, entry.task_support)?;
    let none = Value::Object(Map::new());
    let arguments = match req.params.get("arguments") {
        None | Some(Value::Null) => &none,
        Some(arguments @ Value::Object(_)) => arguments,
        Some(_) => return Err(RpcError::invalid_params("params.arguments must be an object").in_band()),
    };
    if !req.era2025 {
        check_param_headers(req.headers, &entry.param_headers, arguments)?;
    }
    Ok(())
}

/// `run`, its complete results checked against the tool's `outputSchema` (itself when the tool
/// declares none). Wrapped per call so a task's runner checks what it stores too.
fn checked_output(run: &ToolFn, schemas: &ToolSchemas, metrics: &Metrics) -> ToolFn {
    if schemas.output.is_none() {
        return run.clone();
    }
    let (run, schemas, invalid) = (run.clone(), schemas.clone(), metrics.tool_output_invalid.clone());
    std::sync::Arc::new(move |call: ToolCall| {
        let (run, schemas, invalid) = (run.clone(), schemas.clone(), invalid.clone());
        Box::pin(async move {
            let outcome = run(call).await?;
            if let Outcome::Complete(result) = &outcome
                && let Err(violation) = schemas.check_output(result.structured_content.as_ref(), result.is_error)
            {
                invalid.inc();
                tracing::error!(%violation, "tool result breaks its outputSchema");
                return Err(RpcError::internal(format!("Tool result does not match its outputSchema {violation}")));
            }
            Ok(outcome)
        })
    })
}
