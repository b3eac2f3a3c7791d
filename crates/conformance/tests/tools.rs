//! Tool fixtures over real HTTP: content block types, execution errors, structured output,
//! schema passthrough, progress on SSE, logs only on request, the capability gate and
//! `x-mcp-header` validation.

#![allow(clippy::unwrap_used)] // in a test, a panic at the failing line is the report we want

mod common;

use common::{rpc, standard_headers, start};
use http::StatusCode;
use serde_json::{Value, json};

#[tokio::test]
async fn every_content_block_type_keeps_its_wire_shape() {
    let fixture = start().await;
    let image = fixture.call_tool("test_image_content", json!({})).await;
    let block = &image.result()["content"][0];
    assert_eq!((block["type"].as_str(), block["mimeType"].as_str()), (Some("image"), Some("image/png")));
    assert_eq!(block["data"], mcp_fleet_conformance::PNG_BASE64);

    let audio = fixture.call_tool("test_audio_content", json!({})).await;
    let block = &audio.result()["content"][0];
    assert_eq!((block["type"].as_str(), block["mimeType"].as_str()), (Some("audio"), Some("audio/wav")));

    let embedded = fixture.call_tool("test_embedded_resource", json!({})).await;
    let resource = &embedded.result()["content"][0];
    assert_eq!(resource["type"], "resource");
    assert_eq!(
        resource["resource"],
        json!({"uri": "test://embedded-resource", "mimeType": "text/plain", "text": "This is an embedded resource content."})
    );

    let mixed = fixture.call_tool("test_multiple_content_types", json!({})).await;
    let types: Vec<&str> =
        mixed.result()["content"].as_array().unwrap().iter().filter_map(|b| b["type"].as_str()).collect();
    assert_eq!(types, ["text", "image", "resource"]);
}

#[tokio::test]
async fn a_call_without_arguments_succeeds_and_is_complete() {
    let fixture = start().await;
    let reply = fixture.request("tools/call", json!({"name": "test_simple_text"})).await;
    assert_eq!(reply.status, StatusCode::OK);
    let result = reply.result();
    assert_eq!(result["resultType"], "complete");
    assert_eq!(result["content"], json!([{"type": "text", "text": "This is a simple text response for testing."}]));
    assert!(result["_meta"]["io.modelcontextprotocol/serverInfo"]["version"].is_string());
}

#[tokio::test]
async fn an_execution_error_is_a_result_with_is_error() {
    let fixture = start().await;
    let reply = fixture.call_tool("test_error_handling", json!({})).await;
    let result = reply.result();
    assert_eq!(result["isError"], true);
    assert!(!result["content"][0]["text"].as_str().unwrap().is_empty());
}

#[tokio::test]
async fn structured_content_conforms_to_the_output_schema_and_is_repeated_as_text() {
    let fixture = start().await;
    let list = fixture.request("tools/list", json!({})).await;
    let tool = find_tool(list.result(), "test_structured_content");
    assert_eq!(tool["outputSchema"]["required"], json!(["temperature", "conditions"]));

    let reply = fixture.call_tool("test_structured_content", json!({})).await;
    let result = reply.result();
    let structured = &result["structuredContent"];
    assert!(structured["temperature"].is_number() && structured["conditions"].is_string());
    let text: Value = serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(&text, structured);
}

#[tokio::test]
async fn a_json_schema_2020_12_input_schema_is_listed_untouched() {
    let fixture = start().await;
    let list = fixture.request("tools/list", json!({})).await;
    let tools = list.result()["tools"].as_array().unwrap();
    assert_eq!(tools[0]["name"], "test_simple_text", "the suite relies on this tool being first");
    let schema = &find_tool(list.result(), "json_schema_2020_12_tool")["inputSchema"];
    assert_eq!(schema["$schema"], "https://json-schema.org/draft/2020-12/schema");
    assert_eq!(schema["$defs"]["address"]["$anchor"], "addressDef");
    assert_eq!(schema["properties"]["address"], json!({"$ref": "#/$defs/address"}));
    assert_eq!(schema["allOf"][0]["anyOf"], json!([{"required": ["phone"]}, {"required": ["email"]}]));
    assert_eq!((&schema["then"], &schema["else"]), (&json!({"required": ["phone"]}), &json!({"required": ["email"]})));
    assert!(schema["if"].is_object());
    assert_eq!(schema["additionalProperties"], false);
}

#[tokio::test]
async fn progress_notifications_precede_the_result_on_the_sse_response() {
    let fixture = start().await;
    let params = json!({"name": "test_tool_with_progress", "arguments": {}, "_meta": {"progressToken": "p-1"}});
    let reply = fixture.request("tools/call", params).await;
    assert!(reply.content_type.starts_with("text/event-stream"), "got {}", reply.content_type);
    let progress: Vec<f64> = reply
        .notifications("notifications/progress")
        .iter()
        .map(|n| {
            assert_eq!((&n["params"]["progressToken"], &n["params"]["total"]), (&json!("p-1"), &json!(100.0)));
            n["params"]["progress"].as_f64().unwrap()
        })
        .collect();
    assert_eq!(progress, [0.0, 50.0, 100.0]);
    assert!(reply.messages.last().unwrap().get("result").is_some(), "the result comes last");
}

#[tokio::test]
async fn without_a_progress_token_the_answer_is_plain_json() {
    let fixture = start().await;
    let reply = fixture.call_tool("test_tool_with_progress", json!({})).await;
    assert!(reply.content_type.starts_with("application/json"), "got {}", reply.content_type);
    assert_eq!(reply.messages.len(), 1);
}

#[tokio::test]
async fn log_messages_are_sent_only_when_the_request_asks_for_them() {
    let fixture = start().await;
    let quiet = fixture.call_tool("test_tool_with_logging", json!({})).await;
    assert!(quiet.notifications("notifications/message").is_empty());

    let params = json!({"name": "test_tool_with_logging", "_meta": {"io.modelcontextprotocol/logLevel": "info"}});
    let chatty = fixture.request("tools/call", params).await;
    let logs = chatty.notifications("notifications/message");
    assert_eq!(logs.len(), 3);
    assert!(logs.iter().all(|l| l["params"]["level"] == "info"));
}

#[tokio::test]
async fn a_missing_client_capability_is_refused_before_the_tool_runs() {
    let fixture = start().await;
    let params = json!({"name": "test_missing_capability", "arguments": {}});
    let refused = fixture.request_as("tools/call", params.clone(), json!({})).await;
    assert_eq!(refused.status, StatusCode::BAD_REQUEST);
    let error = refused.error();
    assert_eq!(error["code"], -32021);
    assert_eq!(error["data"]["requiredCapabilities"], json!({"sampling": {}}));

    let allowed = fixture.request_as("tools/call", params, json!({"sampling": {}})).await;
    assert_eq!(allowed.result()["resultType"], "complete");
}

#[tokio::test]
async fn an_x_mcp_header_parameter_must_be_mirrored_faithfully() {
    let fixture = start().await;
    let call = |header: Option<&str>| {
        let body = rpc("tools/call", json!({"name": "test_custom_header", "arguments": {"value": "Hello"}}), json!({}));
        let mut headers = standard_headers(&body);
        if let Some(value) = header {
            headers.push(("Mcp-Param-Value".into(), value.into()));
        }
        let fixture = &fixture;
        async move { fixture.post(&body, &headers).await }
    };
    for accepted in ["Hello", "=?base64?SGVsbG8=?="] {
        let reply = call(Some(accepted)).await;
        assert_eq!(reply.result()["content"][0]["text"], "Hello", "header {accepted:?}");
    }
    for refused in [Some("Goodbye"), Some("=?base64?SGVsbG8?="), None] {
        let reply = call(refused).await;
        assert_eq!(reply.status, StatusCode::BAD_REQUEST, "header {refused:?}");
        assert_eq!(reply.error()["code"], -32020, "header {refused:?}");
    }
}

fn find_tool<'a>(list: &'a Value, name: &str) -> &'a Value {
    list["tools"].as_array().unwrap().iter().find(|t| t["name"] == name).expect("tool listed")
}
