//! [`TypedHandler`]: the functions a typed entry runs. A handler takes its arguments as a type
//! and, if it wants them, what else its call carries (a tool's or prompt's [`CallContext`],
//! a template read's [`ResourceRead`]): `|args: T|` or `|args: T, ctx: CallContext|`, sync
//! construction, async body, as axum's handlers are chosen by their arguments.
//!
//! [`CallContext`]: crate::CallContext
//! [`ResourceRead`]: crate::catalog::ResourceRead

use std::future::Future;

/// A function a typed tool, prompt or template runs: `Fn(T) -> impl Future` or
/// `Fn(T, X) -> impl Future`, where `X` is what the call carries besides its arguments
/// ([`CallContext`](crate::CallContext) for tools and prompts, [`ResourceRead`](crate::catalog::ResourceRead)
/// for templates). `M` only tells the two shapes apart; it is inferred.
///
/// ```
/// use mcp_fleet_server::{CallContext, McpServer, typed};
/// # #[derive(serde::Deserialize, schemars::JsonSchema)] struct Query { text: String }
/// let server = McpServer::builder("demo", "1").build();
/// // The arguments alone…
/// server.add(typed::tool("echo", "Echoes", |q: Query| async move { q.text })).unwrap();
/// // …or with the call's context (who calls, progress, logging, cancellation).
/// server.add(typed::tool("whoami", "Names the caller", |_: typed::NoArgs, ctx: CallContext| async move {
///     ctx.principal.map_or_else(|| "anonymous".to_owned(), |p| p.id)
/// })).unwrap();
/// ```
pub trait TypedHandler<T, X, M>: Send + Sync + 'static {
    /// The handler's future.
    type Future: Future + Send + 'static;
    /// Run the handler for `args`.
    fn call(&self, args: T, extra: X) -> Self::Future;
}

impl<F, Fut, T, X> TypedHandler<T, X, (T,)> for F
where
    F: Fn(T) -> Fut + Send + Sync + 'static,
    Fut: Future + Send + 'static,
{
    type Future = Fut;
    fn call(&self, args: T, _extra: X) -> Fut {
        self(args)
    }
}

impl<F, Fut, T, X> TypedHandler<T, X, (T, X)> for F
where
    F: Fn(T, X) -> Fut + Send + Sync + 'static,
    Fut: Future + Send + 'static,
{
    type Future = Fut;
    fn call(&self, args: T, extra: X) -> Fut {
        self(args, extra)
    }
}
