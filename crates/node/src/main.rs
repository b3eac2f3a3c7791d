//! `mcp-fleet`: one replica of a fleet of MCP servers. Parse config → build the handler →
//! serve → wait for a signal → drain with a deadline.

mod admin;
mod config;
mod demo;

use std::time::Duration;

use clap::Parser;
use mcp_fleet_server::{HandlerOptions, create_mcp_handler};
use tokio::net::TcpListener;

use config::Config;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let config = Config::parse();
    init_logging(config.log_json);
    // One worker means one core: the current-thread scheduler then wakes the listen streams of
    // a fan-out without the work-stealing queues' atomics and overflow.
    let mut runtime = match config.worker_threads {
        Some(1) => tokio::runtime::Builder::new_current_thread(),
        Some(n) => {
            let mut b = tokio::runtime::Builder::new_multi_thread();
            b.worker_threads(n.max(1));
            b
        }
        None => tokio::runtime::Builder::new_multi_thread(),
    };
    runtime.enable_all().build()?.block_on(run(config))
}

async fn run(config: Config) -> Result<(), Box<dyn std::error::Error>> {
    let node_id = config.node_id();
    let patience = Duration::from_secs(config.bus_connect_secs);
    let bus = mcp_fleet_bus_connect::connect_patiently(&config.bus, &node_id, patience).await?;
    let handler = create_mcp_handler(demo::demo_server(), options(&config, node_id).bus(bus)).await?;
    let listener = TcpListener::bind(config.listen).await?;
    tracing::info!(addr = %listener.local_addr()?, bus = %config.bus, "serving MCP at /mcp");
    let serving = tokio::spawn({
        let handler = handler.clone();
        async move { handler.serve(listener).await }
    });
    let (stop_admin, admin_stopped) = tokio::sync::oneshot::channel::<()>();
    if let Some(addr) = config.admin_listen {
        let admin = TcpListener::bind(addr).await?;
        tracing::info!(addr = %admin.local_addr()?, "serving admin endpoint");
        let deadline = Duration::from_secs(config.shutdown_secs);
        tokio::spawn(admin::serve(
            admin,
            handler.clone(),
            async move {
                let _ = admin_stopped.await;
            },
            deadline,
        ));
    }
    mcp_fleet_server::shutdown_signal().await;
    tracing::info!("shutting down: closing listen streams and draining connections");
    handler.shutdown().await;
    let _ = stop_admin.send(());
    serving.await??;
    Ok(())
}

fn options(config: &Config, node_id: String) -> HandlerOptions {
    let options = HandlerOptions::default()
        .node_id(node_id)
        .max_body_bytes(config.max_body_bytes)
        .max_streams(config.max_streams)
        .keepalive(config.keepalive())
        .max_stream_lifetime(config.max_stream_lifetime())
        .shutdown_deadline(Duration::from_secs(config.shutdown_secs));
    if config.allowed_origins.iter().any(|o| o == "*") {
        options.allow_any_origin()
    } else {
        options.allowed_origins(config.allowed_origins.clone())
    }
}

fn init_logging(json: bool) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into());
    let builder = tracing_subscriber::fmt().with_env_filter(filter);
    if json { builder.json().init() } else { builder.init() }
}
