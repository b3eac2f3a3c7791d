//! `events/list` and `events/poll` (the events extension, cargo feature `events`): the params
//! read, the answer left to the node's [`EventsRuntime`](crate::events::poll::EventsRuntime).

use mcp_fleet_protocol::types::PollEventsParams;
use mcp_fleet_protocol::{Method, RpcError};
use serde_json::Value;

use super::dispatch::{MethodRequest, Prepared};

/// Answer `events/list` at once; run `events/poll` (it may wait, a long poll).
pub(crate) fn prepare(req: &MethodRequest<'_>, method: Method) -> Result<Prepared, RpcError> {
    // Dispatch sends these methods here only when the handler serves the extension.
    let Some(runtime) = req.shared.events.clone() else { return Err(RpcError::method_not_found(&req.method)) };
    match method {
        Method::EventsList => {
            let cursor = match req.params.get("cursor") {
                None | Some(Value::Null) => None,
                Some(Value::String(cursor)) => Some(cursor.as_str()),
                Some(_) => return Err(RpcError::invalid_params("cursor must be a string").in_band()),
            };
            runtime.list(cursor).map(Prepared::Immediate)
        }
        _ => {
            let params: PollEventsParams = serde_json::from_value(Value::Object(req.params.clone()))
                .map_err(|e| RpcError::invalid_params(format!("invalid events/poll params: {e}")).in_band())?;
            let ctx = req.ctx.clone();
            Ok(Prepared::call(async move { runtime.poll(&ctx, params).await }, None))
        }
    }
}
