//! `hello`: one typed tool, its schema derived, its arguments checked.

use mcp_fleet_tests::McpClient;
use serde_json::json;

use crate::support::{Example, call, names, tool};

#[tokio::test]
async fn hello_greets_by_name_and_lists_its_derived_schema() {
    let (_example, url) = Example::start(env!("CARGO_BIN_EXE_hello"), &[], &[]);
    let client = McpClient::new(url);
    let list = client.result("tools/list", json!({})).await;
    assert_eq!(names(&list), ["hello"]);
    let input = &tool(&list, "hello")["inputSchema"];
    assert_eq!(input["properties"]["name"], json!({"type": "string", "description": "Whom to greet."}));
    assert_eq!(input["required"], json!(["name"]));
    assert_eq!(call(&client, "hello", json!({"name": "Ada"})).await["content"][0]["text"], "Hello, Ada!");
    let missing = call(&client, "hello", json!({})).await;
    assert_eq!(missing["isError"], true, "a missing argument is the model's to fix: {missing}");
}
