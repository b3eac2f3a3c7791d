//! An OAuth-protected server: the endpoint is an OAuth 2.1 resource server that accepts JWT
//! access tokens of one issuer for its own URL (the audience), with the scope `mcp:use`;
//! anything else gets 401 (or 403) with a `WWW-Authenticate` challenge pointing at the RFC
//! 9728 metadata it serves. Tools see the token's subject.
//!
//! `OAUTH_ISSUER=https://auth.example.com cargo run -p mcp-fleet-examples --bin oauth`; the
//! JWKS is found through the issuer's metadata unless `OAUTH_JWKS_URL` names it.

use mcp_fleet_oauth::{BearerAuthenticator, BearerConfig};
use mcp_fleet_server::{CallContext, HandlerOptions, McpServer, create_mcp_handler, typed};

#[tokio::main]
async fn main() -> mcp_fleet_examples::Result {
    mcp_fleet_examples::init_tracing();
    let issuer = std::env::var("OAUTH_ISSUER").map_err(|_| "set OAUTH_ISSUER to the token issuer's URL")?;
    let jwks_url = std::env::var("OAUTH_JWKS_URL").ok();
    // Bound first: the audience tokens must name is this endpoint's public URL (behind a
    // proxy, set OAUTH_AUDIENCE to it).
    let (listener, url) = mcp_fleet_examples::bind(&mcp_fleet_examples::listen_addr()).await?;
    let audience = std::env::var("OAUTH_AUDIENCE").unwrap_or(url);
    let config = BearerConfig::from_flags(&issuer, &audience, jwks_url.as_deref(), None, "mcp:use")?;
    // The authenticator, and the RFC 9728 metadata its 401 points at.
    let options = BearerAuthenticator::new(config)?.install(HandlerOptions::default())?;

    let server = McpServer::builder("oauth", "1.0.0").build();
    server.add(typed::tool(
        "whoami",
        "Says who the token was issued to",
        |_: typed::NoArgs, ctx: CallContext| async move {
            let principal = ctx.principal.map(|p| format!("{} from {}", p.id, p.issuer.unwrap_or_default()));
            principal.unwrap_or_else(|| "nobody".into())
        },
    ))?;
    let handler = create_mcp_handler(server, options).await?;
    mcp_fleet_examples::serve(handler, listener).await
}
