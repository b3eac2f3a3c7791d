//! [`ServerCapabilities`]: what `server/discover` says a server supports, read before a
//! watcher listens — which lists announce their changes (`listChanged`), whether resources
//! can be subscribed to, and the discover result's own cache hint.
//!
//! The rediscovery guidance: a client must not wait for notifications a server never
//! advertised; a list without `listChanged` is polled instead. A server that does not answer
//! `server/discover` at all (`-32601`) is taken to advertise nothing.

use mcp_fleet_protocol::ListenSupport;
use mcp_fleet_protocol::methods::Method;
use serde_json::Value;

use crate::error::{ClientError, ErrorClass};
use crate::list::ListKind;
use crate::rpc::RpcClient;

/// The capabilities that decide how a host keeps its lists fresh.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ServerCapabilities {
    /// `tools.listChanged`.
    pub tools_list_changed: bool,
    /// `prompts.listChanged`.
    pub prompts_list_changed: bool,
    /// `resources.listChanged` (announces templates too).
    pub resources_list_changed: bool,
    /// `resources.subscribe`: `resources/updated` per subscribed URI.
    pub resource_subscribe: bool,
    /// The discover result's `ttlMs`, when present.
    pub ttl_ms: Option<u64>,
}

impl ServerCapabilities {
    /// Read a `server/discover` result.
    ///
    /// ```
    /// use mcp_fleet_client::{ListKind, ServerCapabilities};
    /// let caps = ServerCapabilities::from_discover(&serde_json::json!({
    ///     "capabilities": {"tools": {"listChanged": true}, "prompts": {}}, "ttlMs": 1000}));
    /// assert!(caps.announces(ListKind::Tools) && !caps.announces(ListKind::Prompts));
    /// assert_eq!(caps.ttl_ms, Some(1000));
    /// ```
    pub fn from_discover(result: &Value) -> ServerCapabilities {
        let caps = &result["capabilities"];
        let on = |family: &str, flag: &str| caps[family][flag] == Value::Bool(true);
        ServerCapabilities {
            tools_list_changed: on("tools", "listChanged"),
            prompts_list_changed: on("prompts", "listChanged"),
            resources_list_changed: on("resources", "listChanged"),
            resource_subscribe: on("resources", "subscribe"),
            ttl_ms: result.get("ttlMs").and_then(Value::as_u64),
        }
    }

    /// Whether the server advertises `list_changed` notifications for `kind`.
    pub fn announces(&self, kind: ListKind) -> bool {
        match kind.announced_as() {
            ListKind::Tools => self.tools_list_changed,
            ListKind::Prompts => self.prompts_list_changed,
            ListKind::Resources | ListKind::ResourceTemplates => self.resources_list_changed,
        }
    }

    /// What a listen stream can be honoured for, as the protocol crate spells it.
    pub fn listen_support(&self) -> ListenSupport {
        ListenSupport {
            tools_list_changed: self.tools_list_changed,
            prompts_list_changed: self.prompts_list_changed,
            resources_list_changed: self.resources_list_changed,
            resource_subscribe: self.resource_subscribe,
            tasks: false,
        }
    }

    /// Call `server/discover` through `rpc`. `-32601` (no discover) is "nothing
    /// advertised"; every other error is returned for the caller to classify. In the 2025
    /// era the capabilities are the session's `initialize` answer (initializing one if
    /// none is held).
    pub async fn discover(rpc: &RpcClient) -> Result<ServerCapabilities, ClientError> {
        if rpc.session().is_some() {
            return rpc.ensure_session().await.map(|result| ServerCapabilities::from_discover(&result));
        }
        match rpc.call(Method::Discover.as_str(), Value::Object(Default::default())).await {
            Ok(result) => Ok(ServerCapabilities::from_discover(&result)),
            Err(e) if e.class() == ErrorClass::MethodNotFound => Ok(ServerCapabilities::default()),
            Err(e) => Err(e),
        }
    }
}
