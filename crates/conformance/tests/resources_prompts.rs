//! Resource, prompt and completion fixtures over real HTTP.

#![allow(clippy::unwrap_used)] // in a test, a panic at the failing line is the report we want

mod common;

use common::start;
use http::StatusCode;
use serde_json::json;

#[tokio::test]
async fn static_text_is_listed_first_and_reads_as_text() {
    let fixture = start().await;
    let list = fixture.request("resources/list", json!({})).await;
    assert_eq!(list.result()["resources"][0]["uri"], "test://static-text");

    let read = fixture.request("resources/read", json!({"uri": "test://static-text"})).await;
    let result = read.result();
    assert_eq!(
        result["contents"],
        json!([{
            "uri": "test://static-text",
            "mimeType": "text/plain",
            "text": "This is the content of the static text resource.",
            "_meta": {"example.com/fixture": "contents"}
        }])
    );
    assert!(result["ttlMs"].is_u64() && result["cacheScope"].is_string(), "reads are cacheable results");
}

#[tokio::test]
async fn a_binary_resource_reads_as_a_base64_blob() {
    let fixture = start().await;
    let read = fixture.request("resources/read", json!({"uri": "test://static-binary"})).await;
    let contents = &read.result()["contents"][0];
    assert_eq!((contents["mimeType"].as_str(), contents.get("text")), (Some("image/png"), None));
    assert_eq!(contents["blob"], mcp_fleet_conformance::PNG_BASE64);
}

#[tokio::test]
async fn a_template_match_reads_with_its_variables() {
    let fixture = start().await;
    let templates = fixture.request("resources/templates/list", json!({})).await;
    assert_eq!(templates.result()["resourceTemplates"][0]["uriTemplate"], "test://template/{id}/data");

    let read = fixture.request("resources/read", json!({"uri": "test://template/123/data"})).await;
    let contents = &read.result()["contents"][0];
    assert_eq!(contents["uri"], "test://template/123/data");
    let data: serde_json::Value = serde_json::from_str(contents["text"].as_str().unwrap()).unwrap();
    assert_eq!(data, json!({"id": "123", "templateTest": true, "data": "Data for ID: 123"}));
}

#[tokio::test]
async fn an_unknown_resource_is_invalid_params_naming_the_uri() {
    let fixture = start().await;
    let uri = "test://nonexistent-resource-for-conformance-testing";
    let read = fixture.request("resources/read", json!({"uri": uri})).await;
    assert_eq!(read.status, StatusCode::OK, "an in-band error");
    let error = read.error();
    assert_eq!(error["code"], -32602);
    assert_eq!(error["data"]["uri"], uri);
}

#[tokio::test]
async fn prompt_arguments_reach_the_messages() {
    let fixture = start().await;
    let params = json!({"name": "test_prompt_with_arguments", "arguments": {"arg1": "one", "arg2": "two"}});
    let get = fixture.request("prompts/get", params).await;
    let message = &get.result()["messages"][0];
    assert_eq!(message["role"], "user");
    assert_eq!(message["content"]["text"], "Prompt with arguments: arg1='one', arg2='two'");

    let missing = fixture
        .request("prompts/get", json!({"name": "test_prompt_with_arguments", "arguments": {"arg1": "one"}}))
        .await;
    assert_eq!(missing.error()["code"], -32602);
}

#[tokio::test]
async fn prompts_carry_images_and_embedded_resources() {
    let fixture = start().await;
    let image = fixture.request("prompts/get", json!({"name": "test_prompt_with_image"})).await;
    let messages = &image.result()["messages"];
    assert_eq!(messages[0]["content"]["type"], "image");
    assert_eq!(messages[0]["content"]["mimeType"], "image/png");
    assert_eq!(messages[1]["content"]["text"], "Please analyze the image above.");

    let params =
        json!({"name": "test_prompt_with_embedded_resource", "arguments": {"resourceUri": "test://example-resource"}});
    let embedded = fixture.request("prompts/get", params).await;
    let content = &embedded.result()["messages"][0]["content"];
    assert_eq!(content["type"], "resource");
    assert_eq!(content["resource"]["uri"], "test://example-resource");
    assert_eq!(content["resource"]["text"], "Embedded resource content for testing.");
}

#[tokio::test]
async fn completion_suggests_values_matching_the_prefix() {
    let fixture = start().await;
    let params = json!({"ref": {"type": "ref/prompt", "name": "test_prompt_with_arguments"}, "argument": {"name": "arg1", "value": "test"}});
    let reply = fixture.request("completion/complete", params).await;
    assert_eq!(reply.result()["completion"]["values"], json!(["testValue1", "testValue2"]));

    let discover = fixture.request("server/discover", json!({})).await;
    assert_eq!(discover.result()["capabilities"]["completions"], json!({}));
}
