//! The endpoint: [`McpHandler`], what [`create_mcp_handler`] builds from a server factory and
//! options (the handler's shared state and its background tasks), and its graceful drain.
//!
//! - `handler`: [`McpHandler`], [`create_mcp_handler`] and the state every request shares.
//! - `drain`: [`McpHandler::shutdown`], in the order a graceful stop needs.

mod drain;
mod handler;

pub(crate) use drain::ANSWER_GRACE;
pub use handler::{McpHandler, create_mcp_handler};
