//! The tasks extension on one node (the in-process bus), one behaviour per test: when a call
//! becomes a task and what a client reads of it, who may see it, cancellation, input through
//! the task, tasks completed from outside their handler, the bounds and the gates (task ids a
//! listen follows included). The same
//! rules across a fleet on real brokers: `tasks_redis.rs`, `tasks_nats.rs`.

use std::time::Duration;

use http::StatusCode;
use mcp_fleet_protocol::tasks::TaskStatus;
use mcp_fleet_server::tasks::TaskOptions;
use mcp_fleet_server::types::CallToolResult;
use mcp_fleet_tests::cluster::tenant_from_header;
use mcp_fleet_tests::tasks::{TASKS, TaskClient, await_task_notification, task_options, task_server};
use mcp_fleet_tests::tasks_spec::counter;
use mcp_fleet_tests::{McpClient, TestNode, WAIT, eventually, request};
use serde_json::json;

async fn node() -> TestNode {
    TestNode::start(task_server(), task_options().authenticator(tenant_from_header)).await
}

#[tokio::test]
async fn a_slow_call_becomes_a_task_whose_progress_and_result_are_polled() {
    let node = node().await;
    let client = TaskClient::new(node.url(), Some("acme"));
    let quick = client.result("tools/call", json!({"name": "slow", "arguments": {"ms": 0}})).await;
    assert_eq!(quick["resultType"], "complete", "a call that answers at once is not a task: {quick}");

    let created = client.result("tools/call", json!({"name": "slow", "arguments": {"ms": 800}})).await;
    assert_eq!(created["resultType"], "task", "{created}");
    assert_eq!(
        (created["status"].as_str(), created["ttlMs"].as_u64(), created["pollIntervalMs"].as_u64()),
        (Some("working"), Some(3_600_000), Some(100))
    );
    let id = created["taskId"].as_str().unwrap();
    let reporting =
        client.wait_until(id, WAIT, |t| t["statusMessage"].as_str().is_some_and(|m| m.starts_with("step"))).await;
    assert_eq!(reporting["status"], "working", "progress becomes the status message: {reporting}");
    let done = client.wait_status(id, "completed").await;
    assert_eq!(done["result"]["content"][0]["text"], "slept 800 ms");
    assert_eq!(done["result"]["resultType"], "complete", "the result the call would have answered");
    assert_eq!(done["resultType"], "complete");

    let without = McpClient::new(node.url());
    let body = request(json!(2), "tools/call", json!({"name": "slow", "arguments": {"ms": 300}}));
    let mut headers = McpClient::standard_headers(&body);
    headers.push(("x-tenant".into(), "acme".into()));
    let sync = without.post_with(&body, &headers).await.json();
    assert_eq!(sync["result"]["content"][0]["text"], "slept 300 ms", "no extension, no task: {sync}");
    node.shutdown().await;
}

#[tokio::test]
async fn a_task_is_seen_and_heard_by_its_principal_only() {
    let node = node().await;
    let (acme, evil) = (TaskClient::new(node.url(), Some("acme")), TaskClient::new(node.url(), Some("evil")));
    let id = acme.start("slow", json!({"ms": 400})).await;
    let mut mine = acme.listen(&[&id]).await;
    let mut theirs = evil.listen(&[&id]).await;
    let first = await_task_notification(&mut mine, &id, WAIT, |_| true).await;
    assert_eq!(first["params"]["status"], "working", "a stream starts with the task's current state: {first}");
    await_task_notification(&mut mine, &id, WAIT, |t| t["status"] == "completed").await;
    theirs.expect_silence(Duration::from_millis(300)).await;
    let error = evil.error("tasks/get", json!({"taskId": id})).await.expect("an error");
    assert_eq!(
        (error["code"].as_i64(), error["message"].as_str()),
        (Some(-32602), Some("Failed to retrieve task: Task not found"))
    );
    let unknown =
        acme.error("tasks/get", json!({"taskId": "0123456789abcdef0123456789abcdef"})).await.expect("an error");
    assert_eq!(unknown, error, "another principal's task and no task look alike");
    node.shutdown().await;
}

#[tokio::test]
async fn input_is_asked_and_answered_through_the_task() {
    let node = node().await;
    let client = TaskClient::new(node.url(), Some("acme"));
    let id = client.start("confirm", json!({})).await;
    let waiting = client.wait_status(&id, "input_required").await;
    assert_eq!(waiting["inputRequests"]["ok"]["method"], "elicitation/create", "{waiting}");
    let bad = client.error("tasks/update", json!({"taskId": id, "inputResponses": {"ok": 12}})).await.expect("refused");
    assert_eq!(bad["code"], -32602);
    let not_an_object =
        client.error("tasks/update", json!({"taskId": id, "inputResponses": [1]})).await.expect("refused");
    assert_eq!(not_an_object["code"], -32602);
    let ignored = client.result("tasks/update", json!({"taskId": id, "inputResponses": {"nope": {}}})).await;
    assert_eq!(ignored["resultType"], "complete");
    assert_eq!(client.get(&id).await["status"], "input_required", "an unknown key answers nothing");
    let ack = client
        .result(
            "tasks/update",
            json!({"taskId": id, "inputResponses": {"ok": {"action": "accept", "content": {"ok": false}}}}),
        )
        .await;
    assert!(ack.get("taskId").is_none() && ack["resultType"] == "complete", "{ack}");
    let done = client.wait_status(&id, "completed").await;
    assert_eq!(done["result"]["content"][0]["text"], "confirmed: false");
    node.shutdown().await;
}

#[tokio::test]
async fn a_cancel_stops_the_handler_and_is_idempotent() {
    let node = node().await;
    let client = TaskClient::new(node.url(), Some("acme"));
    let id = client.start("slow", json!({"ms": 60_000})).await;
    let ack = client.result("tasks/cancel", json!({"taskId": id})).await;
    assert_eq!(ack["resultType"], "complete");
    assert_eq!(client.get(&id).await["status"], "cancelled", "cancelled in the store at once");
    let again = client.result("tasks/cancel", json!({"taskId": id})).await;
    assert_eq!(again["resultType"], "complete", "a terminal task acknowledges a cancel the same way");
    let metrics = || node.handler.metrics_text();
    eventually("the runner stopped", WAIT, async || counter(&metrics(), "mcp_fleet_tasks{status=\"working\"}") == 0.0)
        .await;
    assert_eq!(counter(&metrics(), "mcp_fleet_tasks_finished_total{status=\"cancelled\"}"), 1.0);
    node.shutdown().await;
}

#[tokio::test]
async fn a_detached_task_is_completed_through_its_handle() {
    let node = node().await;
    let client = TaskClient::new(node.url(), Some("acme"));
    let id = client.start("external", json!({})).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(client.get(&id).await["status"], "working", "the handler's own answer does not end it");
    let handle = node.handler.task(&id).expect("tasks are on");
    assert_eq!(handle.status().await.unwrap(), Some(TaskStatus::Working));
    assert!(handle.set_status_message("rendering").await.unwrap());
    assert_eq!(client.get(&id).await["statusMessage"], "rendering");
    assert!(handle.complete(CallToolResult::text("rendered")).await.unwrap());
    assert!(!handle.complete(CallToolResult::text("again")).await.unwrap(), "a finished task stays finished");
    let done = client.get(&id).await;
    assert_eq!(
        (done["status"].as_str(), done["result"]["content"][0]["text"].as_str()),
        (Some("completed"), Some("rendered"))
    );
    assert!(
        node.handler
            .task("0123456789abcdef0123456789abcdef")
            .unwrap()
            .complete(CallToolResult::text("x"))
            .await
            .is_err()
    );
    node.shutdown().await;
}

#[tokio::test]
async fn results_and_tasks_per_principal_are_bounded() {
    let node = node().await;
    let client = TaskClient::new(node.url(), Some("acme"));
    let huge = client.start("huge", json!({})).await;
    let failed = client.wait_status(&huge, "failed").await;
    assert!(failed["error"]["message"].as_str().unwrap().contains("over this server's limit of 4096"), "{failed}");

    let held: Vec<String> =
        futures_util::future::join_all((0..3).map(|_| client.start("slow", json!({"ms": 60_000})))).await;
    let refused = client.send("tools/call", json!({"name": "slow", "arguments": {"ms": 60_000}})).await;
    assert_eq!(refused.status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(refused.error_code(), Some(-32603));
    assert!(
        TaskClient::new(node.url(), Some("other")).start("slow", json!({"ms": 300})).await.len() == 32,
        "another principal has its own"
    );
    client.result("tasks/cancel", json!({"taskId": held[0]})).await;
    client.start("slow", json!({"ms": 300})).await;
    node.shutdown().await;
}

#[tokio::test]
async fn the_extension_is_negotiated_per_request() {
    let node = node().await;
    let raw = McpClient::new(node.url());
    let send = |method: &str, params: serde_json::Value| {
        let body = request(json!(9), method, params);
        let mut headers = McpClient::standard_headers(&body);
        headers.push(("x-tenant".into(), "acme".into()));
        let raw = raw.clone();
        async move { raw.post_with(&body, &headers).await }
    };
    let discover = send("server/discover", json!({})).await.json();
    assert_eq!(discover["result"]["capabilities"]["extensions"], json!({TASKS: {}}));
    for (method, params) in [
        ("tasks/get", json!({"taskId": "t"})),
        ("tasks/cancel", json!({"taskId": "t"})),
        ("tasks/update", json!({"taskId": "t", "inputResponses": {}})),
        ("tools/call", json!({"name": "external", "arguments": {}})),
        ("subscriptions/listen", json!({"notifications": {"taskIds": ["t"]}})),
    ] {
        let reply = send(method, params).await;
        assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{method}");
        let error = &reply.json()["error"];
        assert_eq!(error["code"], -32021, "{method}: {error}");
        assert_eq!(error["data"]["requiredCapabilities"], json!({"extensions": {TASKS: {}}}), "{method}");
    }
    let client = TaskClient::new(node.url(), Some("acme"));
    for removed in ["tasks/result", "tasks/list"] {
        assert_eq!(client.error(removed, json!({"taskId": "t"})).await.expect("refused")["code"], -32601, "{removed}");
    }
    node.shutdown().await;
}

#[tokio::test]
async fn a_task_past_its_ttl_is_gone_and_gives_its_slot_back() {
    let ttl = TaskOptions::default().ttl(Duration::from_secs(1)).max_tasks_per_principal(2);
    let node = TestNode::start(task_server(), task_options().authenticator(tenant_from_header).tasks(ttl)).await;
    let client = TaskClient::new(node.url(), Some("acme"));
    let created = client.result("tools/call", json!({"name": "slow", "arguments": {"ms": 60_000}})).await;
    assert_eq!(created["ttlMs"], 1000);
    let running = created["taskId"].as_str().unwrap().to_owned();
    let detached = client.start("external", json!({})).await;
    assert_eq!(
        client.send("tools/call", json!({"name": "external", "arguments": {}})).await.status,
        StatusCode::TOO_MANY_REQUESTS
    );
    eventually("both tasks are past their ttl", WAIT, async || {
        for id in [&running, &detached] {
            if client.error("tasks/get", json!({"taskId": id})).await.is_none() {
                return false;
            }
        }
        true
    })
    .await;
    for id in [&running, &detached] {
        let error = client.error("tasks/get", json!({"taskId": id})).await.expect("expired");
        assert_eq!(
            (error["code"].as_i64(), error["message"].as_str()),
            (Some(-32602), Some("Failed to retrieve task: Task has expired"))
        );
    }
    // Both ended (the runner at its TTL, the detached one when read), so both slots are free.
    client.start("external", json!({})).await;
    client.start("external", json!({})).await;
    node.shutdown().await;
}

#[tokio::test]
async fn a_task_that_expires_unread_gives_its_slot_back() {
    // Issue 33 item 5: a detached task nobody reads again never reached a terminal transition,
    // so its slot was never given back.
    let ttl = Duration::from_secs(1);
    let options = TaskOptions::default().ttl(ttl).max_tasks_per_principal(2);
    let node = TestNode::start(task_server(), task_options().authenticator(tenant_from_header).tasks(options)).await;
    let client = TaskClient::new(node.url(), Some("acme"));
    let start = tokio::time::Instant::now();
    client.start("external", json!({})).await;
    client.start("external", json!({})).await;
    let call = json!({"name": "external", "arguments": {}});
    loop {
        let retried = client.send("tools/call", call.clone()).await;
        if retried.status == StatusCode::OK {
            break;
        }
        assert_eq!(retried.status, StatusCode::TOO_MANY_REQUESTS);
        assert!(start.elapsed() < ttl * 4, "the unread tasks' slots never came back");
        tokio::time::sleep(ttl / 5).await;
    }
    assert!(start.elapsed() >= ttl, "admitted before the tasks expired");
    client.start("external", json!({})).await;
    assert_eq!(client.send("tools/call", call).await.status, StatusCode::TOO_MANY_REQUESTS, "two live tasks");
    node.shutdown().await;
}

#[tokio::test]
async fn a_task_of_a_node_that_restarted_under_its_id_fails() {
    use mcp_fleet_tests::tasks::SeverableBus;
    let bus = mcp_fleet_bus::MemoryBus::new();
    let options = |id: &str, bus: std::sync::Arc<dyn mcp_fleet_bus::ServerEventBus>| {
        task_options().authenticator(tenant_from_header).membership_ttl(Duration::from_millis(500)).node_id(id).bus(bus)
    };
    let first = SeverableBus::new(std::sync::Arc::new(bus.as_node("a")));
    let a = TestNode::start(task_server(), options("a", std::sync::Arc::new(first.clone()))).await;
    let b = TestNode::start(task_server(), options("b", std::sync::Arc::new(bus.as_node("b")))).await;
    eventually("a and b see each other in the fleet", WAIT, async || {
        a.handler.fleet().members.len() == 2 && b.handler.fleet().members.len() == 2
    })
    .await;
    let id = TaskClient::new(a.url(), Some("acme")).start("slow", json!({"ms": 60_000})).await;
    first.sever();
    // The same id comes back at once, before its old membership could expire.
    let again = TestNode::start(task_server(), options("a", std::sync::Arc::new(bus.as_node("a")))).await;
    let failed = TaskClient::new(b.url(), Some("acme")).wait_status(&id, "failed").await;
    assert_eq!(failed["error"]["data"]["reason"], "replica_restarted", "{failed}");
    let on_a = TaskClient::new(again.url(), Some("acme")).get(&id).await;
    assert_eq!(on_a["status"], "failed", "the new incarnation knows the old one's task is gone");
    for node in [a, b, again] {
        node.shutdown().await;
    }
}

#[tokio::test]
async fn a_listen_follows_only_task_ids_of_the_servers_format_within_the_byte_budget() {
    let options = task_options().authenticator(tenant_from_header).max_subscription_bytes_per_stream(100);
    let node = TestNode::start(task_server(), options).await;
    let client = TaskClient::new(node.url(), Some("acme"));
    let listen = |ids: Vec<String>| json!({"notifications": {"taskIds": ids}});
    // The case, smaller: ids of 4 000 characters are no ids of this server.
    let reply = client.send("subscriptions/listen", listen(vec!["a".repeat(4_000); 3])).await;
    assert_eq!((reply.status, reply.error_code()), (StatusCode::OK, Some(-32602)), "in band, as a long URI");
    let message = reply.json()["error"]["message"].as_str().unwrap().to_owned();
    assert!(message.contains("taskIds[0]") && message.len() < 200, "{message}");
    let refusals = |reason: &str| {
        counter(&node.handler.metrics_text(), &format!("mcp_fleet_listen_streams_refused_total{{reason=\"{reason}\"}}"))
    };
    assert_eq!(refusals("bad_task_id"), 1.0);
    // Well-formed ids count against the stream's bytes: four of 32 bytes are over 100.
    let ids = |n: usize| (0..n).map(|i| format!("{i:032x}")).collect::<Vec<_>>();
    let reply = client.send("subscriptions/listen", listen(ids(4))).await;
    assert_eq!((reply.status, reply.error_code()), (StatusCode::OK, Some(-32602)));
    assert_eq!(refusals("stream_bytes"), 1.0);
    assert_eq!(node.handler.open_streams(), 0);
    let ids = ids(3);
    let _stream = client.listen(&ids.iter().map(String::as_str).collect::<Vec<_>>()).await;
    assert_eq!(node.handler.open_streams(), 1);
    node.shutdown().await;
}
