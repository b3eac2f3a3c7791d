//! Authentication: the [`Authenticator`] hook that turns a request's headers into a
//! [`Principal`] or refuses it with a `WWW-Authenticate` challenge ([`AuthError`]).
//!
//! It runs before the body is read (ladder steps 0–2), for every request to the MCP endpoint.
//! A closure `Fn(&Parts) -> Result<Principal, AuthError>` is an authenticator; anything that
//! must wait (a JWKS fetch, say) implements the trait and returns a future.
//!
//! The OAuth 2.1 resource server (JWT bearer tokens verified against the issuer's JWKS) is an
//! [`Authenticator`] of its own crate, `mcp-fleet-oauth`, so this crate carries no HTTP client
//! and no JOSE stack; what every protected resource shares — the RFC 9728
//! [`ProtectedResourceMetadata`] and the [`www_authenticate`] challenge pieces — stays here.

mod fleet_limits;
mod gate;
mod limits;
mod metadata;
pub mod www_authenticate;

pub(crate) use fleet_limits::{FleetLimits, Members};
pub use gate::{FLEET_STREAM_LEASE, LimitScope};
pub(crate) use gate::{LimitGate, ReservedStream, StreamSlot, stream_quota_error};
pub use limits::Rate;
pub(crate) use limits::{PrincipalLimits, RetryAfter};
pub use metadata::{MetadataError, ProtectedResourceMetadata};

use std::future::Future;
use std::pin::Pin;

use http::StatusCode;
use http::request::Parts;

use crate::context::Principal;

/// A future an [`Authenticator`] returns.
pub type AuthFuture<'a> = Pin<Box<dyn Future<Output = Result<Principal, AuthError>> + Send + 'a>>;

/// Turns request headers into a principal, or refuses the request.
///
/// ```
/// use mcp_fleet_server::{HandlerOptions, Principal};
/// use mcp_fleet_server::auth::AuthError;
/// let options = HandlerOptions::default().authenticator(|parts: &http::request::Parts| {
///     match parts.headers.get("x-api-key").map(|v| v.as_bytes()) {
///         Some(b"secret") => Ok(Principal::new("ops", None)),
///         _ => Err(AuthError::unauthenticated("ApiKey realm=\"mcp\"")),
///     }
/// });
/// ```
pub trait Authenticator: Send + Sync + 'static {
    /// Authenticate the request described by `parts`.
    fn authenticate<'a>(&'a self, parts: &'a Parts) -> AuthFuture<'a>;

    /// Fetches of the authorization server's signing keys (its JWKS) so far, attempts
    /// included, for the node's `mcp_fleet_auth_jwks_fetches_total` counter. `None`, the
    /// default: this authenticator fetches no keys, and the series is not exported.
    fn jwks_fetches(&self) -> Option<u64> {
        None
    }
}

impl<F> Authenticator for F
where
    F: Fn(&Parts) -> Result<Principal, AuthError> + Send + Sync + 'static,
{
    fn authenticate<'a>(&'a self, parts: &'a Parts) -> AuthFuture<'a> {
        Box::pin(std::future::ready(self(parts)))
    }
}

/// A refused request: its HTTP status and `WWW-Authenticate` challenge.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    /// 401: no credentials, or credentials that do not hold.
    #[error("authentication required")]
    Unauthenticated {
        /// The challenge, e.g. `Bearer resource_metadata="https://…/.well-known/oauth-protected-resource"`.
        www_authenticate: String,
    },
    /// 403: valid credentials without the permission the request needs.
    #[error("insufficient permissions")]
    Forbidden {
        /// The challenge, e.g. `Bearer error="insufficient_scope", scope="mcp:write"`.
        www_authenticate: String,
    },
}

impl AuthError {
    /// A 401 with `challenge`.
    pub fn unauthenticated(challenge: impl Into<String>) -> Self {
        AuthError::Unauthenticated { www_authenticate: challenge.into() }
    }

    /// A 403 with `challenge`.
    pub fn forbidden(challenge: impl Into<String>) -> Self {
        AuthError::Forbidden { www_authenticate: challenge.into() }
    }

    /// The HTTP status.
    pub fn status(&self) -> StatusCode {
        match self {
            AuthError::Unauthenticated { .. } => StatusCode::UNAUTHORIZED,
            AuthError::Forbidden { .. } => StatusCode::FORBIDDEN,
        }
    }

    /// The `WWW-Authenticate` value.
    pub fn challenge(&self) -> &str {
        match self {
            AuthError::Unauthenticated { www_authenticate } | AuthError::Forbidden { www_authenticate } => {
                www_authenticate
            }
        }
    }
}
