//! `server/discover` and paginated, cacheable lists.

use mcp_fleet_server::HandlerOptions;
use mcp_fleet_server::types::{CallToolResult, Tool};
use mcp_fleet_tests::{McpClient, TestNode, test_server};
use serde_json::{Value, json};

#[tokio::test]
async fn discover_advertises_versions_capabilities_and_cache_hints() {
    let node = TestNode::start(test_server(), HandlerOptions::default()).await;
    let client = McpClient::new(node.url());
    let r = client.result("server/discover", json!({})).await;
    assert_eq!(r["supportedVersions"], json!(["2026-07-28"]));
    assert_eq!(r["capabilities"]["tools"]["listChanged"], true);
    assert_eq!(r["capabilities"]["resources"]["subscribe"], true);
    assert_eq!(r["resultType"], "complete");
    assert!(r["ttlMs"].is_u64() && r["cacheScope"].is_string());
    assert_eq!(r["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "test-server");
    node.shutdown().await;
}

#[tokio::test]
async fn lists_paginate_in_registration_order_and_refuse_stale_cursors() {
    let server = test_server();
    for i in 0..5 {
        server.tool(Tool::new(format!("t{i}"), "numbered"), |_c| async { Ok(CallToolResult::text("x")) });
    }
    let node = TestNode::start(server.clone(), HandlerOptions::default().page_size(3)).await;
    let client = McpClient::new(node.url());
    let mut names = Vec::new();
    let mut cursor = Value::Null;
    let mut first_cursor = None;
    loop {
        let params = if cursor.is_null() { json!({}) } else { json!({"cursor": cursor}) };
        let page = client.result("tools/list", params).await;
        assert!(page["ttlMs"].is_u64() && page["cacheScope"].is_string());
        names.extend(page["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap().to_owned()));
        cursor = page.get("nextCursor").cloned().unwrap_or(Value::Null);
        first_cursor.get_or_insert(cursor.clone());
        if cursor.is_null() {
            break;
        }
    }
    assert_eq!(names, ["echo", "counter", "t0", "t1", "t2", "t3", "t4"]);

    // Changing the catalog makes old cursors stale: a clear -32602, so the client restarts.
    server.tool(Tool::new("t5", "new"), |_c| async { Ok(CallToolResult::text("x")) });
    let reply = client.post(&mcp_fleet_tests::request(json!(2), "tools/list", json!({"cursor": first_cursor}))).await;
    assert_eq!(reply.error_code(), Some(-32602));
    assert!(reply.json()["error"]["message"].as_str().unwrap().contains("first page"));
    let reply = client.post(&mcp_fleet_tests::request(json!(3), "tools/list", json!({"cursor": "garbage"}))).await;
    assert_eq!(reply.error_code(), Some(-32602));
    node.shutdown().await;
}

#[tokio::test]
async fn disabled_and_removed_entries_disappear_and_publish_a_change() {
    let server = test_server();
    let handle = server.tool(Tool::new("temp", "temporary"), |_c| async { Ok(CallToolResult::text("x")) });
    let node = TestNode::start(server.clone(), HandlerOptions::default()).await;
    let client = McpClient::new(node.url());
    let mut listen = client.listen(json!("l"), json!({"toolsListChanged": true})).await;
    assert_eq!(listen.next_message().await.unwrap()["method"], "notifications/subscriptions/acknowledged");
    handle.disable().await.unwrap();
    let tools = client.result("tools/list", json!({})).await;
    assert!(!tools["tools"].as_array().unwrap().iter().any(|t| t["name"] == "temp"));
    assert_eq!(listen.next_message().await.unwrap()["method"], "notifications/tools/list_changed");
    let call = client.post(&mcp_fleet_tests::request(json!(4), "tools/call", json!({"name": "temp"}))).await;
    assert_eq!(call.error_code(), Some(-32602));
    handle.enable().await.unwrap();
    assert!(
        client.result("tools/list", json!({})).await["tools"].as_array().unwrap().iter().any(|t| t["name"] == "temp")
    );
    handle.remove().await.unwrap();
    assert!(handle.remove().await.is_err());
    node.shutdown().await;
}

#[tokio::test]
async fn a_batch_swaps_once_and_publishes_one_event_per_list() {
    let server = test_server();
    let node = TestNode::start(server.clone(), HandlerOptions::default()).await;
    let client = McpClient::new(node.url());
    let mut listen = client.listen(json!(1), json!({"toolsListChanged": true, "promptsListChanged": true})).await;
    listen.next_message().await.unwrap();
    server
        .batch(|edit| {
            for i in 0..3 {
                edit.add_tool(Tool::new(format!("b{i}"), "batched"), |_c| async { Ok(CallToolResult::text("x")) })?;
            }
            assert!(edit.update_tool(Tool::new("b1", "updated description"))?);
            assert!(edit.remove(mcp_fleet_server::catalog::ListKind::Tools, "b2"));
            Ok(())
        })
        .await
        .unwrap();
    let tools = client.result("tools/list", json!({})).await;
    let names: Vec<&str> = tools["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["echo", "counter", "b0", "b1"]);
    assert_eq!(tools["tools"][3]["description"], "updated description");
    assert_eq!(listen.next_message().await.unwrap()["method"], "notifications/tools/list_changed");
    listen.expect_silence(std::time::Duration::from_millis(300)).await;
    node.shutdown().await;
}
