//! The 2025-11-25 sampling and elicitation fixtures at the 2026-07-28 wire: round 1 answers
//! `input_required` with exactly the request the 2025 suite checks (the framework relays it
//! to 2025 clients as a server→client request), the retry with the answer completes.

#![allow(clippy::unwrap_used)] // in a test, a panic at the failing line is the report we want

mod common;

use common::{Fixture, start};
use serde_json::{Value, json};

/// `tools/call tool arguments` with `extra` params (`inputResponses`) merged in.
async fn round(fixture: &Fixture, tool: &str, arguments: Value, extra: Value) -> Value {
    let mut params = json!({"name": tool, "arguments": arguments});
    params.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    fixture.request("tools/call", params).await.result().clone()
}

/// The single input request of an `input_required` result: its key and the request.
fn only_request(result: &Value) -> (String, Value) {
    assert_eq!(result["resultType"], "input_required", "{result}");
    let requests = result["inputRequests"].as_object().unwrap();
    assert_eq!(requests.len(), 1, "{result}");
    let (key, request) = requests.iter().next().unwrap();
    (key.clone(), request.clone())
}

fn text(result: &Value) -> &str {
    assert_eq!(result["resultType"], "complete", "{result}");
    result["content"][0]["text"].as_str().unwrap()
}

#[tokio::test]
async fn sampling_asks_the_model_the_prompt_and_returns_its_answer() {
    let fixture = start().await;
    let arguments = json!({"prompt": "Test prompt for sampling"});
    let first = round(&fixture, "test_sampling", arguments.clone(), json!({})).await;
    let (key, request) = only_request(&first);
    assert_eq!(
        request,
        json!({"method": "sampling/createMessage", "params": {
            "messages": [{"role": "user", "content": {"type": "text", "text": "Test prompt for sampling"}}],
            "maxTokens": 100
        }})
    );

    let content = json!({"type": "text", "text": "This is a test response from the client"});
    let answer = json!({"role": "assistant", "content": content, "model": "test-model", "stopReason": "endTurn"});
    let second = round(&fixture, "test_sampling", arguments.clone(), json!({"inputResponses": {&key: answer}})).await;
    assert_eq!(text(&second), "LLM response: This is a test response from the client");

    // 2025-11-25 also allows an array of content blocks: the first text block is the answer.
    let blocks = json!([{"type": "image", "data": "", "mimeType": "image/png"}, {"type": "text", "text": "Paris"}]);
    let answer = json!({"role": "assistant", "content": blocks, "model": "test-model"});
    let third = round(&fixture, "test_sampling", arguments, json!({"inputResponses": {key: answer}})).await;
    assert_eq!(text(&third), "LLM response: Paris");
}

#[tokio::test]
async fn sampling_needs_the_sampling_capability() {
    let fixture = start().await;
    let params = json!({"name": "test_sampling", "arguments": {"prompt": "hi"}});
    let refused = fixture.request_as("tools/call", params, json!({"elicitation": {}})).await;
    assert_eq!(refused.error()["code"], -32021);
    assert_eq!(refused.error()["data"]["requiredCapabilities"], json!({"sampling": {}}));
}

#[tokio::test]
async fn elicitation_asks_for_username_and_email_and_reports_the_answer() {
    let fixture = start().await;
    let arguments = json!({"message": "Please provide your information"});
    let first = round(&fixture, "test_elicitation", arguments.clone(), json!({})).await;
    let (key, request) = only_request(&first);
    assert_eq!(request["method"], "elicitation/create");
    assert_eq!(request["params"]["message"], "Please provide your information");
    let schema = &request["params"]["requestedSchema"];
    assert_eq!(schema["type"], "object");
    assert_eq!(
        (&schema["properties"]["username"]["type"], &schema["properties"]["email"]["type"]),
        (&json!("string"), &json!("string"))
    );
    assert_eq!(schema["required"], json!(["username", "email"]));

    let content = json!({"username": "testuser", "email": "test@example.com"});
    let answer = json!({"inputResponses": {&key: {"action": "accept", "content": content}}});
    let second = round(&fixture, "test_elicitation", arguments.clone(), answer).await;
    let reported = text(&second).strip_prefix("User response: action=accept, content=").unwrap();
    assert_eq!(serde_json::from_str::<Value>(reported).unwrap(), content);

    let declined =
        round(&fixture, "test_elicitation", arguments, json!({"inputResponses": {key: {"action": "decline"}}})).await;
    assert_eq!(text(&declined), "User response: action=decline, content={}");
}

/// Round 1 of an elicitation fixture without arguments: its input request key and the
/// `properties` of the schema it asks for.
async fn elicited_properties(fixture: &Fixture, tool: &str) -> (String, Value) {
    let first = round(fixture, tool, json!({}), json!({})).await;
    let (key, request) = only_request(&first);
    assert_eq!(request["method"], "elicitation/create");
    (key, request["params"]["requestedSchema"]["properties"].clone())
}

/// Round 2: accept with `content`; the fixture reports action and content.
async fn accept_and_report(fixture: &Fixture, tool: &str, key: &str, content: Value) {
    let answer = json!({"inputResponses": {key: {"action": "accept", "content": content}}});
    let second = round(fixture, tool, json!({}), answer).await;
    let reported = text(&second).strip_prefix("Elicitation completed: action=accept, content=").unwrap();
    assert_eq!(serde_json::from_str::<Value>(reported).unwrap(), content);
}

#[tokio::test]
async fn sep1034_every_primitive_field_has_its_default() {
    let fixture = start().await;
    let tool = "test_elicitation_sep1034_defaults";
    let (key, properties) = elicited_properties(&fixture, tool).await;
    let field = |name: &str| (properties[name]["type"].clone(), properties[name]["default"].clone());
    assert_eq!(field("name"), (json!("string"), json!("John Doe")));
    assert_eq!(field("age"), (json!("integer"), json!(30)));
    assert_eq!(field("score"), (json!("number"), json!(95.5)));
    assert_eq!(field("status"), (json!("string"), json!("active")));
    assert_eq!(properties["status"]["enum"], json!(["active", "inactive", "pending"]));
    assert_eq!(field("verified"), (json!("boolean"), json!(true)));

    let content = json!({"name": "Jane Smith", "age": 25, "score": 88, "status": "inactive", "verified": false});
    accept_and_report(&fixture, tool, &key, content).await;
}

#[tokio::test]
async fn sep1330_each_enum_variant_uses_only_its_own_keywords() {
    let fixture = start().await;
    let tool = "test_elicitation_sep1330_enums";
    let (key, p) = elicited_properties(&fixture, tool).await;
    let titled = |value: &Value| {
        let options = value.as_array().unwrap();
        assert!(
            !options.is_empty() && options.iter().all(|o| o["const"].is_string() && o["title"].is_string()),
            "{value}"
        );
    };

    assert_eq!((&p["untitledSingle"]["type"], p["untitledSingle"]["enum"].is_array()), (&json!("string"), true));
    assert!(p["untitledSingle"].get("oneOf").is_none() && p["untitledSingle"].get("enumNames").is_none());

    assert_eq!(p["titledSingle"]["type"], "string");
    titled(&p["titledSingle"]["oneOf"]);
    assert!(p["titledSingle"].get("enum").is_none());

    assert_eq!(p["legacyEnum"]["type"], "string");
    assert_eq!(
        p["legacyEnum"]["enum"].as_array().unwrap().len(),
        p["legacyEnum"]["enumNames"].as_array().unwrap().len()
    );

    assert_eq!(
        (&p["untitledMulti"]["type"], &p["untitledMulti"]["items"]["type"]),
        (&json!("array"), &json!("string"))
    );
    assert!(p["untitledMulti"]["items"]["enum"].is_array() && p["untitledMulti"]["items"].get("anyOf").is_none());

    assert_eq!(p["titledMulti"]["type"], "array");
    titled(&p["titledMulti"]["items"]["anyOf"]);
    assert!(p["titledMulti"]["items"].get("enum").is_none());

    let content = json!({"untitledSingle": "option1", "titledSingle": "value1", "legacyEnum": "opt1",
        "untitledMulti": ["option1", "option2"], "titledMulti": ["value1", "value2"]});
    accept_and_report(&fixture, tool, &key, content).await;
}

#[tokio::test]
async fn the_new_tools_are_listed_with_descriptions_and_object_schemas() {
    // (That `test_simple_text` stays first is checked in tests/tools.rs.)
    let fixture = start().await;
    let list = fixture.request("tools/list", json!({})).await;
    let tools = list.result()["tools"].as_array().unwrap();
    for name in
        ["test_sampling", "test_elicitation", "test_elicitation_sep1034_defaults", "test_elicitation_sep1330_enums"]
    {
        let tool = tools.iter().find(|t| t["name"] == name).unwrap_or_else(|| panic!("{name} listed"));
        assert!(tool["description"].as_str().is_some_and(|d| !d.is_empty()), "{name}");
        assert_eq!(tool["inputSchema"]["type"], "object", "{name}");
    }
}
