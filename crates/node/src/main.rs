//! `mcp-fleet`: one replica of a fleet of MCP servers. Parse config → install logging (and
//! trace export) → build the handler → serve → wait for a signal → drain with a deadline →
//! flush the last traces.

mod admin;
mod app;
mod audit;
mod auth;
mod catalog;
mod config;
mod demo;
mod nofile;
mod state;
mod telemetry;

use clap::Parser;

use config::Config;

/// mimalloc rather than the system allocator (the `mimalloc` feature, on by default): see the
/// dependency's note in Cargo.toml.
#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let config = Config::parse();
    let telemetry =
        telemetry::init(config.log_json, config.otlp_endpoint.as_ref().map(|url| url.expose()), &config.node_id())?;
    let result = run(config, telemetry.audit_logger());
    // After the runtime is gone: the exporter's last batch leaves from its own thread.
    telemetry.shutdown();
    result
}

fn run(
    config: Config,
    audit_logger: Option<opentelemetry_sdk::logs::SdkLogger>,
) -> Result<(), Box<dyn std::error::Error>> {
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
    runtime.enable_all().build()?.block_on(app::run(config, audit_logger, mcp_fleet_server::shutdown_signal()))
}
