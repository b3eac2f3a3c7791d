//! `mcp-fleet-conformance`: serve the conformance fixtures at `http://ADDR/mcp` until Ctrl-C,
//! or SIGTERM, then drain gracefully. Run the suite against it with `scripts/conformance.sh`.

use std::net::SocketAddr;

use clap::Parser;
use tracing_subscriber::EnvFilter;

/// Serve the MCP conformance-suite fixtures (revision 2026-07-28) at /mcp.
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
    let handler = mcp_fleet_conformance::fixture_handler(mcp_fleet_conformance::handler_options(key)).await?;
    let listener = tokio::net::TcpListener::bind(args.listen).await?;
    tracing::info!(url = %format!("http://{}/mcp", listener.local_addr()?), "serving the conformance fixtures");

    let serving = tokio::spawn({
        let handler = handler.clone();
        async move { handler.serve(listener).await }
    });
    mcp_fleet_server::shutdown_signal().await;
    tracing::info!("shutting down");
    handler.shutdown().await;
    serving.await??;
    Ok(())
}
