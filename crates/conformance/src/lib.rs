//! The fixtures of the official MCP conformance suite (`@modelcontextprotocol/conformance`,
//! revisions 2026-07-28 and 2025-11-25), served with mcp-fleet — and the framework's most
//! complete example: every kind of catalog entry, request-scoped progress and logs, a
//! capability gate, `x-mcp-header`, change notifications, and multi round-trip requests (MRTR)
//! with signed `requestState`. Built only on the public API of `mcp-fleet-server`.
//!
//! The names, schemas and outputs are what the suite sends and checks (the catalog in
//! `docs/spec-digest/conformance-fixtures.md` §3); the suite's own logic lives elsewhere.
//!
//! - `tools`: content-type tools, progress and logging, the capability-gated tool, the
//!   JSON Schema 2020-12 and `x-mcp-header` tools, and the change triggers.
//! - `mrtr`: the eight `test_input_required_result_*` tools and the MRTR prompt.
//! - `client_input`: the 2025-11-25 sampling and elicitation tools, written with MRTR too (the
//!   framework turns their input requests into server→client requests for 2025 sessions).
//! - `resources`: static resources and the `test://template/{id}/data` template.
//! - `prompts`: prompts and `completion/complete`.
//! - `typed`: a calculator and a structured lookup written with the typed API and `#[server]`
//!   (not suite fixtures: they put derived schemas in front of the suite's wire-schema checks).
//! - `tasks`: the tasks extension's fixtures (`greet`, `slow_compute`, `failing_job`, …): tools
//!   whose calls become tasks in the fleet's task store.
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let options = mcp_fleet_conformance::handler_options(mcp_fleet_conformance::DEV_REQUEST_STATE_KEY.to_vec());
//! let handler = mcp_fleet_conformance::fixture_handler(options).await?;
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8765").await?;
//! handler.serve(listener).await?;
//! # Ok(()) }
//! ```

mod client_input;
mod mrtr;
mod prompts;
mod resources;
mod tasks;
mod tools;
mod typed;

use mcp_fleet_server::{HandlerOptions, McpHandler, McpServer, ServerError, create_mcp_handler};

/// The development HMAC key for MRTR `requestState` (≥ 32 bytes, as the codec requires).
/// Fine for a conformance run on loopback; anything else must pass its own key, the same on
/// every replica.
pub const DEV_REQUEST_STATE_KEY: &[u8] = b"mcp-fleet-conformance-dev-key--not-for-production";

/// A 1×1 PNG, base64 — the image of every image fixture.
pub const PNG_BASE64: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";

/// A tiny WAV, base64 — the audio fixture.
pub const WAV_BASE64: &str = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=";

/// The fixture server: every tool, resource, template, prompt and the completion handler,
/// except the change triggers, which need a handler's notifier
/// (see [`register_change_triggers`]).
///
/// Registration order is listing order: `test_simple_text` is the first tool and
/// `test://static-text` the first resource, as the suite expects.
pub fn fixture_server() -> Result<McpServer, ServerError> {
    // Title, description, website and icon: the suite's wire-schema check sees every field.
    let server = McpServer::builder("mcp-fleet-conformance", env!("CARGO_PKG_VERSION"))
        .title("mcp-fleet conformance fixtures")
        .description("The fixture server of the official MCP conformance suite")
        .website_url("https://example.invalid/mcp-fleet")
        .icon(icon())
        .instructions("Fixtures of the MCP conformance suite; every tool and prompt is a test case.")
        .build();
    tools::register(&server)?;
    mrtr::register(&server);
    client_input::register(&server);
    resources::register(&server)?;
    prompts::register(&server);
    tasks::register(&server);
    typed::register(&server)?;
    Ok(server)
}

pub use tools::register_change_triggers;

/// The fixtures' icon: the 1×1 PNG as a `data:` URI (no network needed to show it).
pub(crate) fn icon() -> mcp_fleet_server::types::Icon {
    mcp_fleet_server::types::Icon {
        mime_type: Some("image/png".into()),
        sizes: vec!["1x1".into()],
        theme: Some(mcp_fleet_server::types::IconTheme::Light),
        ..mcp_fleet_server::types::Icon::new(format!("data:image/png;base64,{PNG_BASE64}"))
    }
}

/// Options for serving the fixtures: the defaults, with MRTR `requestState` signed by `key`.
pub fn handler_options(request_state_key: Vec<u8>) -> HandlerOptions {
    HandlerOptions::default().request_state_key(request_state_key)
}

/// Build the fixture server, its handler, and the change triggers publishing through that
/// handler's bus (so a trigger reaches listen streams on every replica sharing the bus).
pub async fn fixture_handler(options: HandlerOptions) -> Result<McpHandler, ServerError> {
    let server = fixture_server()?;
    let handler = create_mcp_handler(server.clone(), options).await?;
    register_change_triggers(&server, handler.notify());
    Ok(handler)
}
