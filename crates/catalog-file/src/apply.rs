//! [`apply`]: make a server's catalog exactly the file's, in ONE catalog swap, and say what
//! changed ([`Applied`]).
//!
//! Every existing entry of every kind is removed and every entry of the file added inside one
//! [`McpServer::batch`], so a client sees the old catalog or the new one, never a mix, and the
//! server announces one change per list touched. The handlers that answer the file's entries
//! are built here; the HTTP exchange itself is `http_tool`'s.

use std::collections::HashSet;
use std::fmt;
use std::path::PathBuf;

use mcp_fleet_server::types::{CallToolResult, Content, GetPromptResult, PromptMessage, ResourceContents};
use mcp_fleet_server::{
    McpServer, RpcError, ServerError, catalog::CatalogEdit, catalog::ListKind, catalog::PromptGet,
    catalog::ResourceRead, catalog::ToolCall,
};

use crate::catalog::{Catalog, PromptEntry, ResourceEntry, ResourceSource, TemplateEntry, ToolAnswer, ToolEntry};
use crate::confine::FilesRoot;
use crate::error::CatalogError;
use crate::http_tool;

/// The MIME type of contents whose entry declares none.
const DEFAULT_MIME: &str = "text/plain";

/// What one list went through: keys only in the file (`added`), only in the server
/// (`removed`), in both (`replaced` — re-registered with the file's definition).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Change {
    /// Keys new to the server.
    pub added: usize,
    /// Keys the server no longer has.
    pub removed: usize,
    /// Keys re-registered in place.
    pub replaced: usize,
}

impl Change {
    fn between(before: &[String], after: &[&str]) -> Change {
        let before: HashSet<&str> = before.iter().map(String::as_str).collect();
        let after: HashSet<&str> = after.iter().copied().collect();
        Change {
            added: after.difference(&before).count(),
            removed: before.difference(&after).count(),
            replaced: after.intersection(&before).count(),
        }
    }
}

/// What [`apply`] changed, per list. Its `Display` is one log-friendly line.
///
/// ```
/// use mcp_fleet_catalog_file::{Applied, Change};
/// let applied = Applied { tools: Change { added: 1, removed: 2, replaced: 3 }, ..Applied::default() };
/// assert_eq!(applied.to_string(), "tools +1 -2 ~3, resources +0 -0 ~0, resource_templates +0 -0 ~0, prompts +0 -0 ~0");
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Applied {
    /// Tools.
    pub tools: Change,
    /// Static resources.
    pub resources: Change,
    /// Resource templates.
    pub resource_templates: Change,
    /// Prompts.
    pub prompts: Change,
}

impl fmt::Display for Applied {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let lists = [
            ("tools", self.tools),
            ("resources", self.resources),
            ("resource_templates", self.resource_templates),
            ("prompts", self.prompts),
        ];
        for (i, (name, c)) in lists.iter().enumerate() {
            let sep = if i == 0 { "" } else { ", " };
            write!(f, "{sep}{name} +{} -{} ~{}", c.added, c.removed, c.replaced)?;
        }
        Ok(())
    }
}

/// Replace `server`'s whole catalog with `catalog`, atomically: one swap, or — if the server
/// refuses an entry — no change at all.
///
/// ```
/// use mcp_fleet_catalog_file::{apply, Catalog, Format};
/// use mcp_fleet_server::McpServer;
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let server = McpServer::builder("demo", "1").build();
/// let catalog = Catalog::parse("[[tools]]\nname = \"hi\"\ntext = \"hi\"\n", Format::Toml, "c.toml".as_ref())?;
/// let applied = apply(&server, &catalog).await?;
/// assert_eq!(applied.tools.added, 1);
/// assert_eq!(apply(&server, &catalog).await?.tools.replaced, 1);
/// # Ok::<(), mcp_fleet_catalog_file::CatalogError>(())
/// # }).unwrap();
/// ```
pub async fn apply(server: &McpServer, catalog: &Catalog) -> Result<Applied, CatalogError> {
    let targets = catalog.tools.iter().filter_map(|t| match &t.answer {
        ToolAnswer::Http(target) => Some(target.as_ref()),
        ToolAnswer::Text(_) => None,
    });
    let clients = http_tool::Clients::for_targets(targets, &catalog.addresses)?;
    server
        .batch(|edit| {
            let applied = changes(edit, catalog);
            for kind in ListKind::ALL {
                edit.clear(kind);
            }
            add_all(edit, catalog, &clients)?;
            Ok(applied)
        })
        .await
        .map_err(CatalogError::Apply)
}

/// What replacing the server's catalog (as `edit` sees it) with `catalog` changes.
fn changes(edit: &CatalogEdit<'_>, catalog: &Catalog) -> Applied {
    let keys = |entries: Vec<&str>, kind| Change::between(&edit.keys(kind), &entries);
    Applied {
        tools: keys(catalog.tools.iter().map(|e| e.def.name.as_str()).collect(), ListKind::Tools),
        resources: keys(catalog.resources.iter().map(|e| e.def.uri.as_str()).collect(), ListKind::Resources),
        resource_templates: keys(
            catalog.templates.iter().map(|e| e.def.uri_template.as_str()).collect(),
            ListKind::ResourceTemplates,
        ),
        prompts: keys(catalog.prompts.iter().map(|e| e.def.name.as_str()).collect(), ListKind::Prompts),
    }
}

fn add_all(edit: &mut CatalogEdit<'_>, catalog: &Catalog, clients: &http_tool::Clients) -> Result<(), ServerError> {
    for tool in &catalog.tools {
        add_tool(edit, tool, clients)?;
        if !tool.required_scopes.is_empty() {
            // Re-adding a tool resets its scopes: set them after every add.
            edit.require_scopes(&tool.def.name, tool.required_scopes.iter().cloned());
        }
    }
    for resource in &catalog.resources {
        add_resource(edit, resource);
    }
    for template in &catalog.templates {
        add_template(edit, template)?;
    }
    for prompt in &catalog.prompts {
        add_prompt(edit, prompt);
    }
    Ok(())
}

fn add_tool(edit: &mut CatalogEdit<'_>, entry: &ToolEntry, clients: &http_tool::Clients) -> Result<(), ServerError> {
    let client = match &entry.answer {
        ToolAnswer::Http(target) => clients.get(target),
        ToolAnswer::Text(_) => None,
    };
    match (&entry.answer, client) {
        (ToolAnswer::Text(template), _) => {
            let template = template.clone();
            edit.add_tool(entry.def.clone(), move |call: ToolCall| {
                let text = template.render(&call.arguments);
                async move { Ok(CallToolResult::text(text)) }
            })
        }
        (ToolAnswer::Http(target), Some(client)) => {
            let (target, client, name) = (target.clone(), client.clone(), entry.def.name.clone());
            edit.add_tool(entry.def.clone(), move |call: ToolCall| {
                let (target, client, name) = (target.clone(), client.clone(), name.clone());
                let caller = call.ctx.principal;
                async move { Ok(http_tool::forward(&client, &target, &name, call.arguments, caller.as_ref()).await) }
            })
        }
        // `apply` builds a client for every redirect policy the catalog's http tools use.
        (ToolAnswer::Http(_), None) => Err(ServerError::Definition("no HTTP client for an http tool".into())),
    }
}

fn add_resource(edit: &mut CatalogEdit<'_>, entry: &ResourceEntry) {
    let mime = entry.def.mime_type.clone().unwrap_or_else(|| DEFAULT_MIME.to_owned());
    let meta = entry.contents_meta.clone();
    match &entry.source {
        ResourceSource::Text(text) => {
            let text = text.clone();
            edit.add_resource(entry.def.clone(), move |read: ResourceRead| {
                let contents = ResourceContents::text(read.uri, mime.clone(), text.clone());
                let contents = ResourceContents { meta: meta.clone(), ..contents };
                async move { Ok(vec![contents]) }
            });
        }
        ResourceSource::File { path, root } => {
            let (path, root) = (path.clone(), root.clone());
            edit.add_resource(entry.def.clone(), move |read: ResourceRead| {
                let (read, meta) = (read_file(read.uri, path.clone(), root.clone(), mime.clone()), meta.clone());
                async move {
                    Ok(read
                        .await?
                        .into_iter()
                        .map(|c| ResourceContents { meta: meta.clone(), ..c })
                        .collect::<Vec<_>>())
                }
            });
        }
    }
}

/// A file resource's contents, read now (the file may have changed since the catalog was
/// loaded) — if, symlinks followed, it is still inside `root` (one swapped for a symlink out
/// of it since is refused). A file that cannot be read fails this read only, with `-32603`;
/// the path goes to the log, not to the client.
async fn read_file(
    uri: String,
    path: PathBuf,
    root: FilesRoot,
    mime: String,
) -> Result<Vec<ResourceContents>, RpcError> {
    let real = match tokio::task::spawn_blocking(move || root.check_real(&path).map_err(|why| (path, why))).await {
        Ok(Ok(real)) => real,
        Ok(Err((path, why))) => {
            tracing::warn!(%uri, path = %path.display(), "a file resource is refused: {why}");
            return Err(RpcError::internal(format!("resource {uri} cannot be read")));
        }
        Err(e) => return Err(RpcError::internal(format!("resource {uri} cannot be read: {e}"))),
    };
    let path = real;
    match tokio::fs::read_to_string(&path).await {
        Ok(text) => Ok(vec![ResourceContents::text(uri, mime, text)]),
        Err(e) => {
            tracing::warn!(%uri, path = %path.display(), error = %e, "cannot read a file resource");
            Err(RpcError::internal(format!("resource {uri} cannot be read: {}", e.kind())))
        }
    }
}

fn add_template(edit: &mut CatalogEdit<'_>, entry: &TemplateEntry) -> Result<(), ServerError> {
    let mime = entry.def.mime_type.clone().unwrap_or_else(|| DEFAULT_MIME.to_owned());
    let (template, meta) = (entry.text.clone(), entry.contents_meta.clone());
    edit.add_resource_template(entry.def.clone(), move |read: ResourceRead| {
        let contents = ResourceContents::text(read.uri, mime.clone(), template.render(&read.variables));
        let contents = ResourceContents { meta: meta.clone(), ..contents };
        async move { Ok(vec![contents]) }
    })
}

fn add_prompt(edit: &mut CatalogEdit<'_>, entry: &PromptEntry) {
    let (messages, description) = (entry.messages.clone(), entry.def.description.clone());
    edit.add_prompt(entry.def.clone(), move |get: PromptGet| {
        let messages = messages
            .iter()
            .map(|(role, template)| PromptMessage {
                role: *role,
                content: Content::text(template.render(&get.arguments)),
            })
            .collect();
        let result = GetPromptResult { description: description.clone(), messages, ..GetPromptResult::default() };
        async move { Ok(result) }
    });
}
