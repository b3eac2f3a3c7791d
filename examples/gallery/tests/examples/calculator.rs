//! `calculator`: rmcp's calculator over Streamable HTTP — its two tools, their argument
//! descriptions and text answers.

use mcp_fleet_tests::McpClient;
use serde_json::json;

use crate::support::{Example, call, names, tool};

#[tokio::test]
async fn the_calculator_sums_and_subtracts_as_rmcps_does() {
    let (_example, url) = Example::start(env!("CARGO_BIN_EXE_calculator"), &[], &[]);
    let client = McpClient::new(url);
    let list = client.result("tools/list", json!({})).await;
    assert_eq!(names(&list), ["sub", "sum"]);
    let sum = tool(&list, "sum");
    assert_eq!(sum["description"], "Calculate the sum of two numbers");
    assert_eq!(sum["inputSchema"]["properties"]["a"]["description"], "the left hand side number");
    assert_eq!(sum["inputSchema"]["required"], json!(["a", "b"]));
    let sub = tool(&list, "sub");
    assert_eq!(sub["inputSchema"]["properties"]["b"]["description"], "the right hand side number");
    assert_eq!(call(&client, "sum", json!({"a": 2, "b": 3})).await["content"][0]["text"], "5");
    assert_eq!(call(&client, "sub", json!({"a": 2, "b": 3})).await["content"][0]["text"], "-1");
    assert_eq!(call(&client, "sum", json!({"a": "two", "b": 3})).await["isError"], true);
}
