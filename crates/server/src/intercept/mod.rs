//! Interceptors: code that runs around every `tools/call` — caching, circuit breaking,
//! argument or result filtering, audit — registered on the handler with
//! [`HandlerOptions::intercept`](crate::HandlerOptions::intercept).
//!
//! - `chain`: the [`CallInterceptor`] trait, what it is given ([`ToolInvocation`]) and how it
//!   goes on ([`Next`]).
//! - `cache`: [`ResultCache`], the shipped example — results kept per tool, arguments,
//!   catalog revision and caller.
//!
//! Interceptors run after the framework's own checks (scopes, capabilities, `Mcp-Param-*`
//! headers, the input schema) and around the handler *with* its output check, so what an
//! interceptor sees coming back conforms to the tool's `outputSchema`. The first registered
//! is the outermost. A call that becomes a task runs its interceptors inside the task.

mod cache;
mod chain;

pub use cache::ResultCache;
pub use chain::{CallAnswer, CallInterceptor, Next, ToolInvocation};

pub(crate) use chain::intercepted;
