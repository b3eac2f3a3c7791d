//! `tools/call` (spec digest §10): capability gate and `Mcp-Param-*` checks before dispatch,
//! argument check, then the tool's handler.

use futures_util::FutureExt;
use mcp_fleet_protocol::RpcError;
use mcp_fleet_protocol::headers::check_param_headers;
use mcp_fleet_protocol::schema::check_arguments;
use mcp_fleet_protocol::types::CallToolResult;
use serde_json::Value;

use super::outcome::start_call;
use super::{Incoming, Prepared};
use crate::catalog::ToolCall;

pub(super) fn prepare_call(req: Incoming<'_>) -> Result<Prepared, RpcError> {
    let name = match req.string_param("name") {
        Ok(name) => name,
        Err(e) => return Ok(Prepared::Immediate(Err(e))),
    };
    let Some(entry) = req.catalog.tools.get(&name).cloned() else {
        let err =
            RpcError::invalid_params(format!("Unknown tool: {name}")).with_data(serde_json::json!({"name": name}));
        return Ok(Prepared::Immediate(Err(err.in_band())));
    };
    // Step 11: declared capability requirements, before any stream opens (so 400 is possible).
    if let Some(missing) = entry.required_capabilities.as_ref().and_then(|r| req.meta.missing_capabilities(r)) {
        return Err(RpcError::missing_capability(missing));
    }
    let arguments = match req.object_param("arguments") {
        Ok(a) => a,
        Err(e) => return Ok(Prepared::Immediate(Err(e))),
    };
    // Step 12: every x-mcp-header declaration must be mirrored faithfully.
    check_param_headers(req.headers, &entry.param_headers, &Value::Object(arguments.clone()))?;

    let (ctx, notifications, finisher) = match start_call(&req, "tools/call", &name) {
        Ok(started) => started,
        Err(e) => return Ok(Prepared::Immediate(Err(e))),
    };
    if let Err(problem) = check_arguments(&entry.def.input_schema, &arguments) {
        return Ok(Prepared::Immediate(finisher.finish(CallToolResult::error(problem).into(), None)));
    }
    let future = async move {
        let outcome = (entry.run)(ToolCall { arguments, ctx }).await?;
        finisher.finish(outcome, None)
    }
    .boxed();
    Ok(Prepared::Call { future, notifications })
}
