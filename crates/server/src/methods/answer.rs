//! [`CallResult`]: what a call (`tools/call`, `resources/read`, `prompts/get`, a task method)
//! answers with. Most results are built as a JSON map, which the 2025 era's conversion, the
//! tasks' store and the `input_required` round trip read. A complete 2026-07-28 `tools/call`
//! result — the hot path — is written out as JSON text straight from the handler's typed
//! result instead (see [`mcp_fleet_protocol::types::StampedToolResult`]): no map is built,
//! stamped, serialised and dropped per call.

use mcp_fleet_protocol::jsonrpc::{encode_result, encode_written_result};
use mcp_fleet_protocol::{RequestId, RpcError};
use serde_json::Value;

/// A call's result object (already stamped).
#[derive(Debug)]
pub(crate) enum CallResult {
    /// Built as a map.
    Value(Value),
    /// A complete `tools/call` result, written as JSON text.
    Written {
        /// The result object's JSON text.
        json: Vec<u8>,
        /// Its `isError`.
        is_error: bool,
    },
}

impl CallResult {
    /// The response carrying this result.
    pub(crate) fn encode_response(&self, id: &RequestId) -> Vec<u8> {
        match self {
            CallResult::Value(value) => encode_result(id, value),
            CallResult::Written { json, .. } => encode_written_result(id, json),
        }
    }

    /// The result as a map (read back when it was written: no path that needs a map gets a
    /// written result, see `Finisher::finish_tool_call`).
    pub(crate) fn into_value(self) -> Value {
        match self {
            CallResult::Value(value) => value,
            // Our own serialisation of an object: it reads back.
            CallResult::Written { json, .. } => serde_json::from_slice(&json).unwrap_or(Value::Null),
        }
    }

    /// Whether it is a tool result reporting an execution error (`isError: true`).
    pub(crate) fn is_tool_error(&self) -> bool {
        match self {
            CallResult::Value(value) => value.get("isError") == Some(&Value::Bool(true)),
            CallResult::Written { is_error, .. } => *is_error,
        }
    }
}

/// How the audit trail records `answer`: a written result is a complete tool result.
pub(crate) fn audit_ending(answer: Result<&CallResult, &RpcError>) -> crate::audit::Ending {
    use crate::audit::Ending;
    match answer {
        Ok(CallResult::Value(value)) => Ending::of(Ok(value)),
        Ok(written @ CallResult::Written { .. }) => Ending::complete(written.is_tool_error()),
        Err(error) => Ending::of(Err(error)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_fleet_protocol::types::{CallToolResult, StampedToolResult};

    #[test]
    fn a_written_result_answers_as_its_map_does() {
        let info = serde_json::json!({"name": "s", "version": "1"});
        let result = CallToolResult::error("no");
        let json = serde_json::to_vec(&StampedToolResult { result: &result, server_info: &info }).unwrap();
        let written = CallResult::Written { json, is_error: true };
        let id = RequestId::Number(7.into());
        let response: Value = serde_json::from_slice(&written.encode_response(&id)).unwrap();
        assert_eq!(response["id"], 7);
        assert!(written.is_tool_error());
        assert_eq!(written.into_value(), response["result"]);
        assert_eq!(response["result"]["isError"], true);
    }
}
