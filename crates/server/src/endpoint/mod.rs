//! The endpoint: [`McpHandler`], what [`create_mcp_handler`] builds from a server factory and
//! options (the handler's shared state and its background tasks), and its graceful drain.
//!
//! - `handler`: [`McpHandler`], [`create_mcp_handler`] and the state every request shares.
//! - `serving`: [`McpHandler::serve`] and [`McpHandler::handle`] (the HTTP side, `crate::http`,
//!   answers), the handler as a tower and hyper `Service`, and [`McpHandler::draining`].
//! - `drain`: [`McpHandler::shutdown`], in the order a graceful stop needs.

mod drain;
mod handler;
mod serving;

pub use handler::{McpHandler, create_mcp_handler};
