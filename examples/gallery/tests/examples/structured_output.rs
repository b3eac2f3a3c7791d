//! `structured_output`: `Json<T>` results with derived output schemas, failures as `isError`
//! results, and a plain-text tool — rmcp's example over Streamable HTTP.

use mcp_fleet_tests::McpClient;
use serde_json::json;

use crate::support::{Example, call, names, tool};

#[tokio::test]
async fn structured_results_match_their_derived_output_schemas() {
    let (_example, url) = Example::start(env!("CARGO_BIN_EXE_structured_output"), &[], &[]);
    let client = McpClient::new(url);
    let list = client.result("tools/list", json!({})).await;
    assert_eq!(names(&list), ["calculate", "get_info", "get_weather"]);
    let weather = &tool(&list, "get_weather")["outputSchema"];
    assert_eq!(weather["properties"]["humidity"]["type"], "integer");
    assert_eq!(weather["required"], json!(["temperature", "description", "humidity", "wind_speed"]));
    assert!(tool(&list, "get_info").get("outputSchema").is_none(), "plain text has no output schema");

    let hot = call(&client, "get_weather", json!({"city": "Paris", "units": "fahrenheit"})).await;
    assert_eq!(hot["structuredContent"]["temperature"], 72.5);
    assert_eq!(call(&client, "get_weather", json!({"city": "Oslo"})).await["structuredContent"]["temperature"], 22.5);
    let average = call(&client, "calculate", json!({"numbers": [1, 2, 6], "operation": "average"})).await;
    assert_eq!(average["structuredContent"], json!({"result": 3.0, "operation": "average", "input_count": 3}));
    let empty = call(&client, "calculate", json!({"numbers": [], "operation": "sum"})).await;
    assert_eq!(
        (empty["isError"].clone(), empty["content"][0]["text"].clone()),
        (json!(true), json!("No numbers provided"))
    );
    let unknown = call(&client, "calculate", json!({"numbers": [1], "operation": "median"})).await;
    assert_eq!(unknown["content"][0]["text"], "Unknown operation: median");
    let info = call(&client, "get_info", json!({})).await;
    assert_eq!(info["content"][0]["text"], "Structured Output Example Server v1.0");
}
