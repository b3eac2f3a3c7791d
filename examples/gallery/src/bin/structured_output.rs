//! rmcp's `examples/servers/src/structured_output.rs` (modelcontextprotocol/rust-sdk) with
//! `#[server]`, over Streamable HTTP: tools returning `Json<T>` (structured content, with the
//! `outputSchema` derived from `T` and every result checked against it), a failure as an
//! `isError` result, a plain-text tool, and the schemas printed to stderr at start.
//!
//! `cargo run -p mcp-fleet-examples --bin structured_output`

use http_body_util::BodyExt;
use mcp_fleet_server::{HandlerOptions, McpHandler, McpServer, create_mcp_handler, server, typed::Json};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

#[derive(Deserialize, JsonSchema)]
struct WeatherRequest {
    city: String,
    units: Option<String>,
}

#[derive(Serialize, JsonSchema)]
struct WeatherResponse {
    temperature: f64,
    description: String,
    humidity: u8,
    wind_speed: f64,
}

#[derive(Deserialize, JsonSchema)]
struct CalculationRequest {
    numbers: Vec<i32>,
    operation: String,
}

#[derive(Serialize, JsonSchema)]
struct CalculationResult {
    result: f64,
    operation: String,
    input_count: usize,
}

struct StructuredOutputServer;

#[server]
impl StructuredOutputServer {
    /// Get current weather for a city
    #[tool]
    async fn get_weather(&self, request: WeatherRequest) -> Result<Json<WeatherResponse>, String> {
        let temperature = match request.units.as_deref() {
            Some("fahrenheit") => 72.5,
            _ => 22.5, // celsius by default
        };
        let description = format!("Partly cloudy in {}", request.city);
        Ok(Json(WeatherResponse { temperature, description, humidity: 65, wind_speed: 12.5 }))
    }

    /// Perform calculations on numbers
    #[tool]
    async fn calculate(
        &self,
        CalculationRequest { numbers, operation }: CalculationRequest,
    ) -> Result<Json<CalculationResult>, String> {
        if numbers.is_empty() {
            return Err("No numbers provided".into());
        }
        let sum = f64::from(numbers.iter().sum::<i32>());
        let result = match operation.as_str() {
            "sum" => sum,
            "average" => sum / numbers.len() as f64,
            "product" => f64::from(numbers.iter().product::<i32>()),
            _ => return Err(format!("Unknown operation: {operation}")),
        };
        Ok(Json(CalculationResult { result, operation, input_count: numbers.len() }))
    }

    /// Get server information
    #[tool]
    async fn get_info(&self) -> &'static str {
        "Structured Output Example Server v1.0"
    }
}

/// Print each tool's output schema, read with an in-process `tools/list` (the catalog has no
/// accessor for its definitions).
async fn print_schemas(handler: &McpHandler) -> mcp_fleet_examples::Result {
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}});
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": meta}});
    let request = http::Request::post("/mcp")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/list")
        .body(body.to_string())?;
    let reply = handler.handle(request).await.into_body().collect().await?.to_bytes();
    let list: Value = serde_json::from_slice(&reply)?;
    for tool in list["result"]["tools"].as_array().into_iter().flatten() {
        eprintln!("{}: {}", tool["name"], tool["description"]);
        match tool.get("outputSchema") {
            Some(schema) => eprintln!("  Output schema: {schema:#}"),
            None => eprintln!("  Output: unstructured text"),
        }
    }
    Ok(())
}

#[tokio::main]
async fn main() -> mcp_fleet_examples::Result {
    mcp_fleet_examples::init_tracing();
    let server = McpServer::builder("structured-output", "1.0.0").build();
    server.add_all(StructuredOutputServer.into_entries())?;
    let handler = create_mcp_handler(server, HandlerOptions::default()).await?;
    print_schemas(&handler).await?;
    let (listener, _) = mcp_fleet_examples::bind(&mcp_fleet_examples::listen_addr()).await?;
    mcp_fleet_examples::serve(handler, listener).await
}
