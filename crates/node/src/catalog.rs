//! What the node serves: the compiled-in demo catalog, or the catalog file given with
//! `--catalog` — loaded before the handler exists (an invalid file at start is fatal: a pod
//! that cannot serve what it was given should not become ready), then kept in sync with the
//! file on directory events (ConfigMap `..data` swaps included), on the poll and on SIGHUP.
//! An invalid file later is logged, counted, and leaves the previous catalog serving. The
//! reload counters join the handler's `/metrics`.

use std::sync::Arc;
use std::time::{Duration, UNIX_EPOCH};

use mcp_fleet_catalog_file::{
    CatalogError, CatalogReloader, Confinement, EnvAllowlist, ReloadOptions, ReloadStats, reload_on_sighup,
};
use mcp_fleet_server::McpServer;
use tokio::task::JoinHandle;

use crate::config::Config;
use crate::demo;

/// The node's catalog and, with a file, what keeps it in sync.
pub(crate) struct NodeCatalog {
    server: McpServer,
    reloader: Option<CatalogReloader>,
}

impl NodeCatalog {
    /// The demo catalog, or the file's (loaded now; `Err` names the position of the problem).
    pub(crate) async fn load(config: &Config) -> Result<NodeCatalog, CatalogError> {
        let Some(path) = &config.catalog else {
            return Ok(NodeCatalog { server: demo::demo_server(), reloader: None });
        };
        let server = McpServer::builder("mcp-fleet", env!("CARGO_PKG_VERSION")).build();
        let options = ReloadOptions {
            poll_interval: config.catalog_poll(),
            confinement: confinement(config),
            ..ReloadOptions::default()
        };
        let reloader = CatalogReloader::try_new(server.clone(), path, options)?;
        reloader.reload_now().await?;
        Ok(NodeCatalog { server, reloader: Some(reloader) })
    }

    /// The server the handler serves.
    pub(crate) fn server(&self) -> McpServer {
        self.server.clone()
    }

    /// Start following the file (directory events, poll, SIGHUP); the tasks end when the
    /// returned [`Following`] is dropped. Nothing to follow for the demo catalog.
    pub(crate) fn follow(&self) -> std::io::Result<Following> {
        let Some(reloader) = &self.reloader else { return Ok(Following(Vec::new())) };
        let sighup = tokio::spawn(reload_on_sighup(reloader.clone())?);
        let watch = tokio::spawn(reloader.clone().run(std::future::pending()));
        Ok(Following(vec![sighup, watch]))
    }

    /// The reload counters, with a catalog file.
    pub(crate) fn stats(&self) -> Option<Arc<ReloadStats>> {
        self.reloader.as_ref().map(CatalogReloader::stats)
    }
}

/// What the catalog file may reach: --catalog-files-root, MCP_CATALOG_* plus
/// --catalog-env-allow, link-local addresses only with --catalog-http-allow-link-local.
fn confinement(config: &Config) -> Confinement {
    Confinement {
        files_root: config.catalog_files_root.clone(),
        env: EnvAllowlist::default().widen(&config.catalog_env_allow),
        allow_link_local: config.catalog_http_allow_link_local,
    }
}

/// Refuse a catalog whose files root (--catalog-files-root, else the catalog file's folder)
/// holds one of the node's secret files: any caller could read it as a `file` resource.
/// `Err` names the file and what to change.
pub(crate) fn check_files_root(config: &Config) -> Result<(), String> {
    let Some(catalog) = &config.catalog else { return Ok(()) };
    let confinement = confinement(config);
    let secrets = [
        ("--admin-token-file", &config.admin_token_file),
        ("--request-state-key-file", &config.request_state_key_file),
    ];
    for (flag, file) in secrets {
        if let Some(file) = file.as_deref().filter(|file| confinement.reaches(catalog, file)) {
            return Err(format!(
                "the catalog's files root holds the {flag} {}: a catalog `file` resource could serve it; \
                 point --catalog-files-root (or --catalog) at a folder without secrets",
                file.display()
            ));
        }
    }
    Ok(())
}

/// The tasks following the catalog file; dropping it stops them.
pub(crate) struct Following(Vec<JoinHandle<()>>);

impl Drop for Following {
    fn drop(&mut self) {
        for task in &self.0 {
            task.abort();
        }
    }
}

/// The reload counters as OpenMetrics families (to splice before `# EOF`).
pub(crate) fn metrics_text(stats: &ReloadStats) -> String {
    let mut out = String::new();
    family(&mut out, "mcp_fleet_catalog_reloads", "counter", "Catalog file contents applied, the first load included");
    out.push_str(&format!("mcp_fleet_catalog_reloads_total {}\n", stats.reloads()));
    family(
        &mut out,
        "mcp_fleet_catalog_reload_failures",
        "counter",
        "Catalog file reloads refused (the previous catalog kept serving)",
    );
    out.push_str(&format!("mcp_fleet_catalog_reload_failures_total {}\n", stats.failures()));
    if let Some(at) = stats.last_success() {
        let name = "mcp_fleet_catalog_last_reload_success_timestamp_seconds";
        family(&mut out, name, "gauge", "When a catalog file was last applied (Unix time)");
        let secs = at.duration_since(UNIX_EPOCH).unwrap_or(Duration::ZERO).as_secs_f64();
        out.push_str(&format!("{name} {secs:.3}\n"));
    }
    out
}

fn family(out: &mut String, name: &str, kind: &str, help: &str) {
    out.push_str(&format!("# HELP {name} {help}.\n# TYPE {name} {kind}\n"));
}

/// `text` (the handler's OpenMetrics exposition) with `extra` families added before `# EOF`.
pub(crate) fn splice_metrics(text: String, extra: &str) -> String {
    match text.strip_suffix("# EOF\n") {
        Some(body) => format!("{body}{extra}# EOF\n"),
        None => text + extra,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reload_counters_join_the_exposition_before_its_end() {
        let stats = ReloadStats::default();
        let spliced = splice_metrics("# TYPE a counter\na_total 1\n# EOF\n".into(), &metrics_text(&stats));
        assert!(spliced.ends_with("mcp_fleet_catalog_reload_failures_total 0\n# EOF\n"), "{spliced}");
        assert!(spliced.contains("# TYPE mcp_fleet_catalog_reloads counter\nmcp_fleet_catalog_reloads_total 0\n"));
        assert!(!spliced.contains("last_reload_success"), "no timestamp before a first success");
    }
}
