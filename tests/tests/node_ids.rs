//! Node ids that are not plain KV keys, on a private NATS JetStream server (never the shared
//! 4222): a fleet named by FQDN hostnames (`pod-a.mcp.svc.cluster.local:8080`) sees each node
//! once — itself included — and two ids that a lossy sanitising would merge (`a.b`, `a_b`)
//! stay two members.

use std::sync::Arc;
use std::time::Duration;

use mcp_fleet_bus::ServerEventBus;
use mcp_fleet_bus_nats::{NatsBus, NatsBusOptions};
use mcp_fleet_server::HandlerOptions;
use mcp_fleet_tests::faults::procs::{NatsServer, TempDir};
use mcp_fleet_tests::{TestNode, WAIT, eventually, test_server};

async fn bus(url: &str, node: &str) -> Arc<dyn ServerEventBus> {
    let mut options = NatsBusOptions::from_url(url, node).expect("url");
    options.stream_name = "MCP_FLEET_NODE_IDS".into();
    Arc::new(NatsBus::connect(options).await.expect("connect to the private nats"))
}

async fn node(url: &str, id: &str) -> (TestNode, Arc<dyn ServerEventBus>) {
    let bus = bus(url, id).await;
    let options = HandlerOptions::default().node_id(id).bus(bus.clone()).membership_ttl(Duration::from_secs(3));
    (TestNode::start(test_server(), options).await, bus)
}

/// The node ids `node` sees as members, sorted.
fn members(node: &TestNode) -> Vec<(String, bool)> {
    let mut seen: Vec<_> = node.handler.fleet().members.into_iter().map(|m| (m.node_id, m.is_self)).collect();
    seen.sort();
    seen
}

#[tokio::test]
async fn fqdn_node_ids_are_counted_once_and_never_merged() {
    let dir = TempDir::new("node-ids");
    let server = NatsServer::start(dir.path()).await;
    let ids = ["pod-a.mcp.svc.cluster.local:8080", "pod-a_mcp_svc_cluster_local_8080", "a.b", "a_b"];
    let mut nodes = Vec::new();
    for id in ids {
        nodes.push(node(&server.url(), id).await);
    }
    let mut expected: Vec<&str> = ids.to_vec();
    expected.sort();
    for (i, (node, bus)) in nodes.iter().enumerate() {
        let what = format!("{} sees the four nodes, itself once", ids[i]);
        eventually(&what, WAIT, async || {
            let seen = members(node);
            seen.iter().map(|(id, _)| id.as_str()).eq(expected.iter().copied())
                && seen.iter().filter(|(_, is_self)| *is_self).map(|(id, _)| id.as_str()).eq([ids[i]])
        })
        .await;
        let raw = bus.members().await.expect("members");
        assert_eq!(raw.len(), 4, "{}: the bus's own view {raw:?}", ids[i]);
    }
    for (node, _) in nodes {
        node.shutdown().await;
    }
}
