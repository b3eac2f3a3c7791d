//! `mcp-fleet-conformance`: serve the conformance fixtures at `http://ADDR/mcp` until Ctrl-C,
//! or SIGTERM, then drain gracefully. Run the suite against it with `scripts/conformance.sh`.
//! With `--bus`, several fixture nodes share one Redis or NATS event bus (list changes from a
//! trigger tool on one node reach listen streams on all of them).

use std::net::SocketAddr;

use clap::Parser;
use tracing_subscriber::EnvFilter;

/// Serve the MCP conformance-suite fixtures (revisions 2026-07-28 and 2025-11-25) at /mcp.
#[derive(Parser)]
#[command(version)]
struct Args {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:8765")]
    listen: SocketAddr,
    /// HMAC key for MRTR requestState (≥ 32 bytes; the same on every replica). Default: a
    /// fixed development key.
    #[arg(long, env = "MCP_CONFORMANCE_REQUEST_STATE_KEY", hide_env_values = true)]
    request_state_key: Option<String>,
    /// Event bus shared with other fixture nodes: memory://, redis://, rediss://,
    /// redis+sentinel:// or nats://. Default: none (an in-process bus, this node alone).
    #[arg(long, env = "MCP_CONFORMANCE_BUS")]
    bus: Option<String>,
    /// This node's id on the bus (unique per node). Default: HOSTNAME-pid.
    #[arg(long, env = "MCP_CONFORMANCE_NODE_ID")]
    node_id: Option<String>,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    tracing_subscriber::fmt()
        .with_env_filter(EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")))
        .init();

    let key = match args.request_state_key {
        Some(key) => key.into_bytes(),
        None => mcp_fleet_conformance::DEV_REQUEST_STATE_KEY.to_vec(),
    };
    let mut options = mcp_fleet_conformance::handler_options(key);
    if let Some(url) = &args.bus {
        // The bus and the handler must agree on the id, so pick the default here.
        let node_id = args.node_id.clone().unwrap_or_else(default_node_id);
        let bus = mcp_fleet_bus_connect::connect(url, &node_id).await?;
        tracing::info!(bus = %url, backend = bus.backend(), node_id = %node_id, "connected the event bus");
        options = options.bus(bus).node_id(node_id);
    } else if let Some(node_id) = args.node_id {
        options = options.node_id(node_id);
    }
    let handler = mcp_fleet_conformance::fixture_handler(options).await?;
    let listener = tokio::net::TcpListener::bind(args.listen).await?;
    tracing::info!(url = %format!("http://{}/mcp", listener.local_addr()?), "serving the conformance fixtures");

    handler.serve_until(listener, mcp_fleet_server::shutdown_signal()).await?;
    tracing::info!("drained");
    Ok(())
}

/// `HOSTNAME-pid`, the id the framework itself would choose.
fn default_node_id() -> String {
    let host = std::env::var("HOSTNAME").unwrap_or_else(|_| "node".into());
    format!("{host}-{}", std::process::id())
}
