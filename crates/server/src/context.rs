//! What a request handler knows about its request: the authenticated principal, the HTTP
//! request parts, the validated envelope, and the channel for request-scoped notifications
//! (progress and log messages), which only ever travel on the request's own response stream.

use std::sync::Arc;

use mcp_fleet_protocol::envelope::{LogLevel, RequestMeta};
use serde_json::{Map, Value, json};
use tokio::sync::mpsc;

/// The peer address of the connection a request came on, as a request extension.
/// [`McpHandler::serve`](crate::McpHandler::serve) inserts it; a service of your own that calls
/// [`McpHandler::handle`](crate::McpHandler::handle) may insert it too (anonymous callers'
/// budgets are per address; without it they are node-wide). Behind a proxy it is the proxy's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientAddr(pub std::net::SocketAddr);

/// The budget key of a client address: IPv4 as is, IPv6 by its /64 (one client usually holds a
/// whole /64, and could otherwise take a fresh address per stream).
pub(crate) fn address_key(ip: std::net::IpAddr) -> std::net::IpAddr {
    match ip {
        std::net::IpAddr::V6(v6) if v6.to_ipv4_mapped().is_none() => {
            let mut octets = v6.octets();
            octets[8..].fill(0);
            std::net::IpAddr::from(octets)
        }
        std::net::IpAddr::V6(v6) => {
            std::net::IpAddr::V4(v6.to_ipv4_mapped().unwrap_or(std::net::Ipv4Addr::UNSPECIFIED))
        }
        v4 => v4,
    }
}

/// An authenticated caller, produced by the handler's authenticator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    /// Stable identity of the caller (subject).
    pub id: String,
    /// Who vouches for the identity (a bearer token's `iss`), if an issuer does: two issuers'
    /// subjects are different callers.
    pub issuer: Option<String>,
    /// The tenant the caller acts for (from a token claim, a header, whatever the
    /// authenticator trusts): its listen streams receive global events and its tenant's events
    /// only, its sessions and tasks are its own, and its limits are counted apart.
    pub tenant: Option<String>,
    /// OAuth scopes granted to the caller (e.g. from a bearer token's `scope` claim); tools may
    /// require some of them.
    pub scopes: Vec<String>,
}

impl Principal {
    /// A principal acting for `tenant` (or for none), with no OAuth scopes.
    pub fn new(id: impl Into<String>, tenant: Option<String>) -> Self {
        Principal { id: id.into(), issuer: None, tenant, scopes: Vec::new() }
    }

    /// The same principal vouched for by `issuer`.
    pub fn with_issuer(mut self, issuer: impl Into<String>) -> Self {
        self.issuer = Some(issuer.into());
        self
    }

    /// The key per-principal limits count under: issuer, tenant and subject together, so two
    /// tenants' (or issuers') users with the same `sub` never share a budget.
    pub(crate) fn limit_key(&self) -> String {
        let field = |v: Option<&str>| v.map_or_else(|| "-".to_owned(), |v| format!("{}:{v}", v.len()));
        format!("{}|{}|{}:{}", field(self.issuer.as_deref()), field(self.tenant.as_deref()), self.id.len(), self.id)
    }

    /// The same principal granted `scopes`.
    pub fn with_scopes<S: Into<String>>(mut self, scopes: impl IntoIterator<Item = S>) -> Self {
        self.scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// Whether every scope in `required` was granted.
    pub fn has_scopes(&self, required: &[String]) -> bool {
        required.iter().all(|r| self.scopes.contains(r))
    }
}

/// Per-request context handed to the server factory: who is calling and with what HTTP request.
#[derive(Debug, Clone)]
pub struct RequestContext {
    /// The authenticated principal, if an authenticator is configured and accepted the request.
    pub principal: Option<Principal>,
    /// The HTTP request line and headers.
    pub parts: Arc<http::request::Parts>,
}

/// The task a call may become, as its context reaches it. The tasks module implements it (its
/// `TaskLink`), so the context names nothing of the tasks module above it.
pub(crate) trait CallTask: Send + Sync + std::fmt::Debug {
    /// Whether the call may become a task at all (the tool allows it, the client declared it).
    fn allowed(&self) -> bool;
    /// Become a task now (`detached`: its handle, not the handler's answer, ends it); the
    /// task's id once it exists.
    fn become_task(&self, detached: bool) -> futures_util::future::BoxFuture<'_, Option<String>>;
    /// The task's id, once the call is one.
    fn task_id(&self) -> Option<String>;
    /// A progress report: once the call is a task it becomes the task's status message
    /// (`true`); before, it is the request's own notification (`false`).
    fn report(&self, progress: f64, total: Option<f64>, message: Option<&str>) -> bool;
    /// The task store, for a handle on the task.
    fn control(&self) -> Arc<dyn crate::task_handle::TaskControl>;
}

/// Request-scoped notifications waiting to be written (already encoded JSON-RPC messages).
pub(crate) type NotificationSender = mpsc::Sender<Vec<u8>>;
/// The receiving end, read by the response that carries them.
pub(crate) type NotificationReceiver = mpsc::Receiver<Vec<u8>>;

/// What a tool, prompt or resource handler knows about its call.
#[derive(Debug, Clone)]
pub struct CallContext {
    /// The request's validated `_meta` envelope (version, client capabilities, …).
    pub meta: RequestMeta,
    /// The authenticated principal, if any.
    pub principal: Option<Principal>,
    /// The HTTP request parts.
    pub parts: Arc<http::request::Parts>,
    /// MRTR: responses to earlier `inputRequests`, when this is a retry.
    pub input_responses: Option<Value>,
    /// MRTR: the verified `requestState` payload echoed by the client, when present.
    pub request_state: Option<Value>,
    pub(crate) notifications: Option<NotificationSender>,
    /// The task this call may become (the tasks extension), when it may become one.
    pub(crate) task: Option<Arc<dyn CallTask>>,
    /// The handler's drain signal, for [`CallContext::cancelled`].
    pub(crate) shutdown: Option<crate::shutdown::Shutdown>,
}

impl CallContext {
    pub(crate) fn new(meta: RequestMeta, request: &RequestContext, notifications: Option<NotificationSender>) -> Self {
        CallContext {
            meta,
            principal: request.principal.clone(),
            parts: request.parts.clone(),
            input_responses: None,
            request_state: None,
            notifications,
            task: None,
            shutdown: None,
        }
    }

    /// The caller's tenant (its principal's scope), if it has one: scoped notifications
    /// (`notify().tenant(tenant)`) reach this caller's streams.
    ///
    /// ```
    /// # fn demo(ctx: mcp_fleet_server::CallContext) {
    /// let tenant = ctx.tenant().unwrap_or("public");
    /// # }
    /// ```
    pub fn tenant(&self) -> Option<&str> {
        self.principal.as_ref().and_then(|p| p.tenant.as_deref())
    }

    /// Resolves when this call will not be answered after all: the node begins its drain
    /// ([`McpHandler::shutdown`](crate::McpHandler::shutdown)), or the client is gone (its
    /// response stream closed; seen when the request asked for progress or log messages).
    /// Dropping the handler's future is how a call is usually cancelled; this is for work the
    /// handler hands to other tasks, or a loop that wants to stop cleanly.
    ///
    /// ```
    /// use std::time::Duration;
    /// use mcp_fleet_server::{CallContext, McpServer, typed};
    /// let server = McpServer::builder("demo", "1").build();
    /// server.add(typed::tool("wait", "Waits a minute", |_: typed::NoArgs, ctx: CallContext| async move {
    ///     tokio::select! {
    ///         _ = tokio::time::sleep(Duration::from_secs(60)) => "waited",
    ///         _ = ctx.cancelled() => "cancelled",
    ///     }
    /// })).unwrap();
    /// ```
    pub async fn cancelled(&self) {
        let drain = async {
            match self.shutdown.clone() {
                Some(mut shutdown) => shutdown.recv().await,
                None => std::future::pending().await,
            }
        };
        let gone = async {
            match &self.notifications {
                Some(tx) => tx.closed().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            () = drain => {}
            () = gone => {}
        }
    }

    /// Whether [`cancelled`](Self::cancelled) has resolved.
    pub fn is_cancelled(&self) -> bool {
        self.shutdown.as_ref().is_some_and(crate::shutdown::Shutdown::is_shutdown)
            || self.notifications.as_ref().is_some_and(mpsc::Sender::is_closed)
    }

    /// Turn this call into a task now (the tasks extension), if it may become one — the tool
    /// supports tasks ([`TaskSupport`](crate::catalog::TaskSupport)) and the client declared the extension
    /// on this request: the task is created in the fleet's store, the client gets it as the
    /// call's answer, and this handler keeps running; its answer will complete the task (an
    /// `input_required` answer asks the client through the task, and the handler runs again
    /// with the answers, as an MRTR retry). `true` once the call is a task (also when it
    /// already was, or became one because it ran longer than
    /// [`TaskOptions::create_after`](crate::tasks::TaskOptions::create_after)); `false` when it
    /// cannot be one (then carry on: the client waits for the answer).
    pub async fn run_as_task(&self) -> bool {
        match &self.task {
            Some(link) => link.become_task(false).await.is_some(),
            None => false,
        }
    }

    /// Turn this call into a task whose work lives elsewhere: as
    /// [`run_as_task`](Self::run_as_task), but the task ends only through the returned handle
    /// (or a cancel, or its TTL), on any replica — this handler's own answer is then ignored.
    /// `-32603` when the call cannot become a task.
    pub async fn detach_task(&self) -> Result<crate::task_handle::TaskHandle, mcp_fleet_protocol::RpcError> {
        let link = self.task.as_ref().filter(|l| l.allowed());
        let id = match link {
            Some(link) => link.become_task(true).await,
            None => None,
        };
        match (link, id) {
            (Some(link), Some(id)) => Ok(crate::task_handle::TaskHandle::new(link.control(), id)),
            _ => Err(mcp_fleet_protocol::RpcError::internal(
                "This call cannot become a task: its tool does not support tasks, or the client did not declare the \
                 io.modelcontextprotocol/tasks extension",
            )),
        }
    }

    /// The id of the task this call became, if it did.
    pub fn task_id(&self) -> Option<String> {
        self.task.as_ref().and_then(|link| link.task_id())
    }

    /// Send `notifications/progress` if the request carried a progress token (otherwise a
    /// no-op). `progress` must increase with every call. The first notification switches the
    /// response to SSE.
    ///
    /// Once the call is a task, a progress report sets the task's status message instead (the
    /// `message`, else `progress/total`), written at most once per
    /// [`TaskOptions::status_interval`](crate::tasks::TaskOptions::status_interval).
    pub async fn progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        if self.task.as_ref().is_some_and(|link| link.report(progress, total, message)) {
            return;
        }
        let (Some(token), Some(tx)) = (&self.meta.progress_token, &self.notifications) else { return };
        let mut params = Map::new();
        params.insert("progressToken".into(), token.clone());
        params.insert("progress".into(), json!(progress));
        if let Some(total) = total {
            params.insert("total".into(), json!(total));
        }
        if let Some(message) = message {
            params.insert("message".into(), json!(message));
        }
        let msg = mcp_fleet_protocol::jsonrpc::encode_notification("notifications/progress", &Value::Object(params));
        // A closed channel means the response is gone (client disconnected): nothing to do.
        let _ = tx.send(msg).await;
    }

    /// Send `notifications/message` if the request opted in with a log level at or below
    /// `level` (L-2: never without the opt-in). A task has no log messages (the extension
    /// defines none): once the call is one, this is a no-op.
    pub async fn log(&self, level: LogLevel, logger: Option<&str>, data: Value) {
        if self.task_id().is_some() {
            return;
        }
        let (Some(min), Some(tx)) = (self.meta.log_level, &self.notifications) else { return };
        if level < min {
            return;
        }
        let mut params = json!({"level": level.as_str(), "data": data});
        if let Some(logger) = logger {
            params["logger"] = json!(logger);
        }
        let _ = tx.send(mcp_fleet_protocol::jsonrpc::encode_notification("notifications/message", &params)).await;
    }
}
