//! [`McpServer`]: the server definition a handler serves — identity, instructions, cache
//! policy and a catalog of tools, resources, templates and prompts.
//!
//! The catalog is copy-on-write behind an [`ArcSwap`]: requests read a consistent snapshot
//! without locking; a change (registration, handle update, batch) builds the new catalog,
//! swaps it in atomically *first*, and only then publishes the matching change event, so a
//! client that re-lists after the notification sees the new catalog.

use std::future::Future;
use std::sync::{Arc, Mutex, OnceLock};

use arc_swap::ArcSwap;
use mcp_fleet_bus::EventKind;
use mcp_fleet_protocol::RpcError;
use mcp_fleet_protocol::headers::param_headers;
use mcp_fleet_protocol::types::{
    CacheHint, CacheScope, CallToolResult, GetPromptResult, Implementation, Prompt, Resource, ResourceContents,
    ResourceTemplate, Tool,
};
use serde_json::{Value, json};

use super::entries::{PromptEntry, PromptGet, ResourceEntry, ResourceRead, TemplateEntry, ToolCall, ToolEntry, boxed};
use super::handles::{EntryHandle, ListKind};
use super::listing::Listing;
use super::template::UriTemplate;
use crate::error::ServerError;
use crate::methods::completion::{CompletionFn, CompletionRequest, CompletionValues};
use crate::notify::Notifier;
use crate::outcome::Outcome;

/// The catalog snapshot requests are served from.
#[derive(Clone, Default)]
pub(crate) struct Catalog {
    pub(crate) tools: Listing<ToolEntry>,
    pub(crate) resources: Listing<ResourceEntry>,
    pub(crate) templates: Listing<TemplateEntry>,
    pub(crate) prompts: Listing<PromptEntry>,
    pub(crate) completion: Option<CompletionFn>,
}

/// Cache hints per cacheable result (CACHE-1). Defaults: discover 10 min public, lists and
/// reads 0 ms private (never wrong; raise them when your catalog is the same for everyone).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CachePolicy {
    /// `server/discover`.
    pub discover: CacheHint,
    /// `tools/list`, `prompts/list`, `resources/list`, `resources/templates/list`.
    pub lists: CacheHint,
    /// `resources/read`.
    pub reads: CacheHint,
}

impl Default for CachePolicy {
    fn default() -> Self {
        CachePolicy {
            discover: CacheHint { ttl_ms: 600_000, scope: CacheScope::Public },
            lists: CacheHint::NONE,
            reads: CacheHint::NONE,
        }
    }
}

/// A server definition. Cheap to clone (an `Arc`); clones share one catalog.
///
/// ```
/// use mcp_fleet_server::{McpServer, types::{Tool, CallToolResult}};
/// let server = McpServer::builder("demo", "1.0.0").instructions("Say hello.").build();
/// let hello = server.tool(Tool::new("hello", "Greets"), |_call| async { Ok(CallToolResult::text("hi")) });
/// assert_eq!(hello.key(), "hello");
/// ```
#[derive(Clone)]
pub struct McpServer {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub(crate) info: Arc<Value>,
    pub(crate) instructions: Option<String>,
    pub(crate) cache: CachePolicy,
    pub(crate) catalog: ArcSwap<Catalog>,
    /// Serializes copy-on-write edits so two concurrent edits never lose one another.
    writer: Mutex<()>,
    notifier: OnceLock<Notifier>,
}

/// Builds an [`McpServer`].
pub struct McpServerBuilder {
    info: Implementation,
    instructions: Option<String>,
    cache: CachePolicy,
}

impl McpServerBuilder {
    /// Instructions for the model, returned by `server/discover`.
    pub fn instructions(mut self, text: impl Into<String>) -> Self {
        self.instructions = Some(text.into());
        self
    }

    /// Cache hints for discover, lists and reads.
    pub fn cache_policy(mut self, cache: CachePolicy) -> Self {
        self.cache = cache;
        self
    }

    /// Build the server with an empty catalog.
    pub fn build(self) -> McpServer {
        McpServer {
            inner: Arc::new(Inner {
                info: Arc::new(serde_json::to_value(&self.info).unwrap_or_else(|_| json!({}))),
                instructions: self.instructions,
                cache: self.cache,
                catalog: ArcSwap::from_pointee(Catalog::default()),
                writer: Mutex::new(()),
                notifier: OnceLock::new(),
            }),
        }
    }
}

/// Edits applied together by [`McpServer::batch`]: one catalog swap, one event per list kind.
pub struct CatalogEdit<'a> {
    catalog: &'a mut Catalog,
    touched: Vec<ListKind>,
}

impl McpServer {
    /// Start building a server called `name` at `version` (its `serverInfo`).
    pub fn builder(name: impl Into<String>, version: impl Into<String>) -> McpServerBuilder {
        McpServerBuilder { info: Implementation::new(name, version), instructions: None, cache: CachePolicy::default() }
    }

    /// Publish this server's catalog changes through `notifier` (done automatically when the
    /// server itself is passed to `create_mcp_handler`). The first call wins.
    pub fn publish_changes_to(&self, notifier: Notifier) {
        let _ = self.inner.notifier.set(notifier);
    }

    /// Register a tool; its schema's `x-mcp-header` annotations are validated here.
    ///
    /// # Panics
    /// If the tool's `x-mcp-header` annotations are invalid (use [`McpServer::try_tool`]).
    pub fn tool<F, Fut, R>(&self, tool: Tool, f: F) -> EntryHandle
    where
        F: Fn(ToolCall) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, RpcError>> + Send + 'static,
        R: Into<Outcome<CallToolResult>>,
    {
        match self.try_tool(tool, None, f) {
            Ok(handle) => handle,
            Err(e) => panic!("{e}"),
        }
    }

    /// Register a tool that needs client capabilities (e.g. `{"sampling":{}}`): calls from
    /// clients that did not declare them get 400 `-32021` before the handler runs.
    pub fn try_tool<F, Fut, R>(&self, tool: Tool, required: Option<Value>, f: F) -> Result<EntryHandle, ServerError>
    where
        F: Fn(ToolCall) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, RpcError>> + Send + 'static,
        R: Into<Outcome<CallToolResult>>,
    {
        let entry = tool_entry(tool, required, boxed(f))?;
        let name = entry.def.name.clone();
        self.edit_detached(|c| c.catalog.tools.upsert(entry), ListKind::Tools);
        Ok(EntryHandle::new(self.clone(), ListKind::Tools, name))
    }

    /// Register a static resource and the function that reads it.
    pub fn resource<F, Fut, R>(&self, resource: Resource, f: F) -> EntryHandle
    where
        F: Fn(ResourceRead) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, RpcError>> + Send + 'static,
        R: Into<Outcome<Vec<ResourceContents>>>,
    {
        let uri = resource.uri.clone();
        let entry = ResourceEntry { def: resource, enabled: true, read: boxed(f) };
        self.edit_detached(|c| c.catalog.resources.upsert(entry), ListKind::Resources);
        EntryHandle::new(self.clone(), ListKind::Resources, uri)
    }

    /// Register a resource template (RFC 6570 level 1) and the function that reads matches.
    pub fn resource_template<F, Fut, R>(&self, template: ResourceTemplate, f: F) -> Result<EntryHandle, ServerError>
    where
        F: Fn(ResourceRead) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, RpcError>> + Send + 'static,
        R: Into<Outcome<Vec<ResourceContents>>>,
    {
        let pattern = UriTemplate::parse(&template.uri_template).map_err(|e| ServerError::Definition(e.to_string()))?;
        let key = template.uri_template.clone();
        let entry = TemplateEntry { def: template, enabled: true, pattern, read: boxed(f) };
        self.edit_detached(|c| c.catalog.templates.upsert(entry), ListKind::Templates);
        Ok(EntryHandle::new(self.clone(), ListKind::Templates, key))
    }

    /// Register a prompt; missing required arguments are refused with `-32602` before `f` runs.
    pub fn prompt<F, Fut, R>(&self, prompt: Prompt, f: F) -> EntryHandle
    where
        F: Fn(PromptGet) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, RpcError>> + Send + 'static,
        R: Into<Outcome<GetPromptResult>>,
    {
        let name = prompt.name.clone();
        let entry = PromptEntry { def: prompt, enabled: true, get: boxed(f) };
        self.edit_detached(|c| c.catalog.prompts.upsert(entry), ListKind::Prompts);
        EntryHandle::new(self.clone(), ListKind::Prompts, name)
    }

    /// Set the `completion/complete` handler (advertises the `completions` capability).
    pub fn completion<F, Fut>(&self, f: F)
    where
        F: Fn(CompletionRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<CompletionValues, RpcError>> + Send + 'static,
    {
        let f: CompletionFn = Arc::new(move |req| Box::pin(f(req)));
        let _guard = self.lock_writer();
        let mut next = Catalog::clone(&self.inner.catalog.load());
        next.completion = Some(f);
        self.inner.catalog.store(Arc::new(next));
    }

    /// Apply several edits with one catalog swap, then announce one change per list kind
    /// touched: this node's listen streams hear it at once, the fleet as soon as the bus
    /// accepts it (the outbox retries until it does; see [`crate::notify`]).
    pub async fn batch(&self, edit: impl FnOnce(&mut CatalogEdit<'_>)) -> Result<(), ServerError> {
        let touched = self.swap(edit);
        self.announce(&touched);
        Ok(())
    }

    pub(crate) fn snapshot(&self) -> Arc<Catalog> {
        self.inner.catalog.load_full()
    }

    pub(crate) fn info(&self) -> &Arc<Value> {
        &self.inner.info
    }

    /// Swap in an edited catalog; returns the list kinds that changed.
    pub(crate) fn swap(&self, edit: impl FnOnce(&mut CatalogEdit<'_>)) -> Vec<ListKind> {
        let _guard = self.lock_writer();
        let mut next = Catalog::clone(&self.inner.catalog.load());
        let mut batch = CatalogEdit { catalog: &mut next, touched: Vec::new() };
        edit(&mut batch);
        let touched = std::mem::take(&mut batch.touched);
        self.inner.catalog.store(Arc::new(next));
        touched
    }

    /// Announce one change per list kind in `touched` (a no-op until a notifier is attached).
    pub(crate) fn announce(&self, touched: &[ListKind]) {
        let Some(notifier) = self.inner.notifier.get() else { return };
        let mut kinds: Vec<EventKind> = touched.iter().map(|k| k.event_kind()).collect();
        kinds.sort_by_key(|k| k.as_str());
        kinds.dedup();
        for kind in kinds {
            notifier.announce(kind);
        }
    }

    /// Apply a registration and announce it.
    fn edit_detached(&self, edit: impl FnOnce(&mut CatalogEdit<'_>), kind: ListKind) {
        self.swap(|c| {
            edit(c);
            c.touched.push(kind);
        });
        self.announce(&[kind]);
    }

    fn lock_writer(&self) -> std::sync::MutexGuard<'_, ()> {
        // A poisoned writer lock only means an edit closure panicked; the catalog itself was
        // never half-written (edits build a copy), so carry on.
        self.inner.writer.lock().unwrap_or_else(|p| p.into_inner())
    }
}

fn tool_entry(tool: Tool, required: Option<Value>, run: super::entries::ToolFn) -> Result<ToolEntry, ServerError> {
    if tool.input_schema.get("type").and_then(Value::as_str) != Some("object") {
        return Err(ServerError::Definition(format!(
            "tool {:?}: inputSchema must have \"type\": \"object\"",
            tool.name
        )));
    }
    let param_headers =
        param_headers(&tool.input_schema).map_err(|e| ServerError::Definition(format!("tool {:?}: {e}", tool.name)))?;
    Ok(ToolEntry { def: tool, enabled: true, required_capabilities: required, param_headers, run })
}

impl CatalogEdit<'_> {
    /// Add or replace a tool.
    pub fn add_tool<F, Fut, R>(&mut self, tool: Tool, f: F) -> Result<(), ServerError>
    where
        F: Fn(ToolCall) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, RpcError>> + Send + 'static,
        R: Into<Outcome<CallToolResult>>,
    {
        let entry = tool_entry(tool, None, boxed(f))?;
        self.catalog.tools.upsert(entry);
        self.touched.push(ListKind::Tools);
        Ok(())
    }

    /// Replace a tool's definition, keeping its handler; `false` if it does not exist.
    pub fn update_tool(&mut self, tool: Tool) -> Result<bool, ServerError> {
        let param_headers = param_headers(&tool.input_schema)
            .map_err(|e| ServerError::Definition(format!("tool {:?}: {e}", tool.name)))?;
        let name = tool.name.clone();
        let found = self.catalog.tools.modify(&name, |e| {
            e.def = tool;
            e.param_headers = param_headers;
        });
        self.touch_if(found, ListKind::Tools);
        Ok(found)
    }

    /// Replace a resource's definition, keeping its reader; `false` if it does not exist.
    pub fn update_resource(&mut self, resource: Resource) -> bool {
        let uri = resource.uri.clone();
        let found = self.catalog.resources.modify(&uri, |e| e.def = resource);
        self.touch_if(found, ListKind::Resources)
    }

    /// Replace a prompt's definition, keeping its handler; `false` if it does not exist.
    pub fn update_prompt(&mut self, prompt: Prompt) -> bool {
        let name = prompt.name.clone();
        let found = self.catalog.prompts.modify(&name, |e| e.def = prompt);
        self.touch_if(found, ListKind::Prompts)
    }

    /// Enable or disable an entry; `false` if it does not exist.
    pub fn set_enabled(&mut self, kind: ListKind, key: &str, on: bool) -> bool {
        let found = match kind {
            ListKind::Tools => self.catalog.tools.set_enabled(key, on),
            ListKind::Resources => self.catalog.resources.set_enabled(key, on),
            ListKind::Templates => self.catalog.templates.set_enabled(key, on),
            ListKind::Prompts => self.catalog.prompts.set_enabled(key, on),
        };
        self.touch_if(found, kind)
    }

    /// Remove an entry; `false` if it does not exist.
    pub fn remove(&mut self, kind: ListKind, key: &str) -> bool {
        let found = match kind {
            ListKind::Tools => self.catalog.tools.remove(key),
            ListKind::Resources => self.catalog.resources.remove(key),
            ListKind::Templates => self.catalog.templates.remove(key),
            ListKind::Prompts => self.catalog.prompts.remove(key),
        };
        self.touch_if(found, kind)
    }

    fn touch_if(&mut self, found: bool, kind: ListKind) -> bool {
        if found {
            self.touched.push(kind);
        }
        found
    }
}
