//! [`McpServer`]: the server definition a handler serves — identity, instructions, cache
//! policy and a catalog of tools, resources, templates and prompts.
//!
//! The catalog is copy-on-write behind an [`ArcSwap`]: requests read a consistent snapshot
//! without locking; a change (registration, handle update, batch) builds the new catalog,
//! swaps it in atomically *first*, and only then announces the change, so a client that
//! re-lists after the notification sees the new catalog. An edit that fails changes nothing.

use std::convert::Infallible;
use std::sync::{Arc, Mutex, OnceLock};

use arc_swap::ArcSwap;
use mcp_fleet_protocol::types::{
    CallToolResult, GetPromptResult, Prompt, Resource, ResourceContents, ResourceTemplate, Tool,
};
use mcp_fleet_protocol::{ListKind, RpcError};
use serde_json::Value;

use super::builder::{CachePolicy, McpServerBuilder};
use super::completer::{CompletionFn, CompletionRequest, CompletionValues};
use super::edit::CatalogEdit;
use super::entries::{PromptEntry, ResourceEntry, TemplateEntry, ToolEntry};
use super::entry_handler::{Handler, PromptGet, ResourceRead, ToolCall};
use super::handles::EntryHandle;
use super::listing::Listing;
use super::registration::Registration;
use super::task_support::TaskSupport;
use crate::error::ServerError;
use crate::notify::Notifier;

/// The catalog snapshot requests are served from.
#[derive(Clone, Default)]
pub(crate) struct Catalog {
    pub(crate) tools: Listing<ToolEntry>,
    pub(crate) resources: Listing<ResourceEntry>,
    pub(crate) templates: Listing<TemplateEntry>,
    pub(crate) prompts: Listing<PromptEntry>,
    pub(crate) completion: Option<CompletionFn>,
    /// Whether an enabled prompt or template has completers of its own (refreshed per swap).
    pub(crate) entry_completers: bool,
}

impl Catalog {
    /// Rebuild the wire form and revision of every list an edit touched (once per swap).
    pub(crate) fn refresh(&mut self) {
        self.tools.refresh();
        self.resources.refresh();
        self.templates.refresh();
        self.prompts.refresh();
        self.entry_completers = self.prompts.enabled().any(|p| !p.completers.is_empty())
            || self.templates.enabled().any(|t| !t.completers.is_empty());
    }

    /// Whether `completion/complete` is served (the `completions` capability).
    pub(crate) fn completes(&self) -> bool {
        self.completion.is_some() || self.entry_completers
    }

    /// The wire list and content revision of `kind`.
    pub(crate) fn list(&self, kind: ListKind) -> (&Arc<Vec<Value>>, u64) {
        match kind {
            ListKind::Tools => (&self.tools.wire, self.tools.revision),
            ListKind::Resources => (&self.resources.wire, self.resources.revision),
            ListKind::ResourceTemplates => (&self.templates.wire, self.templates.revision),
            ListKind::Prompts => (&self.prompts.wire, self.prompts.revision),
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
    pub(super) inner: Arc<Inner>,
}

/// A weak reference to an [`McpServer`].
#[derive(Clone)]
pub(crate) struct WeakServer(std::sync::Weak<Inner>);

impl crate::fleet::Catalogued for WeakServer {
    fn revisions(&self) -> Option<[u64; 4]> {
        self.upgrade().map(|server| server.revisions())
    }
}

impl WeakServer {
    /// The server, if it is still alive.
    pub(crate) fn upgrade(&self) -> Option<McpServer> {
        self.0.upgrade().map(|inner| McpServer { inner })
    }
}

pub(super) struct Inner {
    pub(super) info: Arc<Value>,
    pub(super) instructions: Option<String>,
    pub(super) cache: CachePolicy,
    pub(super) extensions: crate::extensions::Extensions,
    pub(super) catalog: ArcSwap<Catalog>,
    /// Serializes copy-on-write edits so two concurrent edits never lose one another.
    pub(super) writer: Mutex<()>,
    pub(super) notifier: OnceLock<Notifier>,
}

impl McpServer {
    /// Start building a server called `name` at `version` (its `serverInfo`).
    pub fn builder(name: impl Into<String>, version: impl Into<String>) -> McpServerBuilder {
        McpServerBuilder::new(name.into(), version.into())
    }

    /// Announce this server's catalog changes through `notifier` (done by
    /// `create_mcp_handler` when the server itself is the factory). A server announces through
    /// one handler: attaching it to another fails.
    pub fn publish_changes_to(&self, notifier: Notifier) -> Result<(), ServerError> {
        let attached = self.inner.notifier.get_or_init(|| notifier.clone());
        if attached.is_same_handler(&notifier) {
            notifier.register_catalog(Box::new(self.downgrade()));
            Ok(())
        } else {
            Err(ServerError::Options(
                "this McpServer already announces its changes through another handler; build one server per handler"
                    .into(),
            ))
        }
    }

    /// Add a tool, prompt or resource template built by the typed API ([`crate::typed`]): its
    /// schema derived from its argument type, its arguments deserialized for its handler. A
    /// name already registered is [`ServerError::Duplicate`] (never a silent replacement).
    ///
    /// ```
    /// use mcp_fleet_server::{McpServer, typed::{self, Json}};
    /// use schemars::JsonSchema;
    /// use serde::{Deserialize, Serialize};
    ///
    /// /// Two numbers.
    /// #[derive(Deserialize, JsonSchema)]
    /// struct Pair { a: i64, b: i64 }
    ///
    /// #[derive(Serialize, JsonSchema)]
    /// struct Sum { sum: i64 }
    ///
    /// let server = McpServer::builder("calculator", "1").build();
    /// let handle = server.add(typed::tool("add", "Adds two numbers", |p: Pair| async move {
    ///     Json(Sum { sum: p.a + p.b })
    /// })).unwrap();
    /// assert_eq!(handle.key(), "add");
    /// ```
    pub fn add(&self, entry: impl Into<Registration>) -> Result<EntryHandle, ServerError> {
        let entry = entry.into();
        let key = entry.key();
        self.edit(|e| e.add(entry))?;
        // An entry that was added had a key (a failed one returned above).
        let (kind, key) = key.ok_or_else(|| ServerError::Definition("a failed registration was added".into()))?;
        Ok(EntryHandle::new(self.clone(), kind, key))
    }

    /// Add many typed entries with one catalog swap — all of them, or none when one fails (a
    /// duplicate name, a definition that could not be built) — then announce once per list.
    /// What [`server`](crate::server)'s `into_entries()` returns goes here.
    ///
    /// ```
    /// use mcp_fleet_server::{McpServer, typed};
    /// let server = McpServer::builder("demo", "1").build();
    /// let handles = server.add_all([
    ///     typed::tool("ping", "Answers pong", |_: typed::NoArgs| async { "pong" }).into(),
    ///     typed::prompt("greet", "A greeting", |_: typed::NoArgs| async { "Say hello.".to_owned() }).into(),
    /// ]).unwrap();
    /// assert_eq!(handles.len(), 2);
    /// ```
    pub fn add_all(&self, entries: impl IntoIterator<Item = Registration>) -> Result<Vec<EntryHandle>, ServerError> {
        let entries: Vec<Registration> = entries.into_iter().collect();
        let keys: Vec<_> = entries.iter().filter_map(Registration::key).collect();
        self.edit(|e| entries.into_iter().try_for_each(|entry| e.add(entry)))?;
        Ok(keys.into_iter().map(|(kind, key)| EntryHandle::new(self.clone(), kind, key)).collect())
    }

    /// Register a tool; its schema's `x-mcp-header` annotations are validated here.
    ///
    /// # Panics
    /// If the tool's definition is invalid (use [`McpServer::try_tool`] to get the error).
    pub fn tool(&self, tool: Tool, handler: impl Handler<ToolCall, CallToolResult>) -> EntryHandle {
        match self.try_tool(tool, None, handler) {
            Ok(handle) => handle,
            Err(e) => panic!("{e}"),
        }
    }

    /// Register a tool that may need client capabilities (e.g. `{"sampling":{}}`): calls from
    /// clients that did not declare them get 400 `-32021` before the handler runs.
    pub fn try_tool(
        &self,
        tool: Tool,
        required: Option<Value>,
        handler: impl Handler<ToolCall, CallToolResult>,
    ) -> Result<EntryHandle, ServerError> {
        let name = tool.name.clone();
        self.edit(|e| e.add_tool_requiring(tool, required, handler))?;
        Ok(EntryHandle::new(self.clone(), ListKind::Tools, name))
    }

    /// Register a tool whose calls may become tasks (the tasks extension; see [`TaskSupport`]):
    /// the handler is written as any other — it returns or awaits as usual, and may call
    /// [`CallContext::run_as_task`](crate::CallContext::run_as_task) when it knows it will be
    /// long.
    ///
    /// ```
    /// use std::time::Duration;
    /// use mcp_fleet_server::{McpServer, catalog::TaskSupport, types::{CallToolResult, Tool}};
    /// let server = McpServer::builder("demo", "1").build();
    /// server.task_tool(Tool::new("report", "Builds the monthly report"), TaskSupport::Optional, |call| async move {
    ///     for step in 1..=3 {
    ///         call.ctx.progress(f64::from(step), Some(3.0), Some("crunching")).await; // a task's status message
    ///         tokio::time::sleep(Duration::from_millis(10)).await;
    ///     }
    ///     Ok(CallToolResult::text("report ready"))
    /// });
    /// ```
    ///
    /// # Panics
    /// If the tool's definition is invalid (as [`McpServer::tool`]).
    pub fn task_tool(
        &self,
        tool: Tool,
        support: TaskSupport,
        handler: impl Handler<ToolCall, CallToolResult>,
    ) -> EntryHandle {
        let name = tool.name.clone();
        let added = self.edit(|e| {
            e.add_tool_requiring(tool, None, handler)?;
            e.set_task_support(&name, support);
            Ok::<_, ServerError>(())
        });
        match added {
            Ok(()) => EntryHandle::new(self.clone(), ListKind::Tools, name),
            Err(e) => panic!("{e}"),
        }
    }

    /// Register a static resource and the function that reads it.
    pub fn resource(
        &self,
        resource: Resource,
        reader: impl Handler<ResourceRead, Vec<ResourceContents>>,
    ) -> EntryHandle {
        let uri = resource.uri.clone();
        self.edit(|e| -> Result<(), Infallible> {
            e.add_resource(resource, reader);
            Ok(())
        })
        .unwrap_or_else(|never| match never {});
        EntryHandle::new(self.clone(), ListKind::Resources, uri)
    }

    /// Register a resource template (RFC 6570 level 1) and the function that reads matches.
    pub fn resource_template(
        &self,
        template: ResourceTemplate,
        reader: impl Handler<ResourceRead, Vec<ResourceContents>>,
    ) -> Result<EntryHandle, ServerError> {
        let key = template.uri_template.clone();
        self.edit(|e| e.add_resource_template(template, reader))?;
        Ok(EntryHandle::new(self.clone(), ListKind::ResourceTemplates, key))
    }

    /// Register a prompt; missing required arguments are refused with `-32602` before its
    /// handler runs.
    pub fn prompt(&self, prompt: Prompt, handler: impl Handler<PromptGet, GetPromptResult>) -> EntryHandle {
        let name = prompt.name.clone();
        self.edit(|e| -> Result<(), Infallible> {
            e.add_prompt(prompt, handler);
            Ok(())
        })
        .unwrap_or_else(|never| match never {});
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

    /// Apply several edits with one catalog swap, then announce one change per list whose
    /// content changed:
    /// this node's listen streams hear it at once, the fleet as soon as the bus accepts it (the
    /// outbox retries until it does; see `notify` in the crate doc). If `edit` fails, nothing changes.
    ///
    /// ```
    /// use mcp_fleet_server::{catalog::ListKind, McpServer, types::{CallToolResult, Tool}};
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let server = McpServer::builder("demo", "1").build();
    /// server.batch(|edit| {
    ///     edit.clear(ListKind::Tools);
    ///     edit.add_tool(Tool::new("v2", "The new tool"), |_c| async { Ok(CallToolResult::text("2")) })
    /// })
    /// .await
    /// .unwrap();
    /// # });
    /// ```
    pub async fn batch<R>(
        &self,
        edit: impl FnOnce(&mut CatalogEdit<'_>) -> Result<R, ServerError>,
    ) -> Result<R, ServerError> {
        self.edit(edit)
    }

    /// Swap in an edited catalog (nothing, if `edit` fails) and announce the lists it touched
    /// whose content changed: a list edited back to what it was (a reload that found the same
    /// tools, say) is not announced, since no client would find anything new in it.
    pub(crate) fn edit<R, E>(&self, edit: impl FnOnce(&mut CatalogEdit<'_>) -> Result<R, E>) -> Result<R, E> {
        let (value, touched) = {
            let _guard = self.lock_writer();
            let mut next = Catalog::clone(&self.inner.catalog.load());
            let before = ListKind::ALL.map(|kind| next.list(kind).1);
            let mut batch = CatalogEdit { catalog: &mut next, touched: Vec::new() };
            let value = edit(&mut batch)?;
            let mut touched = std::mem::take(&mut batch.touched);
            next.refresh();
            touched.retain(|kind| next.list(*kind).1 != before[kind.index()]);
            self.inner.catalog.store(Arc::new(next));
            (value, touched)
        };
        self.announce(&touched);
        Ok(value)
    }

    /// A reference that does not keep the server alive (the handler's registry of catalogs
    /// holds these, so a server and its notifier do not keep each other forever).
    pub(crate) fn downgrade(&self) -> WeakServer {
        WeakServer(Arc::downgrade(&self.inner))
    }

    /// The content revision of each list, indexed like [`ListKind::ALL`].
    pub(crate) fn revisions(&self) -> [u64; 4] {
        let catalog = self.snapshot();
        ListKind::ALL.map(|kind| catalog.list(kind).1)
    }

    /// The current catalog.
    pub(crate) fn snapshot(&self) -> Arc<Catalog> {
        self.inner.catalog.load_full()
    }

    /// `serverInfo`.
    pub(crate) fn info(&self) -> &Arc<Value> {
        &self.inner.info
    }

    /// The instructions `server/discover` returns.
    pub(crate) fn instructions(&self) -> Option<&str> {
        self.inner.instructions.as_deref()
    }

    /// The extensions the definition advertises.
    pub(crate) fn extensions(&self) -> &crate::extensions::Extensions {
        &self.inner.extensions
    }

    /// Cache hints per cacheable result.
    pub(crate) fn cache_policy(&self) -> &CachePolicy {
        &self.inner.cache
    }

    /// Announce one change per notification among `touched` (templates are announced as
    /// resource-list changes); nothing until a notifier is attached.
    fn announce(&self, touched: &[ListKind]) {
        let Some(notifier) = self.inner.notifier.get() else { return };
        let mut lists: Vec<ListKind> = touched.iter().map(|k| k.announced_as()).collect();
        lists.sort_by_key(|k| k.index());
        lists.dedup();
        for list in lists {
            notifier.announce(list);
        }
    }

    fn lock_writer(&self) -> std::sync::MutexGuard<'_, ()> {
        // A poisoned writer lock only means an edit closure panicked; the catalog itself was
        // never half-written (edits build a copy), so carry on.
        self.inner.writer.lock().unwrap_or_else(|p| p.into_inner())
    }
}
