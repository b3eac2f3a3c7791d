//! `long_task`: a client that declared the tasks extension gets a task and polls it to its
//! result; one that did not gets the answer directly.

use mcp_fleet_tests::tasks::TaskClient;
use mcp_fleet_tests::{McpClient, WAIT};
use serde_json::json;

use crate::support::{Example, call};

#[tokio::test]
async fn a_long_report_is_a_task_polled_to_completion() {
    let (_example, url) = Example::start(env!("CARGO_BIN_EXE_long_task"), &[], &[]);
    let client = TaskClient::new(url.clone(), None);
    let id = client.start("report", json!({"steps": 12})).await;
    let reporting =
        client.wait_until(&id, WAIT, |t| t["statusMessage"].as_str().is_some_and(|m| m.starts_with("step "))).await;
    assert_eq!(reporting["status"], "working", "progress is the status message: {reporting}");
    let done = client.wait_status(&id, "completed").await;
    assert_eq!(done["result"]["structuredContent"], json!({"steps": 12, "url": "https://reports.example.com/12.pdf"}));

    let without = call(&McpClient::new(url), "report", json!({"steps": 1})).await;
    assert_eq!(without["structuredContent"]["steps"], 1, "no extension, no task: {without}");
}
