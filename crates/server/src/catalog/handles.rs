//! Registration handles: change one catalog entry later (update, disable, enable, remove).
//!
//! Every operation swaps the catalog first and then announces the matching list change through
//! the server's notifier: this node's streams hear it at once, the fleet once the bus accepts it
//! (retried by the outbox; see [`crate::notify`]).

use mcp_fleet_bus::EventKind;
use mcp_fleet_protocol::types::{Prompt, Resource, Tool};

use super::server::McpServer;
use crate::error::ServerError;

/// Which catalog list an entry lives in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ListKind {
    /// Tools.
    Tools,
    /// Static resources.
    Resources,
    /// Resource templates (their changes are resource-list changes).
    Templates,
    /// Prompts.
    Prompts,
}

impl ListKind {
    /// The change event published when this list changes.
    pub fn event_kind(self) -> EventKind {
        match self {
            ListKind::Tools => EventKind::ToolsListChanged,
            ListKind::Resources | ListKind::Templates => EventKind::ResourcesListChanged,
            ListKind::Prompts => EventKind::PromptsListChanged,
        }
    }
}

/// A handle on one registered entry.
///
/// ```
/// use mcp_fleet_server::{create_mcp_handler, HandlerOptions, McpServer, types::{CallToolResult, Tool}};
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let server = McpServer::builder("demo", "1").build();
/// let search = server.tool(Tool::new("search", "Searches"), |_c| async { Ok(CallToolResult::text("…")) });
/// let _handler = create_mcp_handler(server, HandlerOptions::default()).await.unwrap();
/// // Swaps the catalog, then tells every listen stream in the fleet that tools changed.
/// search.update_tool(Tool::new("search", "Searches orders and invoices")).await.unwrap();
/// search.disable().await.unwrap();
/// # });
/// ```
#[derive(Clone)]
pub struct EntryHandle {
    server: McpServer,
    kind: ListKind,
    key: String,
}

impl EntryHandle {
    pub(crate) fn new(server: McpServer, kind: ListKind, key: String) -> Self {
        EntryHandle { server, kind, key }
    }

    /// The entry's name (tools, prompts), URI (resources) or URI template.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// Hide the entry from lists and calls.
    pub async fn disable(&self) -> Result<(), ServerError> {
        self.apply(|e, kind, key| e.set_enabled(kind, key, false)).await
    }

    /// Show it again.
    pub async fn enable(&self) -> Result<(), ServerError> {
        self.apply(|e, kind, key| e.set_enabled(kind, key, true)).await
    }

    /// Remove it for good.
    pub async fn remove(&self) -> Result<(), ServerError> {
        self.apply(|e, kind, key| e.remove(kind, key)).await
    }

    /// Replace a tool's definition (same name), keeping its handler.
    pub async fn update_tool(&self, tool: Tool) -> Result<(), ServerError> {
        self.check_same(ListKind::Tools, &tool.name)?;
        let mut result = Ok(false);
        let touched = self.server.swap(|e| result = e.update_tool(tool));
        self.finish(result?, &touched).await
    }

    /// Replace a resource's definition (same URI), keeping its reader.
    pub async fn update_resource(&self, resource: Resource) -> Result<(), ServerError> {
        self.check_same(ListKind::Resources, &resource.uri)?;
        let mut found = false;
        let touched = self.server.swap(|e| found = e.update_resource(resource));
        self.finish(found, &touched).await
    }

    /// Replace a prompt's definition (same name), keeping its handler.
    pub async fn update_prompt(&self, prompt: Prompt) -> Result<(), ServerError> {
        self.check_same(ListKind::Prompts, &prompt.name)?;
        let mut found = false;
        let touched = self.server.swap(|e| found = e.update_prompt(prompt));
        self.finish(found, &touched).await
    }

    async fn apply(
        &self,
        op: impl FnOnce(&mut super::server::CatalogEdit<'_>, ListKind, &str) -> bool,
    ) -> Result<(), ServerError> {
        let mut found = false;
        let touched = self.server.swap(|e| found = op(e, self.kind, &self.key));
        self.finish(found, &touched).await
    }

    async fn finish(&self, found: bool, touched: &[ListKind]) -> Result<(), ServerError> {
        if !found {
            return Err(ServerError::NotFound(self.key.clone()));
        }
        self.server.announce(touched);
        Ok(())
    }

    fn check_same(&self, kind: ListKind, key: &str) -> Result<(), ServerError> {
        if self.kind != kind || self.key != key {
            return Err(ServerError::Definition(format!(
                "handle for {:?} {:?} cannot update {kind:?} {key:?}; rename by remove and register",
                self.kind, self.key
            )));
        }
        Ok(())
    }
}
