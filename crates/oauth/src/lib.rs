//! The OAuth 2.1 resource server of mcp-fleet (MCP authorization, "Token Handling"): a
//! [`BearerAuthenticator`] takes JWT access tokens from `Authorization: Bearer …`, verifies
//! them against the issuer's JWKS, checks `iss`, `aud` (RFC 8707: issued for this server),
//! `exp`/`nbf`, the token type and the required scopes, and turns the claims into a
//! [`Principal`](mcp_fleet_server::Principal) — or refuses the request with the challenge RFC
//! 6750 and RFC 9728 call for. It verifies tokens; it never issues them.
//!
//! It owns the bearer authenticator and what it checks ([`BearerConfig`], validated once at
//! construction; [`TokenError`] for a refused token) and the issuer's signing keys: fetched
//! from the configured JWKS URL or the one the issuer's metadata names, cached, refetched
//! when a token names a key the cache does not hold, rate-limited, and no longer trusted past
//! a hard maximum age ([`JwksError`] for a fetch that failed).
//!
//! Why a crate of its own: this is what brings an HTTP client (reqwest) and a JOSE stack
//! (jsonwebtoken) into a build. `mcp-fleet-server` depends on neither, so a server that
//! authenticates otherwise, or not at all, never compiles them. What every protected resource
//! shares stays in the server crate, and this crate builds on it: the
//! [`Authenticator`](mcp_fleet_server::auth::Authenticator) hook it implements, the RFC 9728
//! [`ProtectedResourceMetadata`](mcp_fleet_server::auth::ProtectedResourceMetadata) it derives
//! from its configuration, and the
//! [`www_authenticate`](mcp_fleet_server::auth::www_authenticate) pieces its challenges are
//! written with.
//!
//! ```no_run
//! use mcp_fleet_oauth::{BearerAuthenticator, BearerConfig};
//! use mcp_fleet_server::auth::Rate;
//! use mcp_fleet_server::{HandlerOptions, McpServer, create_mcp_handler};
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let config = BearerConfig::from_flags(
//!     "https://auth.example.com",    // issuer: tokens' `iss`
//!     "https://mcp.example.com/mcp", // audience: this endpoint's public URL, tokens' `aud`
//!     None,                          // JWKS URL: discovered from the issuer's metadata
//!     Some("org_id"),                // tenant claim -> Principal::tenant
//!     "mcp:use",                     // scopes every request needs (comma-separated)
//! )?;
//! let bearer = BearerAuthenticator::new(config)?;
//! if let Err(error) = bearer.warm_up().await {
//!     eprintln!("JWKS not reachable yet ({error}); tokens are refused until it is");
//! }
//! // The authenticator, and the RFC 9728 document at /.well-known/oauth-protected-resource/mcp.
//! let options = bearer
//!     .install(HandlerOptions::default())?
//!     .rate_per_principal(Some(Rate { per_second: 10.0, burst: 20 }));
//! let handler = create_mcp_handler(McpServer::builder("files", "1.0.0").build(), options).await?;
//! handler.serve(tokio::net::TcpListener::bind("0.0.0.0:8080").await?).await?;
//! # Ok(()) }
//! ```

mod bearer;
mod jwks;

pub use bearer::{BearerAuthenticator, BearerConfig, BearerConfigError, JwsAlgorithm, TokenError, TokenTypeCheck};
pub use jwks::JwksError;
