//! [`CallInterceptor`]: one hook around a `tools/call`, and the chain that runs them in
//! registration order around the tool's handler.

use std::sync::Arc;

use futures_util::future::BoxFuture;
use mcp_fleet_protocol::RpcError;
use mcp_fleet_protocol::types::{CacheHint, CallToolResult};

use crate::catalog::{ToolCall, ToolFn, run_guarded};
use crate::outcome::Outcome;

/// What a tool call resolves to: its result, or (MRTR) a request for more input.
pub type CallAnswer = Result<Outcome<CallToolResult>, RpcError>;

/// One `tools/call`, as an interceptor sees it.
#[derive(Debug, Clone)]
pub struct ToolInvocation {
    /// The tool's name.
    pub tool: Arc<str>,
    /// The content revision of the tool list serving the call: it changes whenever any
    /// tool's definition does, so a cache keyed by it never serves a result of an older
    /// definition.
    pub revision: u64,
    /// How the tool's results may be cached, as its registration said
    /// ([`CatalogEdit::set_cache_hint`](crate::catalog::CatalogEdit::set_cache_hint)); `None`: nothing
    /// said, so private (CACHE-6's conservative default).
    pub cache_hint: Option<CacheHint>,
    /// The arguments (already checked against the input schema) and the call's context.
    pub call: ToolCall,
}

/// The rest of the chain: the next interceptor, or the tool's handler.
pub struct Next {
    rest: Arc<[Arc<dyn CallInterceptor>]>,
    handler: ToolFn,
}

impl Next {
    /// Run the rest of the chain for `invocation` (changed or not).
    pub fn run(self, invocation: ToolInvocation) -> BoxFuture<'static, CallAnswer> {
        match self.rest.split_first() {
            Some((first, _)) => {
                let first = first.clone();
                let next = Next { rest: self.rest[1..].into(), handler: self.handler };
                first.intercept(invocation, next)
            }
            None => run_guarded(&self.handler, invocation.call),
        }
    }
}

/// A hook around every `tools/call`. It may answer itself (a cache hit, an open circuit),
/// change the invocation before calling `next.run`, or look at and change what comes back.
///
/// Its contract: it answers every invocation exactly once, with `next`'s answer or its own;
/// it may call `next.run` at most once (`Next` is consumed); it must not block the runtime.
///
/// ```
/// use std::sync::Arc;
/// use std::sync::atomic::{AtomicU64, Ordering};
/// use futures_util::future::BoxFuture;
/// use mcp_fleet_server::{intercept::CallAnswer, intercept::CallInterceptor, HandlerOptions, intercept::Next, intercept::ToolInvocation};
///
/// /// Counts calls per handler: an audit hook in miniature.
/// struct Audit(AtomicU64);
///
/// impl CallInterceptor for Audit {
///     fn intercept(&self, invocation: ToolInvocation, next: Next) -> BoxFuture<'static, CallAnswer> {
///         self.0.fetch_add(1, Ordering::Relaxed);
///         next.run(invocation)
///     }
/// }
/// let options = HandlerOptions::default().intercept(Audit(AtomicU64::new(0)));
/// # drop(options);
/// ```
pub trait CallInterceptor: Send + Sync + 'static {
    /// Answer `invocation`, usually through `next.run`.
    fn intercept(&self, invocation: ToolInvocation, next: Next) -> BoxFuture<'static, CallAnswer>;
}

/// `handler` behind `interceptors` (itself when there are none), as one tool handler.
pub(crate) fn intercepted(
    handler: ToolFn,
    interceptors: &Arc<[Arc<dyn CallInterceptor>]>,
    tool: &str,
    revision: u64,
    cache_hint: Option<CacheHint>,
) -> ToolFn {
    if interceptors.is_empty() {
        return handler;
    }
    let (interceptors, tool): (_, Arc<str>) = (interceptors.clone(), tool.into());
    Arc::new(move |call: ToolCall| {
        let next = Next { rest: interceptors.clone(), handler: handler.clone() };
        next.run(ToolInvocation { tool: tool.clone(), revision, cache_hint, call })
    })
}
