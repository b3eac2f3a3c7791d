//! The 2025-11-25 fixtures that ask the client for input while a tool runs: `test_sampling`,
//! `test_elicitation`, `test_elicitation_sep1034_defaults` and
//! `test_elicitation_sep1330_enums` (scenarios `tools-call-sampling`,
//! `tools-call-elicitation`, `elicitation-sep1034-defaults`, `elicitation-sep1330-enums`).
//!
//! Each is written once, with MRTR: round 1 answers `input_required` with one input request,
//! the retry (its `inputResponses` under the same key) completes. A 2026-07-28 client sees
//! exactly that; for a 2025 session the framework sends the input request to the client as a
//! server→client JSON-RPC request on the call's SSE stream and re-runs the handler with the
//! answer. Parameters and schemas are the ones the suite checks (its `dist/index.js`); the
//! framework refuses a request whose client lacks the capability with `-32021` (MRTR-3),
//! which is the error the scenarios ask for.

use mcp_fleet_server::RpcError;
use mcp_fleet_server::types::{CallToolResult, Tool};
use mcp_fleet_server::{InputRequired, McpServer, Outcome, catalog::ToolCall};
use serde_json::{Value, json};

use crate::mrtr::{response, sample, sampled_text};

type ToolOutcome = Result<Outcome<CallToolResult>, RpcError>;

pub(crate) fn register(server: &McpServer) {
    let tool =
        Tool::new("test_sampling", "Asks the client's model to answer a prompt (sampling)").input_schema(json!({
            "type": "object",
            "properties": {"prompt": {"type": "string", "description": "The prompt to send to the model"}},
            "required": ["prompt"]
        }));
    server.tool(tool, |call| async move { sampling(&call) });
    let tool = Tool::new("test_elicitation", "Asks the user for a username and an email address (elicitation)")
        .input_schema(json!({
            "type": "object",
            "properties": {"message": {"type": "string", "description": "The message to show the user"}},
            "required": ["message"]
        }));
    server.tool(tool, |call| async move { elicitation(&call) });
    let tool =
        Tool::new("test_elicitation_sep1034_defaults", "Elicits a form whose fields all have defaults (SEP-1034)");
    server.tool(tool, |call| async move {
        let message = "Please review your profile; every field has a default";
        let params = json!({"message": message, "requestedSchema": defaults_schema()});
        elicit_form(&call, "profile", params)
    });
    let tool = Tool::new("test_elicitation_sep1330_enums", "Elicits all five enum field variants (SEP-1330)");
    server.tool(tool, |call| async move {
        let params = json!({"message": "Please choose from each list", "requestedSchema": enums_schema()});
        elicit_form(&call, "choices", params)
    });
}

/// `sampling/createMessage` with the prompt as one user message and `maxTokens: 100`.
fn sampling(call: &ToolCall) -> ToolOutcome {
    match response(&call.ctx, "llm_response") {
        Some(answer) => Ok(CallToolResult::text(format!("LLM response: {}", sampled_text(answer))).into()),
        None => {
            let prompt = argument(call, "prompt");
            Ok(Outcome::InputRequired(InputRequired::new().request(
                "llm_response",
                "sampling/createMessage",
                sample(prompt, 100),
            )))
        }
    }
}

/// `elicitation/create` with the caller's message and a required username and email.
fn elicitation(call: &ToolCall) -> ToolOutcome {
    let Some(answer) = response(&call.ctx, "user_info") else {
        let params = json!({
            "message": argument(call, "message"),
            "requestedSchema": {
                "type": "object",
                "properties": {
                    "username": {"type": "string", "description": "User's response"},
                    "email": {"type": "string", "description": "User's email address"}
                },
                "required": ["username", "email"]
            }
        });
        return Ok(Outcome::InputRequired(InputRequired::new().request("user_info", "elicitation/create", params)));
    };
    Ok(CallToolResult::text(format!("User response: {}", describe(answer))).into())
}

/// Ask `params` under `key`; once answered, report the action and content.
fn elicit_form(call: &ToolCall, key: &str, params: Value) -> ToolOutcome {
    match response(&call.ctx, key) {
        Some(answer) => Ok(CallToolResult::text(format!("Elicitation completed: {}", describe(answer))).into()),
        None => Ok(Outcome::InputRequired(InputRequired::new().request(key, "elicitation/create", params))),
    }
}

/// SEP-1034: a default for every primitive type — string, integer, number, enum, boolean.
fn defaults_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "User name", "default": "John Doe"},
            "age": {"type": "integer", "description": "User age", "default": 30},
            "score": {"type": "number", "description": "User score", "default": 95.5},
            "status": {
                "type": "string",
                "description": "User status",
                "enum": ["active", "inactive", "pending"],
                "default": "active"
            },
            "verified": {"type": "boolean", "description": "Verification status", "default": true}
        }
    })
}

/// SEP-1330: untitled and titled single-select, the legacy `enumNames` form, and untitled and
/// titled multi-select. The suite checks each variant uses only its own keywords (no `oneOf`
/// or `enumNames` on the untitled one, no `enum` beside `oneOf`, no `items.enum` beside
/// `items.anyOf`).
fn enums_schema() -> Value {
    let titled = |choices: [&str; 3]| -> Value {
        choices
            .iter()
            .enumerate()
            .map(|(i, title)| json!({"const": format!("value{}", i + 1), "title": title}))
            .collect()
    };
    json!({
        "type": "object",
        "properties": {
            "untitledSingle": {
                "type": "string",
                "description": "Pick one option",
                "enum": ["option1", "option2", "option3"]
            },
            "titledSingle": {
                "type": "string",
                "description": "Pick one titled option",
                "oneOf": titled(["First Option", "Second Option", "Third Option"])
            },
            "legacyEnum": {
                "type": "string",
                "description": "Pick one option (legacy titles)",
                "enum": ["opt1", "opt2", "opt3"],
                "enumNames": ["Option One", "Option Two", "Option Three"]
            },
            "untitledMulti": {
                "type": "array",
                "description": "Pick any options",
                "items": {"type": "string", "enum": ["option1", "option2", "option3"]}
            },
            "titledMulti": {
                "type": "array",
                "description": "Pick any titled options",
                "items": {"anyOf": titled(["First Choice", "Second Choice", "Third Choice"])}
            }
        }
    })
}

/// `action=<action>, content=<json>` of an elicitation result (`{}` when declined or
/// cancelled, which carry no content).
fn describe(answer: &Value) -> String {
    let action = answer.get("action").and_then(Value::as_str).unwrap_or("unknown");
    let content = answer.get("content").cloned().unwrap_or_else(|| json!({}));
    format!("action={action}, content={content}")
}

/// A required string argument; the framework checked it against the input schema.
fn argument<'a>(call: &'a ToolCall, name: &str) -> &'a str {
    call.arguments.get(name).and_then(Value::as_str).unwrap_or_default()
}
