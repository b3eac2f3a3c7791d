//! Who may call on [`HandlerOptions`]: allowed origins and hosts (the DNS-rebinding guard),
//! the authenticator (the OAuth bearer one of `mcp-fleet-oauth`, or any other), the
//! protected-resource metadata, and the per-principal stream cap and request rate.

use std::sync::Arc;

use crate::auth::{Authenticator, LimitScope, ProtectedResourceMetadata, Rate};

use super::HandlerOptions;

impl HandlerOptions {
    /// Allowed `Origin` hostnames (port-agnostic); a request with another `Origin` gets 403, one
    /// without passes. Default: `localhost`, `127.0.0.1`, `[::1]`.
    pub fn allowed_origins<S: Into<String>>(mut self, hosts: impl IntoIterator<Item = S>) -> Self {
        self.allowed_origins = Some(hosts.into_iter().map(Into::into).collect());
        self
    }

    /// Accept any `Origin` (for servers not reachable from browsers, or behind a gateway that
    /// checks it).
    pub fn allow_any_origin(mut self) -> Self {
        self.allowed_origins = None;
        self
    }

    /// Allowed `Host` (or HTTP/2 `:authority`) hostnames; another gets 403. Default: any.
    pub fn allowed_hosts<S: Into<String>>(mut self, hosts: impl IntoIterator<Item = S>) -> Self {
        self.allowed_hosts = Some(hosts.into_iter().map(Into::into).collect());
        self
    }

    /// Authenticate every request (see [`Authenticator`]). Default: none, everyone is anonymous.
    /// An OAuth 2.1 resource server is `mcp-fleet-oauth`'s `BearerAuthenticator`, set here with
    /// its [`protected_resource`](Self::protected_resource) document (its `install` does both).
    pub fn authenticator(mut self, authenticator: impl Authenticator) -> Self {
        self.authenticator = Some(Arc::new(authenticator));
        self
    }

    /// Serve this RFC 9728 document at `/.well-known/oauth-protected-resource` and its
    /// path-suffixed form (GET, before any Origin check or authentication), for servers that
    /// authenticate with their own [`authenticator`](Self::authenticator); the challenges of
    /// a 403 from a tool then carry its `resource_metadata`. `mcp-fleet-oauth`'s
    /// `BearerAuthenticator::install` sets it. Default: none (those paths get 404).
    pub fn protected_resource(mut self, metadata: ProtectedResourceMetadata) -> Self {
        self.protected_resource = Some(metadata);
        self
    }

    /// Open listen streams one authenticated principal may hold on this node; past it a listen
    /// gets 429 with `-32603`. Callers without a principal (no authenticator) are bounded by
    /// [`max_streams`](Self::max_streams) only. Per replica. Default 100.
    pub fn max_streams_per_principal(mut self, streams: usize) -> Self {
        self.max_streams_per_principal = streams;
        self
    }

    /// Requests per principal on this node (a token bucket; callers without a principal share
    /// one); past it 429 with `Retry-After`. Per replica. Default: no limit.
    pub fn rate_per_principal(mut self, rate: Option<Rate>) -> Self {
        self.rate_per_principal = rate;
        self
    }

    /// Where [`max_streams_per_principal`](Self::max_streams_per_principal) and
    /// [`rate_per_principal`](Self::rate_per_principal) are counted: on each replica (no round
    /// trip; N replicas admit N times as much), or across the fleet through the bus's keyspace
    /// (see [`LimitScope::Fleet`] for the cost). Default [`LimitScope::Replica`].
    pub fn limit_scope(mut self, scope: LimitScope) -> Self {
        self.limit_scope = scope;
        self
    }
}
