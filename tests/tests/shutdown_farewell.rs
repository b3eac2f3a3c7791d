//! A drained node says goodbye before its process ends, on a private Redis (never the shared
//! 6379): `shutdown()` returns only once the node has left the fleet's membership (so the
//! others need not wait for its TTL at every step of a rollout) and the outbox has published
//! the catalog change it still held. The node runs on a runtime of its own that ends right
//! after `shutdown()`, as `main` does — whatever was left in a background task dies with it.

use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use mcp_fleet_bus::{BusItem, EventKind, ServerEventBus};
use mcp_fleet_bus_redis::{RedisBus, RedisBusOptions};
use mcp_fleet_server::types::{CallToolResult, Tool};
use mcp_fleet_server::{HandlerOptions, create_mcp_handler, fleet::CatalogAnnouncePolicy};
use mcp_fleet_tests::faults::procs::{RedisServer, TempDir};
use mcp_fleet_tests::{WAIT, eventually, test_server};

const STREAM_KEY: &str = "mcp-fleet-farewell";
/// Long enough that waiting for it would fail the test.
const TTL: Duration = Duration::from_secs(30);

async fn bus(url: &str, node: &str) -> Arc<dyn ServerEventBus> {
    let options = RedisBusOptions::from_url(url, node).expect("url").with_stream_key(STREAM_KEY);
    Arc::new(RedisBus::connect(options).await.expect("connect to the private redis"))
}

/// Run node `pod-a` on a current-thread runtime of its own: join the fleet, change the catalog,
/// shut down, end the runtime.
fn run_and_drain(url: String) {
    let node = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
        runtime.block_on(async {
            let bus = bus(&url, "pod-a").await;
            let server = test_server();
            let options = HandlerOptions::default()
                .node_id("pod-a")
                .bus(bus.clone())
                .membership_ttl(TTL)
                .shutdown_deadline(Duration::from_secs(5))
                .catalog_notifications(CatalogAnnouncePolicy::Immediate);
            let handler = create_mcp_handler(server.clone(), options).await.expect("handler");
            eventually("pod-a is a member", WAIT, async || {
                bus.members().await.is_ok_and(|m| m.iter().any(|m| m.node_id == "pod-a"))
            })
            .await;
            // A catalog change the outbox has not published yet, then SIGTERM.
            server.tool(Tool::new("late", "Added just before the drain"), |_c| async { Ok(CallToolResult::text("x")) });
            handler.shutdown().await;
        });
    });
    node.join().expect("the node's thread");
}

#[tokio::test]
async fn a_drained_node_has_left_and_published_when_shutdown_returns() {
    let dir = TempDir::new("farewell");
    let server = RedisServer::start(dir.path(), "redis", None).await;
    let observer = bus(&server.url(), "observer").await;
    let mut events = observer.subscribe().await.expect("subscribe");

    let url = server.url();
    tokio::task::spawn_blocking(move || run_and_drain(url)).await.expect("drain");

    let members = observer.members().await.expect("members");
    let left = members.iter().all(|m| m.node_id != "pod-a");
    let published = tokio::time::timeout(Duration::from_secs(5), async {
        while let Some(item) = events.next().await {
            if let BusItem::Event(e) = item
                && e.origin == "pod-a"
                && e.kind == EventKind::ToolsListChanged
            {
                return true;
            }
        }
        false
    })
    .await;
    let published = published == Ok(true);
    assert!(left && published, "left the membership: {left} ({members:?}); outbox's last round published: {published}");
}
