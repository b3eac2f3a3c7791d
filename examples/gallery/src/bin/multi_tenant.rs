//! One endpoint, a catalog per tenant. An authenticator turns the `x-tenant` header into a
//! `Principal` whose `scope` is the tenant; the factory closure picks that tenant's
//! `McpServer` per request; each tenant's catalog announces its changes in its own scope
//! (`handler.notify().tenant(tenant)`), so only that tenant's listen streams hear them.
//!
//! `cargo run -p mcp-fleet-examples --bin multi_tenant`, then send `x-tenant: tenant-a` (or
//! `tenant-b`) and call `add_tool` with `{"name": "report"}`: only tenant-a's catalog grows.

use std::collections::HashMap;
use std::sync::Arc;

use mcp_fleet_server::auth::AuthError;
use mcp_fleet_server::typed::{self, NoArgs, ToolError};
use mcp_fleet_server::{HandlerOptions, McpServer, Principal, RequestContext, create_mcp_handler};
use schemars::JsonSchema;
use serde::Deserialize;

const TENANTS: [&str; 2] = ["tenant-a", "tenant-b"];

#[derive(Deserialize, JsonSchema)]
struct NewTool {
    /// The new tool's name.
    name: String,
}

/// A tenant's catalog: one tool that adds tools to it.
fn tenant_server(tenant: &str) -> Result<McpServer, mcp_fleet_server::ServerError> {
    let server = McpServer::builder(format!("{tenant}-tools"), "1.0.0").build();
    let catalog = server.clone();
    server.add(typed::tool("add_tool", "Adds a tool to your tenant's catalog", move |new: NewTool| {
        let catalog = catalog.clone();
        async move {
            let reply = format!("{} was added", new.name);
            catalog.add(typed::tool(new.name, "Added by add_tool", |_: NoArgs| async { "here" }))?;
            Ok::<_, ToolError>(reply)
        }
    }))?;
    Ok(server)
}

/// The `x-tenant` header, one of [`TENANTS`], as the principal's scope; anything else is 401.
fn tenant_from_header(parts: &http::request::Parts) -> Result<Principal, AuthError> {
    let tenant = parts.headers.get("x-tenant").and_then(|v| v.to_str().ok()).filter(|t| TENANTS.contains(t));
    match tenant {
        Some(t) => Ok(Principal::new(format!("user@{t}"), Some(t.to_owned()))),
        None => Err(AuthError::unauthenticated("Tenant realm=\"mcp\"")),
    }
}

#[tokio::main]
async fn main() -> mcp_fleet_examples::Result {
    mcp_fleet_examples::init_tracing();
    let mut servers = HashMap::new();
    for tenant in TENANTS {
        servers.insert(tenant, tenant_server(tenant)?);
    }
    let servers = Arc::new(servers);
    let by_tenant = servers.clone();
    let factory = move |ctx: &RequestContext| {
        // The authenticator admitted only known tenants: every request has one of them.
        let tenant = ctx.principal.as_ref().and_then(|p| p.tenant.as_deref()).unwrap_or(TENANTS[0]);
        by_tenant[tenant].clone()
    };
    let options = HandlerOptions::default().authenticator(tenant_from_header);
    let handler = create_mcp_handler(factory, options).await?;
    // A closure factory leaves announcing to us: each catalog announces in its tenant's scope.
    for (tenant, server) in servers.iter() {
        server.publish_changes_to(handler.notify().tenant(*tenant))?;
    }
    let (listener, _) = mcp_fleet_examples::bind(&mcp_fleet_examples::listen_addr()).await?;
    mcp_fleet_examples::serve(handler, listener).await
}
