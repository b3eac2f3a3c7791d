//! The mcp-fleet server framework: serve an MCP (revision 2026-07-28) server over Streamable
//! HTTP from any number of replicas, with change notifications fanned out over a shared
//! [`ServerEventBus`](mcp_fleet_bus::ServerEventBus).
//!
//! - [`create_mcp_handler`] builds an [`McpHandler`] from a [`ServerFactory`] (usually an
//!   [`McpServer`]) and [`HandlerOptions`].
//! - [`catalog`]: the server definition — tools, resources, templates, prompts — and
//!   registration handles that update it and publish change events.
//! - [`notify`]: `handler.notify().tools_changed()` and friends.
//! - `methods`: one file per method family; `listen`: the `subscriptions/listen` router and
//!   streams; `http`: the hyper service and accept loop; `shutdown`: the graceful drain.
//!
//! ```no_run
//! use mcp_fleet_server::{create_mcp_handler, HandlerOptions, McpServer, types::{CallToolResult, Tool}};
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let server = McpServer::builder("demo", "1.0.0").build();
//! server.tool(Tool::new("hello", "Says hello"), |_call| async { Ok(CallToolResult::text("hello")) });
//! let handler = create_mcp_handler(server, HandlerOptions::default()).await?;
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
//! let serving = tokio::spawn({ let h = handler.clone(); async move { h.serve(listener).await } });
//! handler.notify().tools_changed().await?;   // every listen stream on every replica hears it
//! handler.shutdown().await;
//! serving.await??;
//! # Ok(()) }
//! ```

mod bus_url;
pub mod catalog;
pub mod context;
pub mod error;
mod handler;
mod http;
pub mod listen;
mod methods;
pub mod metrics;
pub mod notify;
pub mod outcome;
mod shutdown;

pub use bus_url::connect_bus;
pub use catalog::{CachePolicy, EntryHandle, ListKind, McpServer, PromptGet, ResourceRead, ToolCall};
pub use context::{CallContext, Principal, RequestContext};
pub use error::ServerError;
pub use handler::{
    Authenticator, HandlerOptions, McpHandler, ResponseMode, ServerFactory, Unauthorized, create_mcp_handler,
};
pub use http::{CallStream, ResponseBody};
pub use listen::ListenLimits;
pub use methods::completion::{CompletionRef, CompletionRequest, CompletionValues};
pub use notify::Notifier;
pub use outcome::{InputRequired, Outcome};

/// Wire types and rules, re-exported from `mcp-fleet-protocol`.
pub use mcp_fleet_protocol as protocol;
/// Result and definition types (tools, content, resources, prompts).
pub use mcp_fleet_protocol::types;

/// The README's code is compiled as a doctest, so the embedding example cannot rot.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
struct ReadmeDoctests;
