//! `two_nodes_redis`: a change announced on node A is heard by a listen stream on node B,
//! through Redis. Skipped (with a printed `skipped: …`) when Redis is unreachable, unless
//! `MCP_FLEET_REQUIRE_BROKERS=1`.

use mcp_fleet_tests::McpClient;
use mcp_fleet_tests::cluster::{Broker, EVENT_META, broker_or_skip};
use serde_json::json;

use crate::support::{Example, call, listen_tools, tools_changed};

#[tokio::test]
async fn a_change_on_node_a_reaches_a_stream_on_node_b() {
    let Some(redis) = broker_or_skip(Broker::Redis).await else { return };
    // A stream of its own: the two nodes are a fleet apart from other tests on this Redis.
    let separator = if redis.contains('?') { '&' } else { '?' };
    let redis = format!("{redis}{separator}stream=examples-two-nodes-{}", std::process::id());
    let (mut example, a) =
        Example::start(env!("CARGO_BIN_EXE_two_nodes_redis"), &["127.0.0.1:0"], &[("MCP_FLEET_REDIS_URL", &redis)]);
    let b = example.url();
    let mut on_b = listen_tools(&McpClient::new(b), &[]).await;

    let announced = call(&McpClient::new(a), "announce", json!({})).await;
    let text = announced["content"][0]["text"].as_str().unwrap();
    let version: u64 = text.strip_prefix("announced by node-a as version ").unwrap().parse().unwrap();
    // Node A's own start (its `announce` tool added) was announced too: skip anything older.
    loop {
        let heard = tools_changed(&mut on_b).await;
        if heard["params"]["_meta"][EVENT_META]["version"] == version {
            break;
        }
    }
}
