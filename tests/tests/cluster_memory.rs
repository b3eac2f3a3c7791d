//! Several nodes on one in-process bus behave like a fleet: a change published on one node
//! reaches the matching listen streams on every node, exactly once.

use mcp_fleet_tests::cluster::EVENT_META;
use std::sync::Arc;
use std::time::Duration;

use mcp_fleet_bus::{MemoryBus, ServerEventBus};
use mcp_fleet_tests::{McpClient, TestNode, test_server};
use serde_json::json;

#[tokio::test]
async fn a_change_on_one_node_reaches_streams_on_every_node() {
    let bus = MemoryBus::new();
    let mut nodes = Vec::new();
    for i in 0..3 {
        let node_bus: Arc<dyn ServerEventBus> = Arc::new(bus.as_node(&format!("n{i}")));
        nodes.push(TestNode::on_bus(test_server(), node_bus).await);
    }
    let mut streams = Vec::new();
    let mut quiet = Vec::new();
    for node in &nodes {
        let client = McpClient::new(node.url());
        let mut s = client.listen(json!("t"), json!({"toolsListChanged": true})).await;
        s.next_message().await.unwrap();
        streams.push(s);
        let mut q = client.listen(json!("r"), json!({"resourceSubscriptions": ["test://x"]})).await;
        q.next_message().await.unwrap();
        quiet.push(q);
    }
    let event = nodes[1].handler.notify().tools_changed().await.unwrap();
    for s in &mut streams {
        let msg = s.next_message().await.unwrap();
        assert_eq!(msg["params"]["_meta"][EVENT_META]["version"], event.version);
        s.expect_silence(Duration::from_millis(100)).await;
    }
    for q in &mut quiet {
        q.expect_silence(Duration::from_millis(100)).await;
    }
    for node in nodes {
        node.shutdown().await;
    }
}
