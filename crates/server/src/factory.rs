//! [`ServerFactory`]: what the handler asks, per request, for the server definition to serve —
//! one [`McpServer`] for everyone, or a closure choosing one per tenant.

use crate::catalog::McpServer;
use crate::context::RequestContext;
use crate::error::ServerError;
use crate::notify::Notifier;

/// Produces the server definition to serve for one request. Must be cheap: return a clone of
/// an `Arc`-backed [`McpServer`], not a freshly built one.
pub trait ServerFactory: Send + Sync + 'static {
    /// The server for this request.
    fn server(&self, ctx: &RequestContext) -> McpServer;

    /// Called once by [`create_mcp_handler`](crate::create_mcp_handler) with the handler's
    /// notifier. An [`McpServer`] passed directly attaches it so its catalog changes are
    /// announced; a closure factory leaves that to the application
    /// ([`McpServer::publish_changes_to`]).
    fn attach(&self, _notifier: &Notifier) -> Result<(), ServerError> {
        Ok(())
    }
}

impl ServerFactory for McpServer {
    fn server(&self, _ctx: &RequestContext) -> McpServer {
        self.clone()
    }

    fn attach(&self, notifier: &Notifier) -> Result<(), ServerError> {
        self.publish_changes_to(notifier.clone())
    }
}

impl<F> ServerFactory for F
where
    F: Fn(&RequestContext) -> McpServer + Send + Sync + 'static,
{
    fn server(&self, ctx: &RequestContext) -> McpServer {
        self(ctx)
    }
}
