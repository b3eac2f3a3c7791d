//! Handlers: what a tool, resource or prompt runs, and the arguments it gets.
//!
//! Any `Fn(A) -> impl Future<Output = Result<R, RpcError>>` with `R: Into<Outcome<T>>` is a
//! [`Handler`]; registration takes `impl Handler<ToolCall, CallToolResult>` and so on, so the
//! bounds are written once, here. Handlers run guarded: a panic becomes `-32603` for that
//! call instead of a dropped connection.

use std::future::Future;
use std::sync::Arc;

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use mcp_fleet_protocol::RpcError;
use serde_json::{Map, Value};

use crate::context::CallContext;
use crate::outcome::Outcome;

/// Arguments of one `tools/call`.
#[derive(Debug, Clone)]
pub struct ToolCall {
    /// The `arguments` object (empty when the client sent none).
    pub arguments: Map<String, Value>,
    /// The call's context.
    pub ctx: CallContext,
}

/// One `resources/read` of a static resource or a template match.
#[derive(Debug, Clone)]
pub struct ResourceRead {
    /// The requested URI.
    pub uri: String,
    /// Template variables, when served by a template (`{id}` → value).
    pub variables: Map<String, Value>,
    /// The call's context.
    pub ctx: CallContext,
}

/// One `prompts/get`.
#[derive(Debug, Clone)]
pub struct PromptGet {
    /// String arguments.
    pub arguments: Map<String, Value>,
    /// The call's context.
    pub ctx: CallContext,
}

/// Something that answers one kind of call (`A`: [`ToolCall`], [`ResourceRead`] or
/// [`PromptGet`]) with a `T` — or, for MRTR, a request for more input ([`Outcome`]).
/// Implemented for every suitable async function or closure (closure arguments need no type
/// annotation):
///
/// ```
/// use mcp_fleet_server::{McpServer, catalog::ToolCall, types::{CallToolResult, Tool}};
/// async fn add(call: ToolCall) -> Result<CallToolResult, mcp_fleet_server::RpcError> {
///     let n = call.arguments.get("n").and_then(|v| v.as_i64()).unwrap_or(0);
///     Ok(CallToolResult::text((n + 1).to_string()))
/// }
/// let server = McpServer::builder("demo", "1").build();
/// server.tool(Tool::new("inc", "Adds one"), add);
/// server.tool(Tool::new("echo", "Echoes"), |call| async move { Ok(CallToolResult::text(format!("{:?}", call.arguments))) });
/// ```
pub trait Handler<A, T>: Fn(A) -> <Self as Handler<A, T>>::Future + Send + Sync + 'static {
    /// The future the handler returns.
    type Future: Future<Output = Result<Self::Answer, RpcError>> + Send + 'static;
    /// What it resolves to: a `T`, or an [`Outcome<T>`].
    type Answer: Into<Outcome<T>>;
}

impl<A, T, F, Fut, R> Handler<A, T> for F
where
    F: Fn(A) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<R, RpcError>> + Send + 'static,
    R: Into<Outcome<T>>,
{
    type Future = Fut;
    type Answer = R;
}

/// A registered handler, shared by every catalog snapshot that lists its entry.
pub(crate) type SharedHandler<A, T> = Arc<dyn Fn(A) -> BoxFuture<'static, Result<Outcome<T>, RpcError>> + Send + Sync>;

/// Share `handler`, its result turned into an [`Outcome`].
pub(crate) fn shared<A, T>(handler: impl Handler<A, T>) -> SharedHandler<A, T> {
    Arc::new(move |arg| handler(arg).map(|result| result.map(Into::into)).boxed())
}

/// Run `handler` for `arg`, turning a panic into `-32603` instead of a dropped connection.
pub(crate) fn run_guarded<A: 'static, T: Send + 'static>(
    handler: &SharedHandler<A, T>,
    arg: A,
) -> BoxFuture<'static, Result<Outcome<T>, RpcError>> {
    let future = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| handler(arg)));
    match future {
        Ok(future) => std::panic::AssertUnwindSafe(future)
            .catch_unwind()
            .map(|r| r.unwrap_or_else(|_| Err(RpcError::internal("The handler failed unexpectedly"))))
            .boxed(),
        Err(_) => futures_util::future::ready(Err(RpcError::internal("The handler failed unexpectedly"))).boxed(),
    }
}
