//! Events (the experimental events extension, `mcp-fleet-server`'s feature `events`): the
//! event type `deploy.finished`, declared with typed subscription arguments and payload, and
//! a `deploy` tool whose calls emit it. A client polls `events/poll` (or holds `events/stream`)
//! for the services it cares about; the `match` hook keeps the others out.
//!
//! `cargo run -p mcp-fleet-examples --bin deploy_events`, then `events/poll` with
//! `{"name": "deploy.finished", "arguments": {"service": "api"}, "cursor": null}`, call the tool
//! `deploy` with `{"service": "api", "version": "1.4.2"}`, and poll again with the cursor.

use std::sync::{Arc, OnceLock};

use mcp_fleet_examples::{bind, init_tracing, listen_addr, serve};
use mcp_fleet_server::events::{Emitter, EventType, Events};
use mcp_fleet_server::{HandlerOptions, McpServer, create_mcp_handler, typed};
use serde_json::Value;

/// A subscription's arguments: which service's deploys it wants (all without one).
#[derive(serde::Deserialize, schemars::JsonSchema)]
#[expect(dead_code, reason = "read by the match hook from the arguments' JSON")]
struct Watching {
    /// Only this service's deploys.
    service: Option<String>,
}

/// What each occurrence carries; also the `deploy` tool's arguments.
#[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
struct Deployed {
    /// The service deployed.
    service: String,
    /// The version now running.
    version: String,
}

/// `deploy.finished`, matched to a subscription by its `service`.
fn deploy_finished() -> EventType {
    EventType::new::<Watching, Deployed>("deploy.finished", "A service finished deploying").matching(
        |_ctx, occurrence, arguments| match arguments.get("service").and_then(Value::as_str) {
            Some(service) => occurrence.data["service"] == service,
            None => true,
        },
    )
}

#[tokio::main]
async fn main() -> mcp_fleet_examples::Result {
    init_tracing();
    // The tool emits through the handler, which exists only once the server is built into it.
    let emitter: Arc<OnceLock<Emitter>> = Arc::default();
    let server = McpServer::builder("deploy-events", "1.0.0").build();
    let events = emitter.clone();
    server.add(typed::tool("deploy", "Deploy a service (and announce it)", move |deploy: Deployed| {
        let events = events.clone();
        async move {
            let Some(events) = events.get() else { return Err("not serving yet".to_owned()) };
            let sent = events.emit("deploy.finished", &deploy).await.map_err(|e| e.to_string())?;
            Ok(format!("deployed {} {} (event {})", deploy.service, deploy.version, sent.event_id))
        }
    }))?;
    let options = HandlerOptions::default().events(Events::new().event(deploy_finished()));
    let handler = create_mcp_handler(server, options).await?;
    let _ = emitter.set(handler.events());
    let (listener, _) = bind(&listen_addr()).await?;
    serve(handler, listener).await
}
