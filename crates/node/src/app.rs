//! The node's life: raise the file limit (and observe its execution identity, off the
//! runtime) → check the auth flags and load the catalog (either
//! invalid is fatal) → bind both ports (so probes answer at once) → serve the admin endpoint →
//! connect the bus, retrying, while the issuer's keys are fetched → build the handler (now
//! ready) and follow the catalog file → serve MCP → wait for SIGTERM/Ctrl-C → drain both ports
//! within the deadline.

use std::sync::Arc;
use std::time::Duration;

use mcp_fleet_server::{HandlerOptions, create_mcp_handler, identity::ExecutionIdentity};
use tokio::net::TcpListener;

use crate::admin::{self, Admin, AdminToken};
use crate::auth::NodeAuth;
use crate::catalog::NodeCatalog;
use crate::config::Config;
use crate::nofile;
use crate::state::NodeState;

/// Run the node until `stop` resolves.
pub(crate) async fn run(
    config: Config,
    audit_logger: Option<opentelemetry_sdk::logs::SdkLogger>,
    stop: impl Future<Output = ()>,
) -> Result<(), Box<dyn std::error::Error>> {
    nofile::report(nofile::raise(), config.max_streams);
    // Reading the whole executable blocks: off the runtime, while the node starts.
    let (pod_uid, image) = (config.pod_uid.clone(), config.image.clone());
    let identity = tokio::task::spawn_blocking(move || observe_identity(pod_uid, image));
    let flag = config.admin_token.as_ref().map(|t| t.expose().as_str());
    let token = admin::read_token(flag, config.admin_token_file.as_deref())?;
    if let Some(addr) = config.admin_listen {
        admin::check_exposure(addr, token.is_some(), config.admin_insecure)?;
    }
    let auth = NodeAuth::from_config(&config)?;
    crate::catalog::check_files_root(&config)?;
    let catalog = NodeCatalog::load(&config).await?;
    let listener = TcpListener::bind(config.listen).await?;
    auth.warn_if_open(listener.local_addr()?);
    let state = NodeState::default();
    let (stop_admin, admin_stopped) = tokio::sync::oneshot::channel::<()>();
    let deadline = Duration::from_secs(config.shutdown_secs);
    let admin = match config.admin_listen {
        Some(addr) => {
            let admin_listener = TcpListener::bind(addr).await?;
            tracing::info!(addr = %admin_listener.local_addr()?, "serving the admin endpoint (probes answer from now on)");
            let token = token.as_deref().map(AdminToken::new);
            let bus = Arc::from(config.bus.redacted());
            let admin = Admin { state: state.clone(), token, catalog_stats: catalog.stats(), bus };
            let stopped = async move {
                let _ = admin_stopped.await;
            };
            Some(tokio::spawn(admin.serve(admin_listener, stopped, deadline)))
        }
        None => None,
    };
    let node_id = config.node_id();
    let patience = Duration::from_secs(config.bus_connect_secs);
    // The keys are fetched while the bus connects; a JWKS outage only logs (see NodeAuth).
    let (bus, ()) =
        tokio::join!(mcp_fleet_bus_connect::connect_patiently(config.bus.expose(), &node_id, patience), auth.warm_up());
    let identity = identity.await?;
    tracing::info!(epoch = %identity.epoch, exe_sha256 = identity.exe_sha256.as_deref().unwrap_or("unknown"),
        commit = identity.commit.as_deref().unwrap_or("unknown"), "execution identity observed");
    let mut options = options(&config, node_id).bus(bus?).identity(identity);
    if let Some(audit) = crate::audit::options(&config, audit_logger) {
        options = options.audit(audit);
    }
    let options = auth.apply(options)?;
    let handler = create_mcp_handler(catalog.server(), options).await?;
    state.set_handler(handler.clone());
    let following = catalog.follow()?;
    tracing::info!(addr = %listener.local_addr()?, bus = %config.bus, "serving MCP at /mcp");
    let serving = tokio::spawn({
        let handler = handler.clone();
        async move { handler.serve(listener).await }
    });
    stop.await;
    tracing::info!("shutting down: closing listen streams and draining connections");
    drop(following);
    handler.shutdown().await;
    let _ = stop_admin.send(());
    serving.await??;
    if let Some(admin) = admin {
        admin.await?;
    }
    Ok(())
}

/// This process's execution identity: the node's version, the commit `build.rs` recorded,
/// and the pod UID and image the orchestrator passed (`--pod-uid`, `--image`).
fn observe_identity(pod_uid: Option<String>, image: Option<String>) -> ExecutionIdentity {
    let mut identity = ExecutionIdentity::observe(env!("CARGO_PKG_VERSION"), option_env!("MCP_FLEET_COMMIT"));
    let given = |v: Option<String>| v.map(|v| v.trim().to_owned()).filter(|v| !v.is_empty());
    identity.pod_uid = given(pod_uid).or(identity.pod_uid);
    identity.image = given(image).or(identity.image);
    identity
}

fn options(config: &Config, node_id: String) -> HandlerOptions {
    let options = HandlerOptions::default()
        .node_id(node_id)
        .max_body_bytes(config.max_body_bytes)
        .max_streams(config.max_streams)
        .max_uris_per_listen(config.max_uris_per_listen)
        .max_uri_bytes(config.max_uri_bytes)
        .max_subscription_bytes_per_stream(config.max_subscription_bytes_per_stream)
        .max_subscription_bytes_per_principal(config.max_subscription_bytes_per_principal)
        .max_streams_per_address(config.max_streams_per_address)
        .listen_uris_must_exist(config.listen_uris_must_exist)
        .keepalive(config.keepalive())
        .max_stream_lifetime(config.max_stream_lifetime())
        .shutdown_deadline(Duration::from_secs(config.shutdown_secs))
        .bus_down_grace(Duration::from_secs(config.ready_bus_grace_secs))
        .catalog_notifications(config.catalog_notifications())
        .membership_ttl(Duration::from_secs(config.membership_ttl_secs))
        .convergence_timeout(Duration::from_secs(config.convergence_timeout_secs))
        .identity_in_tools_revision(config.identity_in_tools_revision)
        .direct_http1_listen_streams(!config.http1_listen_in_hyper)
        .era2025(config.legacy());
    if config.allowed_origins.iter().any(|o| o == "*") {
        options.allow_any_origin()
    } else {
        options.allowed_origins(config.allowed_origins.clone())
    }
}
