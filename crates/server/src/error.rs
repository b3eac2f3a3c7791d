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
    /// A typed registration names an entry its list already has (the typed API never
    /// replaces one silently; the untyped `add_*` methods do, for dynamic catalogs).
    #[error("{} {key:?} is already registered; give it another name, or update it through its EntryHandle", kind_name(*.kind))]
    Duplicate {
        /// The list.
        kind: mcp_fleet_protocol::ListKind,
        /// The name, URI or URI template already taken.
        key: String,
    },
    /// A handle refers to an entry that no longer exists.
    #[error("no catalog entry {0:?}")]
    NotFound(String),
    /// Handler options are invalid.
    #[error("invalid handler options: {0}")]
    Options(String),
}

fn kind_name(kind: mcp_fleet_protocol::ListKind) -> &'static str {
    use mcp_fleet_protocol::ListKind;
    match kind {
        ListKind::Tools => "tool",
        ListKind::Resources => "resource",
        ListKind::ResourceTemplates => "resource template",
        ListKind::Prompts => "prompt",
    }
}
