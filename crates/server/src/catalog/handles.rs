//! Registration handles: change one catalog entry later (update, disable, enable, remove).
//!
//! Every operation swaps the catalog first and then announces the matching list change through
//! the server's notifier: this node's streams hear it at once, the fleet once the bus accepts it
//! (retried by the outbox; see [`crate::notify`]).

use mcp_fleet_protocol::ListKind;
use mcp_fleet_protocol::types::{Prompt, Resource, Tool};

use super::edit::CatalogEdit;
use super::server::McpServer;
use super::task_support::TaskSupport;
use crate::error::ServerError;

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
        self.apply(|e, kind, key| Ok(e.set_enabled(kind, key, false))).await
    }

    /// Show it again.
    pub async fn enable(&self) -> Result<(), ServerError> {
        self.apply(|e, kind, key| Ok(e.set_enabled(kind, key, true))).await
    }

    /// Remove it for good.
    pub async fn remove(&self) -> Result<(), ServerError> {
        self.apply(|e, kind, key| Ok(e.remove(kind, key))).await
    }

    /// Replace a tool's definition (same name), keeping its handler.
    pub async fn update_tool(&self, tool: Tool) -> Result<(), ServerError> {
        self.check_same(ListKind::Tools, &tool.name)?;
        self.apply(|e, _, _| e.update_tool(tool)).await
    }

    /// Require OAuth scopes of this tool's callers (see [`CatalogEdit::require_scopes`]).
    ///
    /// ```
    /// use mcp_fleet_server::{McpServer, types::{CallToolResult, Tool}};
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let server = McpServer::builder("demo", "1").build();
    /// let delete = server.tool(Tool::new("delete", "Deletes a file"), |_c| async { Ok(CallToolResult::text("gone")) });
    /// delete.require_scopes(["files:write"]).await.unwrap();
    /// # });
    /// ```
    pub async fn require_scopes<S: Into<String>>(
        &self,
        scopes: impl IntoIterator<Item = S>,
    ) -> Result<(), ServerError> {
        if self.kind != ListKind::Tools {
            return Err(ServerError::Definition(format!(
                "{:?} {:?} is not a tool; only tools require scopes",
                self.kind, self.key
            )));
        }
        let scopes: Vec<String> = scopes.into_iter().map(Into::into).collect();
        self.apply(|e, _, key| Ok(e.require_scopes(key, scopes))).await
    }

    /// Let this tool's calls become tasks (see [`TaskSupport`]).
    ///
    /// ```
    /// use mcp_fleet_server::{McpServer, catalog::TaskSupport, types::{CallToolResult, Tool}};
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let server = McpServer::builder("demo", "1").build();
    /// let export = server.tool(Tool::new("export", "Exports everything"), |call| async move {
    ///     call.ctx.run_as_task().await; // a task from here on, for clients that support tasks
    ///     Ok(CallToolResult::text("exported"))
    /// });
    /// export.task_support(TaskSupport::Optional).await.unwrap();
    /// # });
    /// ```
    pub async fn task_support(&self, support: TaskSupport) -> Result<(), ServerError> {
        if self.kind != ListKind::Tools {
            return Err(ServerError::Definition(format!(
                "{:?} {:?} is not a tool; only tool calls become tasks",
                self.kind, self.key
            )));
        }
        self.apply(|e, _, key| Ok(e.set_task_support(key, support))).await
    }

    /// Replace a resource's definition (same URI), keeping its reader.
    pub async fn update_resource(&self, resource: Resource) -> Result<(), ServerError> {
        self.check_same(ListKind::Resources, &resource.uri)?;
        self.apply(|e, _, _| Ok(e.update_resource(resource))).await
    }

    /// Replace a prompt's definition (same name), keeping its handler.
    pub async fn update_prompt(&self, prompt: Prompt) -> Result<(), ServerError> {
        self.check_same(ListKind::Prompts, &prompt.name)?;
        self.apply(|e, _, _| Ok(e.update_prompt(prompt))).await
    }

    /// Apply `op` to this entry in one catalog swap; [`ServerError::NotFound`] (and no swap)
    /// when the entry is gone.
    async fn apply(
        &self,
        op: impl FnOnce(&mut CatalogEdit<'_>, ListKind, &str) -> Result<bool, ServerError>,
    ) -> Result<(), ServerError> {
        self.server.edit(|e| match op(e, self.kind, &self.key)? {
            true => Ok(()),
            false => Err(ServerError::NotFound(self.key.clone())),
        })
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
