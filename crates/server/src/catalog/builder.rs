//! [`McpServerBuilder`]: a server's identity, instructions and [`CachePolicy`], fixed at build
//! time; the catalog starts empty and changes through the server's registration API.

use std::sync::{Arc, Mutex, OnceLock};

use arc_swap::ArcSwap;
use mcp_fleet_protocol::types::{CacheHint, CacheScope, Icon, Implementation};
use serde_json::Value;

use super::server::{Catalog, Inner, McpServer};
use crate::extensions::{Extension, Extensions};

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

/// Builds an [`McpServer`].
pub struct McpServerBuilder {
    info: Implementation,
    instructions: Option<String>,
    cache: CachePolicy,
    extensions: Extensions,
}

impl McpServerBuilder {
    pub(super) fn new(name: String, version: String) -> Self {
        McpServerBuilder {
            info: Implementation::new(name, version),
            instructions: None,
            cache: CachePolicy::default(),
            extensions: Extensions::default(),
        }
    }

    /// The server's display name (`serverInfo.title`).
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.info.title = Some(title.into());
        self
    }

    /// What the server is, for people (`serverInfo.description`).
    pub fn description(mut self, text: impl Into<String>) -> Self {
        self.info.description = Some(text.into());
        self
    }

    /// Its home page (`serverInfo.websiteUrl`).
    pub fn website_url(mut self, url: impl Into<String>) -> Self {
        self.info.website_url = Some(url.into());
        self
    }

    /// Add an icon hosts may show for the server (`serverInfo.icons`).
    ///
    /// ```
    /// use mcp_fleet_server::{McpServer, types::Icon};
    /// let server = McpServer::builder("orders", "1.4.0")
    ///     .title("Order lookup")
    ///     .icon(Icon { mime_type: Some("image/svg+xml".into()), ..Icon::new("https://example.com/orders.svg") })
    ///     .build();
    /// # drop(server);
    /// ```
    pub fn icon(mut self, icon: Icon) -> Self {
        self.info.icons.push(icon);
        self
    }

    /// Instructions for the model, returned by `server/discover`.
    pub fn instructions(mut self, text: impl Into<String>) -> Self {
        self.instructions = Some(text.into());
        self
    }

    /// Advertise an extension the catalog's handlers implement in `server/discover`'s
    /// `capabilities.extensions` (see [`Extension`]); an id registered again replaces the
    /// earlier settings.
    pub fn extension(mut self, extension: Extension) -> Self {
        self.extensions.register(extension);
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
                info: Arc::new(info_value(&self.info)),
                instructions: self.instructions,
                cache: self.cache,
                extensions: self.extensions,
                catalog: ArcSwap::from_pointee(Catalog::default()),
                writer: Mutex::new(()),
                notifier: OnceLock::new(),
            }),
        }
    }
}

/// `serverInfo` as JSON.
fn info_value(info: &Implementation) -> Value {
    // `Implementation` is a plain struct of strings: serializing it cannot fail.
    serde_json::to_value(info).unwrap_or(Value::Null)
}
