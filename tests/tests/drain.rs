//! A call still running when the drain's deadline passes is answered with a JSON-RPC error
//! naming the execution epoch that ends — never a bare connection reset — and is not retried
//! anywhere by the framework: the handler ran once.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use mcp_fleet_server::types::{CallToolResult, Tool};
use mcp_fleet_server::{HandlerOptions, audit::AuditOptions};
use mcp_fleet_tests::cluster::unique_name;
use mcp_fleet_tests::{McpClient, TestNode, eventually, request, test_server};
use serde_json::{Value, json};

#[tokio::test]
async fn a_call_cut_by_the_drain_gets_the_error_naming_the_ending_epoch() {
    let runs = Arc::new(AtomicUsize::new(0));
    let server = test_server();
    server.tool(Tool::new("slow", "Takes a minute"), {
        let runs = runs.clone();
        move |_call| {
            runs.fetch_add(1, Ordering::SeqCst);
            async {
                tokio::time::sleep(Duration::from_secs(60)).await;
                Ok(CallToolResult::text("too late"))
            }
        }
    });
    let audit = std::env::temp_dir().join(format!("mcp-fleet-drain-{}.jsonl", unique_name()));
    let options = HandlerOptions::default()
        .node_id("draining-node")
        .shutdown_deadline(Duration::from_millis(600))
        .audit(AuditOptions::file(&audit));
    let node = TestNode::start(server, options).await;
    let client = McpClient::new(node.url());
    let discover = client.result("server/discover", json!({})).await;
    let epoch = discover["_meta"]["dev.mcp-fleet/execution"]["epoch"].clone();

    let call = tokio::spawn({
        let client = client.clone();
        async move { client.post(&request(json!(7), "tools/call", json!({"name": "slow", "arguments": {}}))).await }
    });
    eventually("the slow call runs", Duration::from_secs(5), async || runs.load(Ordering::SeqCst) == 1).await;
    let started = Instant::now();
    node.handler.shutdown().await;
    let reply = call.await.expect("the call task");
    assert_eq!(reply.status, http::StatusCode::OK, "an in-band error, not a reset");
    let body: Value = reply.json();
    assert_eq!(body["id"], 7, "{body}");
    let error = &body["error"];
    assert_eq!(error["code"], -32603, "{body}");
    assert_eq!(error["data"]["reason"], "drained", "{body}");
    assert_eq!(error["data"]["epoch"], epoch, "{body}");
    assert_eq!(error["data"]["node"], "draining-node", "{body}");
    assert!(error["message"].as_str().is_some_and(|m| m.contains(epoch.as_str().unwrap_or("?"))), "{body}");
    let took = started.elapsed();
    assert!(took >= Duration::from_millis(550) && took < Duration::from_secs(3), "drained in {took:?}");
    assert_eq!(runs.load(Ordering::SeqCst), 1, "the framework retried nothing");

    // The audit trail says so too, and shutdown() waited for the record.
    let text = std::fs::read_to_string(&audit).expect("the audit file");
    let records: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).expect("json")).collect();
    let slow: Vec<&Value> = records.iter().filter(|r| r["name"] == "slow").collect();
    assert_eq!(slow.len(), 1, "{records:#?}");
    assert_eq!((&slow[0]["outcome"], &slow[0]["errorReason"]), (&json!("error"), &json!("drained")));
    let _ = std::fs::remove_file(&audit);
}
