//! Multi round-trip requests over real HTTP: each round is a separate POST carrying the
//! previous round's answers and (signed) `requestState`.

#![allow(clippy::unwrap_used)] // in a test, a panic at the failing line is the report we want

mod common;

use common::{Fixture, start};
use serde_json::{Value, json};

/// Call `tool` with `extra` params (`inputResponses`, `requestState`) merged in.
async fn round(fixture: &Fixture, tool: &str, extra: Value) -> Value {
    let mut params = json!({"name": tool, "arguments": {}});
    params.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    fixture.request("tools/call", params).await.response().clone()
}

fn accept(content: Value) -> Value {
    json!({"action": "accept", "content": content})
}

#[tokio::test]
async fn elicitation_completes_without_request_state() {
    let fixture = start().await;
    let first = round(&fixture, "test_input_required_result_elicitation", json!({})).await;
    assert_eq!(first["result"]["resultType"], "input_required");
    assert_eq!(first["result"]["inputRequests"]["user_name"]["method"], "elicitation/create");

    let answer = json!({"inputResponses": {"user_name": accept(json!({"name": "Alice"})), "unrelated": {}}});
    let second = round(&fixture, "test_input_required_result_elicitation", answer).await;
    assert_eq!(second["result"]["resultType"], "complete");
    assert_eq!(second["result"]["content"][0]["text"], "Hello, Alice!");

    let wrong_key = json!({"inputResponses": {"wrong_key": accept(json!({}))}});
    let again = round(&fixture, "test_input_required_result_elicitation", wrong_key).await;
    assert_eq!(again["result"]["resultType"], "input_required", "a missing answer is asked again");
}

#[tokio::test]
async fn malformed_input_responses_are_refused() {
    let fixture = start().await;
    for responses in [json!({"user_name": 12345}), Value::Null] {
        let reply =
            round(&fixture, "test_input_required_result_elicitation", json!({"inputResponses": responses})).await;
        assert_eq!(reply["error"]["code"], -32602, "inputResponses {responses}");
    }
}

#[tokio::test]
async fn multi_round_issues_a_new_state_each_round() {
    let fixture = start().await;
    let tool = "test_input_required_result_multi_round";
    let first = round(&fixture, tool, json!({})).await;
    let state1 = first["result"]["requestState"].as_str().unwrap().to_owned();

    let second = round(
        &fixture,
        tool,
        json!({"inputResponses": {"step1": accept(json!({"name": "Alice"}))}, "requestState": state1}),
    )
    .await;
    assert_eq!(second["result"]["inputRequests"]["step2"]["method"], "elicitation/create");
    let state2 = second["result"]["requestState"].as_str().unwrap().to_owned();
    assert_ne!(state1, state2);

    let third = round(
        &fixture,
        tool,
        json!({"inputResponses": {"step2": accept(json!({"color": "blue"}))}, "requestState": state2}),
    )
    .await;
    assert_eq!(third["result"]["content"][0]["text"], "Hello Alice, your favorite color is blue.");
}

#[tokio::test]
async fn signed_state_completes_and_tampered_state_is_a_json_rpc_error() {
    let fixture = start().await;
    let tool = "test_input_required_result_tampered_state";
    let first = round(&fixture, tool, json!({})).await;
    let state = first["result"]["requestState"].as_str().unwrap().to_owned();
    let confirm = json!({"confirm": accept(json!({"ok": true}))});

    let tampered =
        round(&fixture, tool, json!({"inputResponses": confirm, "requestState": format!("{state}-TAMPERED")})).await;
    assert_eq!(tampered["error"]["code"], -32602);
    assert!(tampered.get("result").is_none());

    let valid = round(&fixture, tool, json!({"inputResponses": confirm, "requestState": state})).await;
    assert_eq!(valid["result"]["resultType"], "complete");

    let state_tool = "test_input_required_result_request_state";
    let first = round(&fixture, state_tool, json!({})).await;
    let state = first["result"]["requestState"].clone();
    let done = round(&fixture, state_tool, json!({"inputResponses": confirm, "requestState": state})).await;
    assert!(done["result"]["content"][0]["text"].as_str().unwrap().contains("state-ok"));
}

#[tokio::test]
async fn the_capability_tool_asks_only_what_the_client_declared() {
    let fixture = start().await;
    let params = json!({"name": "test_input_required_result_capabilities", "arguments": {}});
    let keys = |reply: &Value| -> Vec<String> {
        reply["result"]["inputRequests"].as_object().map(|m| m.keys().cloned().collect()).unwrap_or_default()
    };

    let sampling_only = fixture.request_as("tools/call", params.clone(), json!({"sampling": {}})).await;
    assert_eq!(sampling_only.result()["resultType"], "input_required");
    assert_eq!(keys(sampling_only.response()), ["sample_input"]);

    let both = fixture.request("tools/call", params.clone()).await;
    assert_eq!(keys(both.response()), ["elicit_input", "sample_input"]);

    let none = fixture.request_as("tools/call", params, json!({})).await;
    assert_eq!(none.result()["resultType"], "complete");
}

#[tokio::test]
async fn a_prompt_can_require_input_too() {
    let fixture = start().await;
    let name = "test_input_required_result_prompt";
    let first = fixture.request("prompts/get", json!({"name": name})).await;
    assert_eq!(first.result()["inputRequests"]["user_context"]["method"], "elicitation/create");

    let answer = json!({"user_context": accept(json!({"context": "testing"}))});
    let second = fixture.request("prompts/get", json!({"name": name, "inputResponses": answer})).await;
    assert_eq!(second.result()["messages"][0]["content"]["text"], "Prompt with context: testing");
}

#[tokio::test]
async fn list_methods_never_require_input() {
    let fixture = start().await;
    for method in ["tools/list", "prompts/list"] {
        assert_eq!(fixture.request(method, json!({})).await.result()["resultType"], "complete", "{method}");
    }
}
