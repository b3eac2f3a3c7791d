//! [`Registration`]: a catalog entry ready to add — a definition with its handler already
//! shared — as the typed API ([`crate::typed`]) builds it. The catalog takes it through
//! [`McpServer::add`](crate::McpServer::add) and [`CatalogEdit::add`](crate::catalog::CatalogEdit::add)
//! and never names the typed layer: the arrow points from `typed` to `catalog`.

use mcp_fleet_protocol::types::{Prompt, ResourceTemplate, Tool};

use super::completer::Completers;
use super::entries::{PromptFn, ResourceFn, ToolFn};
use super::task_support::TaskSupport;
use crate::error::ServerError;

/// A tool, prompt or resource template with its handler, ready to add to a catalog; built by
/// [`typed::tool`](crate::typed::tool), [`typed::prompt`](crate::typed::prompt) and
/// [`typed::template`](crate::typed::template). A definition that could not be built (a
/// non-object argument type, say) carries its error to the `add` that takes it.
///
/// ```
/// use mcp_fleet_server::{McpServer, typed};
/// let server = McpServer::builder("demo", "1").build();
/// let ping = typed::tool("ping", "Answers pong", |_: typed::NoArgs| async { "pong" });
/// server.add(ping).unwrap();
/// ```
pub struct Registration(Result<Registered, ServerError>);

/// What a [`Registration`] adds.
pub(crate) enum Registered {
    Tool { def: Tool, run: ToolFn, task_support: TaskSupport, scopes: Vec<String> },
    Prompt { def: Prompt, get: PromptFn, completers: Completers },
    Template { def: ResourceTemplate, read: ResourceFn, completers: Completers },
}

impl Registration {
    /// A tool whose calls `run` answers.
    pub(crate) fn tool(def: Tool, run: ToolFn, task_support: TaskSupport, scopes: Vec<String>) -> Self {
        Registration(Ok(Registered::Tool { def, run, task_support, scopes }))
    }

    /// A prompt whose gets `get` answers, its arguments completed by `completers`.
    pub(crate) fn prompt(def: Prompt, get: PromptFn, completers: Completers) -> Self {
        Registration(Ok(Registered::Prompt { def, get, completers }))
    }

    /// A resource template whose matching reads `read` answers, its variables completed by
    /// `completers`.
    pub(crate) fn template(def: ResourceTemplate, read: ResourceFn, completers: Completers) -> Self {
        Registration(Ok(Registered::Template { def, read, completers }))
    }

    /// A definition that could not be built: adding it fails with `error`.
    pub(crate) fn failed(error: ServerError) -> Self {
        Registration(Err(error))
    }

    /// The entry, or the error its building met.
    pub(crate) fn into_kind(self) -> Result<Registered, ServerError> {
        self.0
    }

    /// The list it goes into and its key there (name or URI template).
    pub(crate) fn key(&self) -> Option<(mcp_fleet_protocol::ListKind, String)> {
        use mcp_fleet_protocol::ListKind;
        match &self.0 {
            Ok(Registered::Tool { def, .. }) => Some((ListKind::Tools, def.name.clone())),
            Ok(Registered::Prompt { def, .. }) => Some((ListKind::Prompts, def.name.clone())),
            Ok(Registered::Template { def, .. }) => Some((ListKind::ResourceTemplates, def.uri_template.clone())),
            Err(_) => None,
        }
    }
}
