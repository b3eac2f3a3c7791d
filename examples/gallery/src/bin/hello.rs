//! The smallest server: one typed tool. Its `inputSchema` is derived from `Hello` (the doc
//! comment becomes the property's description), and its arguments arrive deserialized.
//!
//! `cargo run -p mcp-fleet-examples --bin hello`, then call `hello` with `{"name": "Ada"}`.

use mcp_fleet_server::{HandlerOptions, McpServer, typed};
use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Deserialize, JsonSchema)]
struct Hello {
    /// Whom to greet.
    name: String,
}

#[tokio::main]
async fn main() -> mcp_fleet_examples::Result {
    let server = McpServer::builder("hello", "1.0.0").build();
    server.add(typed::tool(
        "hello",
        "Greets someone by name",
        |h: Hello| async move { format!("Hello, {}!", h.name) },
    ))?;
    mcp_fleet_examples::run(server, HandlerOptions::default()).await
}
