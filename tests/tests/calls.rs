//! Tool calls answered as JSON, as SSE when progress is emitted, and cancelled when the client
//! closes the response.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use mcp_fleet_server::HandlerOptions;
use mcp_fleet_server::types::{CallToolResult, Tool};
use mcp_fleet_tests::{McpClient, TestNode, request, test_server};
use serde_json::json;

#[tokio::test]
async fn a_call_without_progress_is_json() {
    let node = TestNode::start(test_server(), HandlerOptions::default()).await;
    let client = McpClient::new(node.url());
    let reply =
        client.post(&request(json!("c1"), "tools/call", json!({"name": "echo", "arguments": {"text": "hi"}}))).await;
    assert_eq!(reply.headers["content-type"], "application/json");
    let body = reply.json();
    assert_eq!(body["id"], "c1");
    assert_eq!(body["result"]["content"][0]["text"], "hi");
    assert_eq!(body["result"]["resultType"], "complete");
    // Schema violations are execution errors the model can fix.
    let bad = client.result("tools/call", json!({"name": "echo", "arguments": {}})).await;
    assert_eq!(bad["isError"], true);
    node.shutdown().await;
}

#[tokio::test]
async fn progress_switches_the_response_to_sse_and_ends_with_the_result() {
    let node = TestNode::start(test_server(), HandlerOptions::default()).await;
    let client = McpClient::new(node.url());
    let mut body = request(json!(5), "tools/call", json!({"name": "counter"}));
    body["params"]["_meta"]["progressToken"] = json!(77);
    let reply = client.post(&body).await;
    assert_eq!(reply.headers["content-type"], "text/event-stream");
    assert_eq!(reply.headers["x-accel-buffering"], "no");
    let messages = reply.sse_messages();
    let progress: Vec<_> = messages.iter().filter(|m| m["method"] == "notifications/progress").collect();
    assert_eq!(progress.len(), 3);
    assert!(progress.iter().all(|p| p["params"]["progressToken"] == 77));
    let last = messages.last().unwrap();
    assert_eq!((last["id"].clone(), last["result"]["content"][0]["text"].clone()), (json!(5), json!("done")));
    node.shutdown().await;
}

#[tokio::test]
async fn closing_the_response_cancels_the_handler() {
    struct SetOnDrop(Arc<AtomicBool>);
    impl Drop for SetOnDrop {
        fn drop(&mut self) {
            self.0.store(true, Ordering::SeqCst);
        }
    }
    let dropped = Arc::new(AtomicBool::new(false));
    let server = test_server();
    let flag = dropped.clone();
    server.tool(Tool::new("forever", "Never finishes"), move |call| {
        let guard = SetOnDrop(flag.clone());
        async move {
            let _guard = guard;
            call.ctx.progress(1.0, None, Some("started")).await;
            tokio::time::sleep(Duration::from_secs(3600)).await;
            Ok(CallToolResult::text("unreachable"))
        }
    });
    let node = TestNode::start(server, HandlerOptions::default()).await;
    let client = McpClient::new(node.url());
    let mut body = request(json!(9), "tools/call", json!({"name": "forever"}));
    body["params"]["_meta"]["progressToken"] = json!("p");
    let resp = client.send_raw("POST", &McpClient::standard_headers(&body), serde_json::to_vec(&body).unwrap()).await;
    let mut incoming = resp.into_body();
    let first = http_body_util::BodyExt::frame(&mut incoming).await.unwrap().unwrap();
    assert!(String::from_utf8_lossy(first.data_ref().unwrap()).contains("notifications/progress"));
    drop(incoming);
    mcp_fleet_tests::eventually("the handler is cancelled", Duration::from_secs(5), async || {
        dropped.load(Ordering::SeqCst)
    })
    .await;
    node.shutdown().await;
}

#[tokio::test]
async fn resources_and_unknown_names() {
    let node = TestNode::start(test_server(), HandlerOptions::default()).await;
    let client = McpClient::new(node.url());
    let read = client.result("resources/read", json!({"uri": "test://a"})).await;
    assert_eq!(read["contents"][0]["text"], "A");
    assert!(read["ttlMs"].is_u64() && read["cacheScope"].is_string());
    let missing = client.post(&request(json!(2), "resources/read", json!({"uri": "test://missing"}))).await;
    assert_eq!((missing.status.as_u16(), missing.error_code()), (200, Some(-32602)));
    assert_eq!(missing.json()["error"]["data"]["uri"], "test://missing");
    let unknown = client.post(&request(json!(3), "tools/call", json!({"name": "nope"}))).await;
    assert_eq!(unknown.error_code(), Some(-32602));
    node.shutdown().await;
}
