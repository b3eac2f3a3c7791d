//! Serve the axum example on `127.0.0.1:8080` (or the address given as the first argument)
//! until SIGINT/SIGTERM, then drain.

use mcp_fleet_server::{HandlerOptions, create_mcp_handler, shutdown_signal};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let addr = std::env::args().nth(1).unwrap_or_else(|| "127.0.0.1:8080".into());
    let handler = create_mcp_handler(mcp_fleet_example_axum_embed::demo_server(), HandlerOptions::default()).await?;
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    let stopper = handler.clone();
    tokio::spawn(async move {
        shutdown_signal().await;
        stopper.shutdown().await;
    });
    mcp_fleet_example_axum_embed::serve(listener, handler).await?;
    Ok(())
}
