//! A broker outage never takes the HTTP side down: while the node cannot reach its broker,
//! requests keep being served, `bus_health()` says so, and `notify()` returns an error the
//! caller can see; when the broker is back, the node reconnects and notifications flow again.
//!
//! The broker is taken away through a loopback proxy the test cuts, so the real (shared)
//! broker keeps running. Skipped like the other broker tests when it is unreachable.

use mcp_fleet_tests::cluster::EVENT_META;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use mcp_fleet_bus::ServerEventBus;
use mcp_fleet_bus_nats::{NatsBus, NatsBusOptions};
use mcp_fleet_bus_redis::{RedisBus, RedisBusOptions};
use mcp_fleet_server::HandlerOptions;
use mcp_fleet_tests::cluster::{Broker, broker_or_skip, unique_name};
use mcp_fleet_tests::proxy::CuttableProxy;
use mcp_fleet_tests::{McpClient, TestNode, WAIT, eventually, test_server};
use serde_json::json;

async fn upstream(url: &str) -> SocketAddr {
    let authority = url.split_once("://").map(|(_, rest)| rest).unwrap_or(url);
    let host_port = authority.rsplit('@').next().unwrap_or(authority).split('/').next().unwrap_or(authority);
    tokio::net::lookup_host(host_port).await.expect("resolve broker").next().expect("broker address")
}

async fn bus_through(broker: Broker, proxy: &CuttableProxy) -> Arc<dyn ServerEventBus> {
    let unique = unique_name();
    match broker {
        Broker::Redis => {
            let mut opts = RedisBusOptions::new(&format!("redis://{}", proxy.addr), "outage-node").expect("url");
            opts.publish_timeout = Duration::from_millis(500);
            opts.reconnect_max = Duration::from_millis(500);
            Arc::new(RedisBus::connect(opts.with_stream_key(format!("mcp-fleet-test:{unique}"))).await.expect("bus"))
        }
        Broker::Nats => {
            let mut opts = NatsBusOptions::new(&format!("nats://{}", proxy.addr), "outage-node");
            opts.stream_name = format!("MCP_FLEET_TEST_{}", unique.replace('-', "_"));
            opts.subject_prefix = format!("mcp-fleet-test.{unique}");
            opts.publish_timeout = Duration::from_millis(500);
            opts.reconnect_max = Duration::from_millis(500);
            Arc::new(NatsBus::connect(opts).await.expect("bus"))
        }
    }
}

async fn outage_spec(broker: Broker) {
    let Some(url) = broker_or_skip(broker).await else { return };
    let proxy = CuttableProxy::start(upstream(&url).await).await;
    let node = TestNode::start(test_server(), HandlerOptions::default().bus(bus_through(broker, &proxy).await)).await;
    let client = McpClient::new(node.url());
    let mut stream = client.listen(json!("o"), json!({"toolsListChanged": true})).await;
    stream.next_message().await.unwrap();

    proxy.cut();
    let notify = node.handler.notify();
    eventually("publishing fails visibly", WAIT, async || notify.tools_changed().await.is_err()).await;
    eventually("the node reports it cannot hear the bus", WAIT, async || !node.handler.bus_health().connected).await;
    // The HTTP side is untouched: requests are served and the listen stream stays open.
    assert!(client.result("tools/list", json!({})).await["tools"].is_array());
    assert!(client.result("server/discover", json!({})).await["capabilities"].is_object());

    proxy.restore();
    eventually("the node hears the bus again", WAIT, async || node.handler.bus_health().connected).await;
    let mut published = None;
    eventually("publishing works again", WAIT, async || {
        published = notify.tools_changed().await.ok();
        published.is_some()
    })
    .await;
    let version = published.map(|e| e.version).unwrap_or_default();
    // The stream hears the new change (or a conservative invalidation after the outage).
    loop {
        let msg = stream.next_message().await.expect("stream stays open");
        let meta = &msg["params"]["_meta"][EVENT_META];
        if meta["gap"] == true || meta["version"].as_u64().is_some_and(|v| v >= version) {
            break;
        }
    }
    node.shutdown().await;
}

#[tokio::test]
async fn a_redis_outage_fails_publishes_visibly_and_keeps_serving_http() {
    outage_spec(Broker::Redis).await;
}

#[tokio::test]
async fn a_nats_outage_fails_publishes_visibly_and_keeps_serving_http() {
    outage_spec(Broker::Nats).await;
}
