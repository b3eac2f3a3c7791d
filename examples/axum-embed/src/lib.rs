//! mcp-fleet's MCP endpoint mounted in an axum [`Router`] beside the service's own routes,
//! sharing one graceful shutdown.
//!
//! [`McpHandler`] is a `tower::Service`, so `Router::route_service("/mcp", handler)` mounts
//! it as is (the handler checks the path itself: mount it at its
//! [`mcp_path`](mcp_fleet_server::HandlerOptions::mcp_path), `/mcp` by default). To let the
//! router own the path instead, build the handler with
//! [`match_path(false)`](mcp_fleet_server::HandlerOptions::match_path) and nest it
//! ([`nested_router`]): `nest_service` strips its prefix, so the handler sees `/`. For the
//! shutdown, axum's drain is handed [`McpHandler::draining`]: when the handler's
//! `shutdown()` begins, its listen streams end with their completion result, and axum stops
//! accepting and waits for the connections that are left — no open SSE stream can hold the
//! drain forever.
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use mcp_fleet_server::{HandlerOptions, create_mcp_handler, shutdown_signal};
//! let handler = create_mcp_handler(mcp_fleet_example_axum_embed::demo_server(), HandlerOptions::default()).await?;
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
//! let stopper = handler.clone();
//! tokio::spawn(async move {
//!     shutdown_signal().await;
//!     stopper.shutdown().await;
//! });
//! mcp_fleet_example_axum_embed::serve(listener, handler).await?;
//! # Ok(()) }
//! ```

use axum::Router;
use axum::routing::get;
use mcp_fleet_server::types::{CallToolResult, Tool};
use mcp_fleet_server::{McpHandler, McpServer};
use serde_json::json;

/// The service's routes: its own (`/health`, `/version`) and the MCP endpoint at `/mcp`.
pub fn router(handler: McpHandler) -> Router {
    own_routes().route_service("/mcp", handler)
}

/// The same routes with the MCP endpoint nested at `/mcp`: the router owns the path, so
/// `handler` must be built with
/// [`match_path(false)`](mcp_fleet_server::HandlerOptions::match_path) (with the default, it
/// sees `/`, not its `mcp_path`, and answers 404).
pub fn nested_router(handler: McpHandler) -> Router {
    own_routes().nest_service("/mcp", handler)
}

/// The service's own routes, beside which the MCP endpoint is mounted.
fn own_routes() -> Router {
    Router::new()
        .route("/health", get(|| async { "ok" }))
        .route("/version", get(|| async { env!("CARGO_PKG_VERSION") }))
}

/// Serve [`router`] on `listener` until `handler.shutdown()` begins, then drain.
pub async fn serve(listener: tokio::net::TcpListener, handler: McpHandler) -> std::io::Result<()> {
    let draining = handler.draining();
    axum::serve(listener, router(handler)).with_graceful_shutdown(draining).await
}

/// A one-tool server to mount.
pub fn demo_server() -> McpServer {
    let server = McpServer::builder("axum-embed", env!("CARGO_PKG_VERSION")).build();
    let echo = Tool::new("echo", "Echoes its text").input_schema(json!({
        "type": "object",
        "properties": {"text": {"type": "string"}},
        "required": ["text"]
    }));
    server.tool(echo, |call| async move {
        let text = call.arguments.get("text").and_then(|v| v.as_str()).unwrap_or_default().to_owned();
        Ok(CallToolResult::text(text))
    });
    server
}
