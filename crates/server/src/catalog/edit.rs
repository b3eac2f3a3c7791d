//! [`CatalogEdit`]: the edits one catalog swap applies — additions, updates, enabling and
//! disabling, removals — and which lists they touched, so each touched list is announced once.

use mcp_fleet_protocol::ListKind;
use mcp_fleet_protocol::headers::param_headers;
use mcp_fleet_protocol::schema::ToolSchemas;
use mcp_fleet_protocol::types::{
    CacheHint, CallToolResult, GetPromptResult, Prompt, Resource, ResourceContents, ResourceTemplate, Tool,
};
use serde_json::Value;

use super::completer::Completers;
use super::entries::{PromptEntry, ResourceEntry, TemplateEntry, ToolEntry, ToolFn, definition_revision};
use super::entry_handler::{Handler, PromptGet, ResourceRead, ToolCall, shared};
use super::listing::Listing;
use super::registration::{Registered, Registration};
use super::server::Catalog;
use super::task_support::TaskSupport;
use super::template::UriTemplate;
use crate::error::ServerError;

/// Edits applied together by [`McpServer::batch`](crate::McpServer::batch): one catalog
/// swap, one announcement per list touched.
pub struct CatalogEdit<'a> {
    pub(super) catalog: &'a mut Catalog,
    pub(super) touched: Vec<ListKind>,
}

impl CatalogEdit<'_> {
    /// Add or replace a tool (its `x-mcp-header` annotations are validated).
    pub fn add_tool(&mut self, tool: Tool, handler: impl Handler<ToolCall, CallToolResult>) -> Result<(), ServerError> {
        self.add_tool_requiring(tool, None, handler)
    }

    /// Add or replace a tool that needs client capabilities (e.g. `{"sampling":{}}`): calls
    /// from clients that did not declare them get 400 `-32021` before the handler runs.
    pub fn add_tool_requiring(
        &mut self,
        tool: Tool,
        required: Option<Value>,
        handler: impl Handler<ToolCall, CallToolResult>,
    ) -> Result<(), ServerError> {
        let entry = tool_entry(tool, required, shared(handler))?;
        self.catalog.tools.upsert(entry);
        self.touch(ListKind::Tools);
        Ok(())
    }

    /// Add an entry built by the typed API ([`typed::tool`](crate::typed::tool),
    /// [`typed::prompt`](crate::typed::prompt), [`typed::template`](crate::typed::template)).
    /// Unlike the `add_*` methods, which replace an entry of the same name, a name (or URI
    /// template) already in its list is a registration error, [`ServerError::Duplicate`].
    ///
    /// ```
    /// use mcp_fleet_server::{McpServer, ServerError, typed};
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let server = McpServer::builder("demo", "1").build();
    /// let added = server.batch(|edit| {
    ///     edit.add(typed::tool("ping", "Answers pong", |_: typed::NoArgs| async { "pong" }))?;
    ///     edit.add(typed::tool("ping", "Again", |_: typed::NoArgs| async { "pong" }))
    /// }).await;
    /// assert!(matches!(added, Err(ServerError::Duplicate { .. })));
    /// # });
    /// ```
    pub fn add(&mut self, entry: impl Into<Registration>) -> Result<(), ServerError> {
        match entry.into().into_kind()? {
            Registered::Tool { def, run, task_support, scopes } => {
                refuse_duplicate(&self.catalog.tools, ListKind::Tools, &def.name)?;
                let entry = ToolEntry { task_support, required_scopes: scopes, ..tool_entry(def, None, run)? };
                self.catalog.tools.upsert(entry);
                self.touch(ListKind::Tools);
            }
            Registered::Prompt { def, get, completers } => {
                refuse_duplicate(&self.catalog.prompts, ListKind::Prompts, &def.name)?;
                let revision = definition_revision(&def);
                self.catalog.prompts.upsert(PromptEntry { revision, def, enabled: true, get, completers });
                self.touch(ListKind::Prompts);
            }
            Registered::Template { def, read, completers } => {
                refuse_duplicate(&self.catalog.templates, ListKind::ResourceTemplates, &def.uri_template)?;
                let pattern =
                    UriTemplate::parse(&def.uri_template).map_err(|e| ServerError::Definition(e.to_string()))?;
                let revision = definition_revision(&def);
                let entry = TemplateEntry { revision, def, enabled: true, pattern, read, completers };
                self.catalog.templates.upsert(entry);
                self.touch(ListKind::ResourceTemplates);
            }
        }
        Ok(())
    }

    /// Add or replace a static resource and the function that reads it.
    pub fn add_resource(&mut self, resource: Resource, reader: impl Handler<ResourceRead, Vec<ResourceContents>>) {
        self.catalog.resources.upsert(ResourceEntry {
            revision: definition_revision(&resource),
            def: resource,
            enabled: true,
            read: shared(reader),
        });
        self.touch(ListKind::Resources);
    }

    /// Add or replace a resource template (RFC 6570 level 1) and the function that reads
    /// matching URIs.
    pub fn add_resource_template(
        &mut self,
        template: ResourceTemplate,
        reader: impl Handler<ResourceRead, Vec<ResourceContents>>,
    ) -> Result<(), ServerError> {
        let pattern = UriTemplate::parse(&template.uri_template).map_err(|e| ServerError::Definition(e.to_string()))?;
        self.catalog.templates.upsert(TemplateEntry {
            revision: definition_revision(&template),
            def: template,
            enabled: true,
            pattern,
            read: shared(reader),
            completers: Completers::default(),
        });
        self.touch(ListKind::ResourceTemplates);
        Ok(())
    }

    /// Add or replace a prompt; missing required arguments are refused with `-32602` before
    /// its handler runs.
    pub fn add_prompt(&mut self, prompt: Prompt, handler: impl Handler<PromptGet, GetPromptResult>) {
        self.catalog.prompts.upsert(PromptEntry {
            revision: definition_revision(&prompt),
            def: prompt,
            enabled: true,
            get: shared(handler),
            completers: Completers::default(),
        });
        self.touch(ListKind::Prompts);
    }

    /// Replace a tool's definition, keeping its handler; `false` if it does not exist.
    pub fn update_tool(&mut self, tool: Tool) -> Result<bool, ServerError> {
        let param_headers = tool_param_headers(&tool)?;
        let schemas = tool_schemas(&tool)?;
        let name = tool.name.clone();
        let revision = definition_revision(&tool);
        let found = self.catalog.tools.modify(&name, |e| {
            e.revision = revision;
            e.def = tool;
            e.schemas = schemas;
            e.param_headers = param_headers;
        });
        Ok(self.touch_if(found, ListKind::Tools))
    }

    /// Require OAuth scopes of the callers of a tool: `tools/list` hides it from principals
    /// without every one of them, and `tools/call` answers them 403 with an
    /// `insufficient_scope` challenge naming the scopes (so a client can step up). An empty
    /// list lifts the requirement; re-adding the tool resets it. `false` if there is no such
    /// tool.
    pub fn require_scopes<S: Into<String>>(&mut self, tool: &str, scopes: impl IntoIterator<Item = S>) -> bool {
        let scopes: Vec<String> = scopes.into_iter().map(Into::into).collect();
        let found = self.catalog.tools.modify(tool, |e| e.required_scopes = scopes);
        self.touch_if(found, ListKind::Tools)
    }

    /// Let a tool's calls become tasks (see [`TaskSupport`]); re-adding the tool resets it to
    /// [`TaskSupport::Forbidden`]. Not announced: lists do not show it. `false` if there is no
    /// such tool.
    pub fn set_task_support(&mut self, tool: &str, support: TaskSupport) -> bool {
        self.catalog.tools.modify(tool, |e| e.task_support = support)
    }

    /// Say how a tool's results may be cached (`ttlMs` and `cacheScope`, the spec's
    /// `CacheableResult` semantics): [`CacheScope::Public`](mcp_fleet_protocol::types::CacheScope::Public)
    /// results carry no user-specific data and may be shared by every caller,
    /// `Private` ones only within one authorization context, and `ttl_ms: 0` means never
    /// reuse one. Interceptors see it as [`ToolInvocation::cache_hint`](crate::intercept::ToolInvocation::cache_hint)
    /// ([`ResultCache`](crate::intercept::ResultCache) honours it); without one a tool's results are
    /// private (CACHE-6). Re-adding the tool resets it. Not on the wire: `tools/call` results
    /// are not cacheable results in the 2026-07-28 schema. `false` if there is no such tool.
    ///
    /// ```
    /// use mcp_fleet_server::McpServer;
    /// use mcp_fleet_server::types::{CacheHint, CacheScope, CallToolResult, Tool};
    /// # async fn demo() -> Result<(), mcp_fleet_server::ServerError> {
    /// let server = McpServer::builder("demo", "1").build();
    /// server.tool(Tool::new("weather", "Today's weather"), |_c| async { Ok(CallToolResult::text("sunny")) });
    /// let public = CacheHint { ttl_ms: 60_000, scope: CacheScope::Public };
    /// server.batch(|e| Ok(e.set_cache_hint("weather", public))).await?;
    /// # Ok(()) }
    /// ```
    pub fn set_cache_hint(&mut self, tool: &str, hint: CacheHint) -> bool {
        self.catalog.tools.modify(tool, |e| e.cache_hint = Some(hint))
    }

    /// Replace a resource's definition, keeping its reader; `false` if it does not exist.
    pub fn update_resource(&mut self, resource: Resource) -> bool {
        let uri = resource.uri.clone();
        let revision = definition_revision(&resource);
        let found = self.catalog.resources.modify(&uri, |e| (e.def, e.revision) = (resource, revision));
        self.touch_if(found, ListKind::Resources)
    }

    /// Replace a prompt's definition, keeping its handler; `false` if it does not exist.
    pub fn update_prompt(&mut self, prompt: Prompt) -> bool {
        let name = prompt.name.clone();
        let revision = definition_revision(&prompt);
        let found = self.catalog.prompts.modify(&name, |e| (e.def, e.revision) = (prompt, revision));
        self.touch_if(found, ListKind::Prompts)
    }

    /// Enable or disable an entry; `false` if it does not exist.
    pub fn set_enabled(&mut self, kind: ListKind, key: &str, on: bool) -> bool {
        let found = match kind {
            ListKind::Tools => self.catalog.tools.set_enabled(key, on),
            ListKind::Resources => self.catalog.resources.set_enabled(key, on),
            ListKind::ResourceTemplates => self.catalog.templates.set_enabled(key, on),
            ListKind::Prompts => self.catalog.prompts.set_enabled(key, on),
        };
        self.touch_if(found, kind)
    }

    /// Remove an entry; `false` if it does not exist.
    pub fn remove(&mut self, kind: ListKind, key: &str) -> bool {
        let found = match kind {
            ListKind::Tools => self.catalog.tools.remove(key),
            ListKind::Resources => self.catalog.resources.remove(key),
            ListKind::ResourceTemplates => self.catalog.templates.remove(key),
            ListKind::Prompts => self.catalog.prompts.remove(key),
        };
        self.touch_if(found, kind)
    }

    /// Remove every entry of `kind` (a reload that rebuilds the list from its source);
    /// returns how many there were. Announced only if the list ends up different.
    ///
    /// ```
    /// use mcp_fleet_server::{catalog::ListKind, McpServer, ServerError, types::{CallToolResult, Tool}};
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let server = McpServer::builder("demo", "1").build();
    /// let _old = server.tool(Tool::new("v1", "The old tool"), |_c| async { Ok(CallToolResult::text("1")) });
    /// let removed = server
    ///     .batch(|edit| {
    ///         let removed = edit.clear(ListKind::Tools);
    ///         edit.add_tool(Tool::new("v2", "The new tool"), |_c| async { Ok(CallToolResult::text("2")) })?;
    ///         Ok::<_, ServerError>(removed)
    ///     })
    ///     .await
    ///     .unwrap();
    /// assert_eq!(removed, 1);
    /// # });
    /// ```
    pub fn clear(&mut self, kind: ListKind) -> usize {
        let keys = self.keys(kind);
        keys.iter().filter(|key| self.remove(kind, key)).count()
    }

    /// The keys (names, URIs, URI templates) of every entry of `kind`, enabled or not, in order.
    pub fn keys(&self, kind: ListKind) -> Vec<String> {
        match kind {
            ListKind::Tools => keys_of(&self.catalog.tools),
            ListKind::Resources => keys_of(&self.catalog.resources),
            ListKind::ResourceTemplates => keys_of(&self.catalog.templates),
            ListKind::Prompts => keys_of(&self.catalog.prompts),
        }
    }

    fn touch(&mut self, kind: ListKind) {
        self.touched.push(kind);
    }

    fn touch_if(&mut self, found: bool, kind: ListKind) -> bool {
        if found {
            self.touch(kind);
        }
        found
    }
}

/// A tool's catalog entry: its schema checked and compiled, its `x-mcp-header` annotations
/// validated.
fn tool_entry(tool: Tool, required: Option<Value>, run: ToolFn) -> Result<ToolEntry, ServerError> {
    if tool.input_schema.get("type").and_then(Value::as_str) != Some("object") {
        return Err(ServerError::Definition(format!(
            "tool {:?}: inputSchema must have \"type\": \"object\"",
            tool.name
        )));
    }
    Ok(ToolEntry {
        param_headers: tool_param_headers(&tool)?,
        schemas: tool_schemas(&tool)?,
        revision: definition_revision(&tool),
        def: tool,
        enabled: true,
        required_capabilities: required,
        required_scopes: Vec::new(),
        task_support: TaskSupport::default(),
        cache_hint: None,
        run,
    })
}

/// [`ServerError::Duplicate`] when `key` is already in `listing`, enabled or not.
fn refuse_duplicate<T: super::entries::Listed + Clone>(
    listing: &Listing<T>,
    kind: ListKind,
    key: &str,
) -> Result<(), ServerError> {
    match listing.contains(key) {
        true => Err(ServerError::Duplicate { kind, key: key.to_owned() }),
        false => Ok(()),
    }
}

fn keys_of<T: super::entries::Listed + Clone>(listing: &Listing<T>) -> Vec<String> {
    listing.all().map(|e| e.key().to_owned()).collect()
}

fn tool_param_headers(tool: &Tool) -> Result<Vec<mcp_fleet_protocol::headers::ParamHeader>, ServerError> {
    param_headers(&tool.input_schema).map_err(|e| ServerError::Definition(format!("tool {:?}: {e}", tool.name)))
}

/// Compile a tool's schemas once, here, for every call the definition will serve.
fn tool_schemas(tool: &Tool) -> Result<ToolSchemas, ServerError> {
    ToolSchemas::compile(&tool.input_schema, tool.output_schema.as_ref())
        .map_err(|e| ServerError::Definition(format!("tool {:?}: {e}", tool.name)))
}
