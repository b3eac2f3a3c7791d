//! The catalog from a file, reloaded when the file changes: the way a fleet is usually run
//! (a ConfigMap, a deploy that rewrites a file). Each change swaps the whole tool list in one
//! `McpServer::batch`, whose announcement reaches every listen stream as
//! `notifications/tools/list_changed`; a file that does not parse keeps the catalog as it was.
//!
//! `cargo run -p mcp-fleet-examples --bin config_reloader -- 127.0.0.1:8080 tools.toml`, with:
//!
//! ```toml
//! [[tools]]
//! name = "greet"
//! description = "Says hello"
//! reply = "Hello!"
//! ```

use std::path::Path;

use mcp_fleet_server::typed::{self, NoArgs};
use mcp_fleet_server::{HandlerOptions, McpServer, catalog::ListKind};
use notify::{RecursiveMode, Watcher};
use serde::Deserialize;

#[derive(Deserialize)]
struct Config {
    tools: Vec<ToolSpec>,
}

/// A tool that answers a fixed text.
#[derive(Deserialize)]
struct ToolSpec {
    name: String,
    description: String,
    reply: String,
}

/// Replace every tool with those `text` lists, in one swap and one announcement.
async fn load(server: &McpServer, text: &str) -> mcp_fleet_examples::Result {
    let config: Config = toml::from_str(text)?;
    server
        .batch(|edit| {
            edit.clear(ListKind::Tools);
            config.tools.into_iter().try_for_each(|ToolSpec { name, description, reply }| {
                edit.add(typed::tool(name, description, move |_: NoArgs| std::future::ready(reply.clone())))
            })
        })
        .await?;
    Ok(())
}

#[tokio::main]
async fn main() -> mcp_fleet_examples::Result {
    let path = std::fs::canonicalize(mcp_fleet_examples::arg_or(2, "TOOLS_FILE", "tools.toml"))?;
    let server = McpServer::builder("config-reloader", "1.0.0").build();
    let mut loaded = std::fs::read_to_string(&path)?;
    load(&server, &loaded).await?;

    // Watch the directory (editors replace files by renaming), keep the events for our file.
    let (changed, mut changes) = tokio::sync::mpsc::channel(1);
    let file = path.file_name().map(ToOwned::to_owned);
    let mut watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        if event.is_ok_and(|e| e.paths.iter().any(|p| p.file_name() == file.as_deref())) {
            let _ = changed.try_send(()); // one pending reload covers any number of events
        }
    })?;
    watcher.watch(path.parent().unwrap_or(Path::new("/")), RecursiveMode::NonRecursive)?;
    let reloading = server.clone();
    tokio::spawn(async move {
        while changes.recv().await.is_some() {
            // One save is several events; an unchanged file is no change.
            let Ok(text) = tokio::fs::read_to_string(&path).await else { continue };
            if text == loaded {
                continue;
            }
            match load(&reloading, &text).await {
                Ok(()) => loaded = text,
                Err(error) => eprintln!("{}: {error}; the catalog is unchanged", path.display()),
            }
        }
    });
    mcp_fleet_examples::run(server, HandlerOptions::default()).await
}
