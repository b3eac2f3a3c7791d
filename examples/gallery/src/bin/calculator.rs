//! rmcp's calculator (rust-sdk's `calculator_stdio.rs` + `common/calculator.rs`) with `#[server]`,
//! over Streamable HTTP: `cargo run -p mcp-fleet-examples --bin calculator [ADDR]` (`RUST_LOG`).

use mcp_fleet_server::{HandlerOptions, McpServer, create_mcp_handler, server, shutdown_signal};
use schemars::JsonSchema;
use serde::Deserialize;
use tracing_subscriber::EnvFilter;

#[derive(Deserialize, JsonSchema)]
struct SumRequest {
    /// the left hand side number
    a: i32,
    b: i32,
}

#[derive(Deserialize, JsonSchema)]
struct SubRequest {
    /// the left hand side number
    a: i32,
    /// the right hand side number
    b: i32,
}

struct Calculator;

#[server]
impl Calculator {
    /// Calculate the sum of two numbers
    #[tool]
    async fn sum(&self, SumRequest { a, b }: SumRequest) -> String {
        (a + b).to_string()
    }

    /// Calculate the difference of two numbers
    #[tool]
    async fn sub(&self, SubRequest { a, b }: SubRequest) -> String {
        (a - b).to_string()
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt().with_env_filter(EnvFilter::from_default_env()).with_writer(std::io::stderr).init();
    let server = McpServer::builder("calculator", "1.0.0").build();
    server.add_all(Calculator.into_entries())?;
    let handler = create_mcp_handler(server, HandlerOptions::default()).await?;
    let addr = std::env::args().nth(1).or_else(|| std::env::var("LISTEN").ok());
    let listener = tokio::net::TcpListener::bind(addr.as_deref().unwrap_or("127.0.0.1:8080")).await?;
    println!("listening on http://{}/mcp", listener.local_addr()?);
    // Until SIGINT or SIGTERM; then listen streams get their completion result, and the drain.
    Ok(handler.serve_until(listener, shutdown_signal()).await?)
}
