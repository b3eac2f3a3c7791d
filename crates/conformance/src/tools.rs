//! The tool fixtures that answer in one round: content types, execution errors, progress and
//! logging, the capability-gated tool, schema and header passthrough, and the change triggers.
//! The MRTR tools live in `mrtr`.

use std::time::Duration;

use mcp_fleet_server::LogLevel;
use mcp_fleet_server::RpcError;
use mcp_fleet_server::types::{CallToolResult, Content, ResourceContents, Tool};
use mcp_fleet_server::{InputRequired, McpServer, Notifier, Outcome, ServerError, catalog::ToolCall};
use serde_json::{Value, json};

use crate::{PNG_BASE64, WAV_BASE64};

/// Pause between the steps of the progress and logging tools, so the notifications are
/// visibly spread over the call.
const STEP: Duration = Duration::from_millis(50);

pub(crate) fn register(server: &McpServer) -> Result<(), ServerError> {
    register_content(server);
    register_streaming(server)?;
    register_schemas(server);
    Ok(())
}

/// One tool per content block type, plus an execution error and structured output.
fn register_content(server: &McpServer) {
    // The suite calls the first listed tool with `{}` in its header probes: keep it first.
    // Title, icon and `_meta` on the definition and the result: checked by the wire schema.
    let simple = Tool::new("test_simple_text", "Returns a simple text response")
        .title("Simple text")
        .icon(crate::icon())
        .meta("example.com/fixture", json!(true));
    server.tool(simple, |_call| async {
        let mut result = CallToolResult::text("This is a simple text response for testing.");
        result.meta = Some(serde_json::Map::from_iter([("example.com/fixture".to_owned(), json!(true))]));
        Ok(result)
    });
    server.tool(Tool::new("test_image_content", "Returns a 1x1 PNG image"), |_call| async { Ok(result(vec![png()])) });
    server.tool(Tool::new("test_audio_content", "Returns a short WAV clip"), |_call| async {
        Ok(result(vec![Content::Audio { data: WAV_BASE64.into(), mime_type: "audio/wav".into() }]))
    });
    server.tool(Tool::new("test_embedded_resource", "Returns an embedded text resource"), |_call| async {
        let resource =
            ResourceContents::text("test://embedded-resource", "text/plain", "This is an embedded resource content.");
        Ok(result(vec![Content::Resource { resource }]))
    });
    server.tool(Tool::new("test_multiple_content_types", "Returns text, an image and a resource"), |_call| async {
        let resource = ResourceContents::text(
            "test://mixed-content-resource",
            "application/json",
            r#"{"test":"data","value":123}"#,
        );
        Ok(result(vec![Content::text("Multiple content types test:"), png(), Content::Resource { resource }]))
    });
    // An execution error is a result with `isError: true`, not a JSON-RPC error (TOOL-10).
    server.tool(Tool::new("test_error_handling", "Always fails, as an execution error"), |_call| async {
        Ok(CallToolResult::error("This tool intentionally returns an error for testing"))
    });
    // Not a suite fixture: the structured-output example (TOOL-9: structuredContent conforms
    // to outputSchema, and its JSON serialisation is repeated as a text block).
    let weather = Tool::new("test_structured_content", "Returns structured weather data").output_schema(json!({
        "type": "object",
        "properties": {"temperature": {"type": "number"}, "conditions": {"type": "string"}},
        "required": ["temperature", "conditions"]
    }));
    server.tool(weather, |_call| async {
        let data = json!({"temperature": 22.5, "conditions": "Partly cloudy"});
        Ok(CallToolResult::structured(data))
    });
}

/// Tools that talk while they work, and the one that needs a client capability.
fn register_streaming(server: &McpServer) -> Result<(), ServerError> {
    // Progress goes out only if the request carried a progress token; the first notification
    // switches the response to SSE.
    server.tool(Tool::new("test_tool_with_progress", "Reports progress 0, 50, 100 of 100"), |call| async move {
        for (i, progress) in [0.0, 50.0, 100.0].into_iter().enumerate() {
            if i > 0 {
                tokio::time::sleep(STEP).await;
            }
            call.ctx.progress(progress, Some(100.0), None).await;
        }
        Ok(CallToolResult::text("Progress complete"))
    });
    // Log messages are sent only when the request opted in with a log level (L-2).
    server.tool(Tool::new("test_tool_with_logging", "Logs three info messages while it runs"), |call| async move {
        for (i, message) in
            ["Tool execution started", "Tool processing data", "Tool execution completed"].into_iter().enumerate()
        {
            if i > 0 {
                tokio::time::sleep(STEP).await;
            }
            call.ctx.log(LogLevel::Info, Some("test_tool_with_logging"), json!(message)).await;
        }
        Ok(CallToolResult::text("Logging complete"))
    });
    server.tool(
        Tool::new("test_logging_tool", "Logs one info message, if the request asked for logs"),
        |call| async move {
            call.ctx.log(LogLevel::Info, Some("test_logging_tool"), json!("Logging tool called")).await;
            Ok(CallToolResult::text("Logging tool complete"))
        },
    );
    // Declared requirement: a client without `sampling` gets 400 -32021 before this runs.
    server.try_tool(
        Tool::new("test_missing_capability", "Requires the client's sampling capability"),
        Some(json!({"sampling": {}})),
        |_call| async { Ok(CallToolResult::text("The client declared sampling")) },
    )?;
    server.tool(
        Tool::new("test_streaming_elicitation", "Asks for a name through MRTR elicitation, never a stream request"),
        streaming_elicitation,
    );
    Ok(())
}

/// Elicitation without a server→client request on the stream: an `input_required` result
/// when the client can elicit (MRTR-3), a plain result otherwise or once answered.
async fn streaming_elicitation(call: ToolCall) -> Result<Outcome<CallToolResult>, RpcError> {
    if let Some(answer) = call.ctx.input_responses.as_ref().and_then(|r| r.get("user_name")) {
        let name = answer.pointer("/content/name").and_then(Value::as_str).unwrap_or("stranger");
        return Ok(CallToolResult::text(format!("Hello, {name}!")).into());
    }
    if call.ctx.meta.missing_capabilities(&json!({"elicitation": {}})).is_some() {
        return Ok(CallToolResult::text("The client cannot elicit; nothing to ask").into());
    }
    let ask = crate::mrtr::elicit("What is your name?", "name", "string");
    Ok(Outcome::InputRequired(InputRequired::new().request("user_name", "elicitation/create", ask)))
}

/// Schemas the framework must pass through untouched, and an `x-mcp-header` parameter.
fn register_schemas(server: &McpServer) {
    let schema = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {"address": {"$anchor": "addressDef", "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}}}},
        "properties": {
            "name": {"type": "string"},
            "address": {"$ref": "#/$defs/address"},
            "contactMethod": {"type": "string", "enum": ["phone", "email"]},
            "phone": {"type": "string"},
            "email": {"type": "string"}
        },
        "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
        "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
        "then": {"required": ["phone"]},
        "else": {"required": ["email"]},
        "additionalProperties": false
    });
    let tool = Tool::new("json_schema_2020_12_tool", "Takes a JSON Schema 2020-12 input schema").input_schema(schema);
    server.tool(tool, |call| async move {
        Ok(CallToolResult::text(format!("Received: {}", Value::Object(call.arguments))))
    });
    // `x-mcp-header`: clients mirror `value` into `Mcp-Param-Value`; the framework refuses a
    // call whose header and argument disagree (400 -32020) before this runs.
    let tool = Tool::new("test_custom_header", "Echoes a value that is mirrored into the Mcp-Param-Value header")
        .input_schema(json!({
            "type": "object",
            "properties": {"value": {"type": "string", "x-mcp-header": "Value"}},
            "required": ["value"]
        }));
    server.tool(tool, |call| async move {
        let value = call.arguments.get("value").and_then(Value::as_str).unwrap_or_default();
        Ok(CallToolResult::text(value))
    });
}

/// Register `test_trigger_tool_change` and `test_trigger_prompt_change`: each publishes a
/// list-changed event through `notify` — on the shared bus, so listen streams on every
/// replica hear it — and answers once the bus accepted it.
pub fn register_change_triggers(server: &McpServer, notify: Notifier) {
    let tools = notify.clone();
    server.tool(Tool::new("test_trigger_tool_change", "Announces that the tool list changed"), move |_call| {
        let notify = tools.clone();
        async move {
            notify.tools_changed().await.map_err(|e| RpcError::internal(e.to_string()))?;
            Ok(CallToolResult::text("Published notifications/tools/list_changed"))
        }
    });
    server.tool(Tool::new("test_trigger_prompt_change", "Announces that the prompt list changed"), move |_call| {
        let notify = notify.clone();
        async move {
            notify.prompts_changed().await.map_err(|e| RpcError::internal(e.to_string()))?;
            Ok(CallToolResult::text("Published notifications/prompts/list_changed"))
        }
    });
}

fn png() -> Content {
    Content::Image { data: PNG_BASE64.into(), mime_type: "image/png".into() }
}

fn result(content: Vec<Content>) -> CallToolResult {
    CallToolResult { content, ..CallToolResult::default() }
}
