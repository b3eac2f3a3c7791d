//! Notifications through the shipped `deploy/local/haproxy.cfg` arrive about as fast as
//! straight from a node: `mcp-fleet` processes on the real Redis, HAProxy in front of three,
//! a listen stream through it, and changes published one by one on a node's admin port.
//! Without `option http-no-delay` each small SSE frame waited for the client's delayed ACK
//! (Nagle): about 220 ms per notification. Users copy that file, so this keeps it honest.

mod common;

use std::time::Duration;

use common::{LoadBalancer, Node, private_bus};
use mcp_fleet_tests::McpClient;
use mcp_fleet_tests::cluster::{Broker, unique_name};
use mcp_fleet_tests::faults::procs::TempDir;
use serde_json::json;
use tokio::time::Instant;

/// Changes published, one at a time.
const CHANGES: usize = 8;
/// What a notification may take through the balancer on a loaded 2-core machine (straight to
/// a node it takes 3–4 ms; with Nagle in the way about 220 ms).
const LIMIT: Duration = Duration::from_millis(100);

#[tokio::test]
async fn a_notification_through_the_balancer_is_not_held_back() {
    let Some(bus) = private_bus(Broker::Redis).await else { return };
    let dir = TempDir::new("balancer");
    let nodes: Vec<Node> = (0..3)
        .map(|i| {
            Node::start_logging_to(&["--bus", &bus, "--node-id", &format!("lb-{i}")], &dir.path().join("node.log"))
        })
        .collect();
    for node in &nodes {
        node.ready().await;
    }
    let Some(lb) = LoadBalancer::start([&nodes[0], &nodes[1], &nodes[2]], dir.path()).await else { return };
    let client = McpClient::new(lb.url.clone());
    let mut stream = client.listen(json!(unique_name()), json!({"toolsListChanged": true})).await;
    let ack = stream.next_message().await.expect("ack");
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged", "{ack}");
    let admin = format!("http://{}/admin/notify", nodes[0].admin);
    let http = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new()).build_http();
    let mut took = Vec::with_capacity(CHANGES);
    for _ in 0..CHANGES {
        let req = http::Request::post(&admin)
            .body(http_body_util::Full::new(bytes::Bytes::from(r#"{"kind":"tools"}"#)))
            .expect("request");
        let published = Instant::now();
        assert_eq!(http.request(req).await.expect("notify").status(), 200);
        let heard = stream.next_message_within(Duration::from_secs(5)).await.expect("a notification");
        assert_eq!(heard["method"], "notifications/tools/list_changed", "{heard}");
        took.push(published.elapsed());
        // Idle between changes, as real ones are (the delayed ACK is what Nagle waits for).
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    took.sort();
    let median = took[CHANGES / 2];
    assert!(median < LIMIT, "publish → delivery through HAProxy: median {median:?} (all: {took:?})");
}
