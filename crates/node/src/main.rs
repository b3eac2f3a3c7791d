//! `mcp-fleet`: one replica of a fleet of MCP servers. Parse config → build the handler →
//! serve → wait for a signal → drain with a deadline.

mod admin;
mod app;
mod config;
mod demo;
mod nofile;
mod state;

use clap::Parser;

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
    runtime.enable_all().build()?.block_on(app::run(config, mcp_fleet_server::shutdown_signal()))
}

fn init_logging(json: bool) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into());
    let builder = tracing_subscriber::fmt().with_env_filter(filter);
    if json { builder.json().init() } else { builder.init() }
}
