//! rmcp's calculator (`examples/servers/src/calculator_stdio.rs` and `common/calculator.rs` in
//! modelcontextprotocol/rust-sdk) written with `#[server]`, served over Streamable HTTP: the
//! same two tools, argument types, descriptions and text results.
//!
//! `cargo run -p mcp-fleet-examples --bin calculator`; logs on stderr (`RUST_LOG=debug`).

use mcp_fleet_server::{HandlerOptions, McpServer, server};
use schemars::JsonSchema;
use serde::Deserialize;

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
async fn main() -> mcp_fleet_examples::Result {
    let server = McpServer::builder("calculator", "1.0.0").build();
    server.add_all(Calculator.into_entries())?;
    mcp_fleet_examples::run(server, HandlerOptions::default()).await
}
