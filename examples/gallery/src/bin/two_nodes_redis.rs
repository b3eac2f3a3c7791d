//! Two replicas on one Redis bus, in one process for the demo (in production, two pods with the
//! same code): a change announced on node A reaches the listen streams of node B.
//!
//! `cargo run -p mcp-fleet-examples --bin two_nodes_redis -- 127.0.0.1:8080 127.0.0.1:8081`
//! (Redis at `MCP_FLEET_REDIS_URL`, default `redis://127.0.0.1:6379/0`); open a listen stream
//! on B, call `announce` on A.

use mcp_fleet_server::typed::{self, NoArgs, ToolError};
use mcp_fleet_server::{HandlerOptions, McpHandler, McpServer, create_mcp_handler};

/// Node `node_id` on the shared bus, serving a catalog with the `announce` tool.
async fn node(redis: &str, node_id: &str) -> mcp_fleet_examples::Result<McpHandler> {
    let bus = mcp_fleet_bus_connect::connect(redis, node_id).await?;
    let server = McpServer::builder("two-nodes", "1.0.0").build();
    let handler = create_mcp_handler(server.clone(), HandlerOptions::default().node_id(node_id).bus(bus)).await?;
    let notify = handler.notify();
    server.add(typed::tool("announce", "Tells the whole fleet the tool list changed", move |_: NoArgs| {
        let notify = notify.clone();
        async move {
            let event = notify.tools_changed().await?;
            Ok::<_, ToolError>(format!("announced by {} as version {}", event.origin, event.version))
        }
    }))?;
    Ok(handler)
}

#[tokio::main]
async fn main() -> mcp_fleet_examples::Result {
    mcp_fleet_examples::init_tracing();
    let redis = std::env::var("MCP_FLEET_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379/0".into());
    let (a, b) = (node(&redis, "node-a").await?, node(&redis, "node-b").await?);
    let (listener_a, _) = mcp_fleet_examples::bind(&mcp_fleet_examples::listen_addr()).await?;
    let (listener_b, _) =
        mcp_fleet_examples::bind(&mcp_fleet_examples::arg_or(2, "LISTEN_B", "127.0.0.1:8081")).await?;
    tokio::try_join!(mcp_fleet_examples::serve(a, listener_a), mcp_fleet_examples::serve(b, listener_b))?;
    Ok(())
}
