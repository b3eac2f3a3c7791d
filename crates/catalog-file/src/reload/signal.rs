//! SIGHUP as an explicit reload trigger — the conventional "re-read your config" signal,
//! for operators and for mounts whose changes no event reports.

use std::future::Future;

use tokio::signal::unix::{SignalKind, signal};

use super::reloader::CatalogReloader;

/// Install a SIGHUP listener now and return the loop that turns each SIGHUP into
/// [`CatalogReloader::reload_now`] (outcomes are logged and counted there). Spawn it; it runs
/// until the task is dropped. Must be called inside a tokio runtime. Once installed, SIGHUP no
/// longer terminates the process.
///
/// ```no_run
/// # async fn node(reloader: mcp_fleet_catalog_file::CatalogReloader) -> std::io::Result<()> {
/// tokio::spawn(mcp_fleet_catalog_file::reload_on_sighup(reloader.clone())?);
/// # Ok(()) }
/// ```
pub fn reload_on_sighup(reloader: CatalogReloader) -> std::io::Result<impl Future<Output = ()> + Send + 'static> {
    let mut hangups = signal(SignalKind::hangup())?;
    Ok(async move {
        while hangups.recv().await.is_some() {
            tracing::info!(path = %reloader.path().display(), "SIGHUP: reloading the catalog");
            // The outcome is logged and counted by reload_now.
            let _ = reloader.reload_now().await;
        }
    })
}
