//! The tasks extension's fixtures over real HTTP, as the suite's `tasks-*` scenarios drive
//! them: which calls become tasks, how each fixture ends, input through a task (two requests
//! answered one at a time), and MRTR before a task.

#![allow(clippy::unwrap_used)] // in a test, a panic at the failing line is the report we want

mod common;

use common::start;
use mcp_fleet_tests::WAIT;
use mcp_fleet_tests::tasks::TaskClient;
use serde_json::json;

#[tokio::test]
async fn slow_compute_becomes_a_task_only_when_slow_and_for_clients_that_declared_tasks() {
    let fixture = start().await;
    let tasks = TaskClient::new(fixture.node.url(), None);
    let quick = tasks.result("tools/call", json!({"name": "slow_compute", "arguments": {"seconds": 0}})).await;
    assert_eq!(quick["resultType"], "complete", "{quick}");
    let id = tasks.start("slow_compute", json!({"seconds": 0.3, "label": "t"})).await;
    let done = tasks.wait_status(&id, "completed").await;
    assert_eq!(done["result"]["content"][0]["text"], "t: computed in 0.3 s");
    let plain = fixture.request("tools/call", json!({"name": "slow_compute", "arguments": {"seconds": 0.3}})).await;
    assert_eq!(plain.result()["resultType"], "complete", "no extension declared: the synchronous answer");
    let required = fixture.request("tools/call", json!({"name": "failing_job", "arguments": {}})).await;
    assert_eq!(required.error()["code"], -32021);
}

#[tokio::test]
async fn each_fixture_ends_as_the_suite_expects() {
    let fixture = start().await;
    let tasks = TaskClient::new(fixture.node.url(), None);
    let failing = tasks.start("failing_job", json!({})).await;
    let protocol = tasks.start("protocol_error_job", json!({})).await;
    let tool_error = tasks.wait_until(&failing, WAIT, |t| t["status"] != "working").await;
    assert_eq!(
        (tool_error["status"].as_str(), tool_error["result"]["isError"].as_bool()),
        (Some("completed"), Some(true))
    );
    let failed = tasks.wait_until(&protocol, WAIT, |t| t["status"] != "working").await;
    assert_eq!((failed["status"].as_str(), failed["error"]["code"].as_i64()), (Some("failed"), Some(-32603)));
    assert!(failed.get("result").is_none());
}

#[tokio::test]
async fn two_input_requests_are_answered_one_at_a_time() {
    let fixture = start().await;
    let tasks = TaskClient::new(fixture.node.url(), None);
    let id = tasks.start("multi_input", json!({})).await;
    let waiting = tasks.wait_status(&id, "input_required").await;
    assert_eq!(waiting["inputRequests"].as_object().unwrap().len(), 2, "{waiting}");
    let first = json!({"taskId": id, "inputResponses": {"name": {"action": "accept", "content": {"name": "Ada"}}}});
    tasks.result("tasks/update", first).await;
    let partial = tasks.get(&id).await;
    assert_eq!(partial["status"], "input_required");
    assert_eq!(partial["inputRequests"].as_object().unwrap().keys().collect::<Vec<_>>(), ["confirm"]);
    let second =
        json!({"taskId": id, "inputResponses": {"confirm": {"action": "accept", "content": {"confirm": true}}}});
    tasks.result("tasks/update", second).await;
    let done = tasks.wait_status(&id, "completed").await;
    assert_eq!(done["result"]["content"][0]["text"], "Thanks, Ada: both answers received");
}

#[tokio::test]
async fn mrtr_comes_first_and_the_task_carries_its_answer() {
    let fixture = start().await;
    let tasks = TaskClient::new(fixture.node.url(), None);
    let asked = tasks.result("tools/call", json!({"name": "test_tool_with_task", "arguments": {}})).await;
    assert_eq!(asked["resultType"], "input_required");
    assert!(asked.get("taskId").is_none());
    let answer = json!({"user_name": {"action": "accept", "content": {"name": "Alice"}}});
    let created = tasks
        .result("tools/call", json!({"name": "test_tool_with_task", "arguments": {}, "inputResponses": answer}))
        .await;
    assert_eq!(created["resultType"], "task", "{created}");
    assert!(created.get("requestState").is_none() && created.get("inputRequests").is_none());
    let done = tasks.wait_status(created["taskId"].as_str().unwrap(), "completed").await;
    assert!(done["result"]["content"][0]["text"].as_str().unwrap().contains("Alice"), "{done}");
}
