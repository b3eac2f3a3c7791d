//! The server crate's error type.

use mcp_fleet_bus::BusError;

/// Errors of the server framework's API (not wire errors: those are `RpcError`s).
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// The event bus could not publish or connect.
    #[error(transparent)]
    Bus(#[from] BusError),
    /// A tool, resource or prompt definition is invalid.
    #[error("invalid definition: {0}")]
    Definition(String),
    /// A handle refers to an entry that no longer exists.
    #[error("no catalog entry {0:?}")]
    NotFound(String),
    /// Handler options are invalid.
    #[error("invalid handler options: {0}")]
    Options(String),
}
