//! Reloading from a directory laid out like a Kubernetes ConfigMap mount: `catalog.toml` is a
//! symlink to `..data/catalog.toml`, `..data` a symlink to a timestamped directory, and an
//! update renames a new `..data` symlink over the old one. Event-driven tests wait with a
//! bound (events come from a real inotify thread); the poll test runs on paused time.

#![allow(clippy::unwrap_used)] // in a test, a panic at the failing line is the report we want
#![cfg(unix)]

mod common;

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::time::Duration;

use common::keys;
use mcp_fleet_bus::testing::{WAIT, eventually};
use mcp_fleet_catalog_file::{CatalogReloader, Reload, ReloadOptions, ReloadStats};
use mcp_fleet_server::{McpServer, catalog::ListKind};

/// A one-tool catalog whose tool is called `name`.
fn tool(name: &str) -> String {
    format!("[[tools]]\nname = \"{name}\"\ntext = \"{name}\"\n")
}

/// A ConfigMap-style mount in a temporary directory.
struct ConfigMapDir {
    dir: tempfile::TempDir,
    current: Option<PathBuf>,
}

impl ConfigMapDir {
    fn new(first: &str) -> ConfigMapDir {
        let mut mount = ConfigMapDir { dir: tempfile::tempdir().unwrap(), current: None };
        mount.update("..2026_11_30_a", first);
        symlink("..data/catalog.toml", mount.dir.path().join("catalog.toml")).unwrap();
        mount
    }

    fn catalog(&self) -> PathBuf {
        self.dir.path().join("catalog.toml")
    }

    /// What kubelet does: write a new timestamped directory, point `..data_tmp` at it, rename
    /// it over `..data` (atomic), remove the old directory.
    fn update(&mut self, stamp: &str, content: &str) {
        let root = self.dir.path();
        std::fs::create_dir(root.join(stamp)).unwrap();
        std::fs::write(root.join(stamp).join("catalog.toml"), content).unwrap();
        symlink(stamp, root.join("..data_tmp")).unwrap();
        std::fs::rename(root.join("..data_tmp"), root.join("..data")).unwrap();
        if let Some(old) = self.current.replace(root.join(stamp)) {
            std::fs::remove_dir_all(old).unwrap();
        }
    }
}

fn reloader(server: &McpServer, path: &Path, options: ReloadOptions) -> CatalogReloader {
    CatalogReloader::try_new(server.clone(), path, options).unwrap()
}

/// What a test waits for, shown with the reloader's counters as they were at the deadline.
struct Awaited<'a>(&'a str, &'a ReloadStats);

impl std::fmt::Display for Awaited<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let Awaited(what, stats) = self;
        let (reloads, failures, error) = (stats.reloads(), stats.failures(), stats.last_error());
        write!(f, "{what} (reloads {reloads}, failures {failures}, last error {error:?})")
    }
}

fn events_only() -> ReloadOptions {
    ReloadOptions { poll_interval: None, ..ReloadOptions::default() }
}

#[tokio::test]
async fn a_configmap_update_is_applied() {
    let mut mount = ConfigMapDir::new(&tool("v1"));
    let server = McpServer::builder("catalog-test", "0.1.0").build();
    let reloader = reloader(&server, &mount.catalog(), events_only());
    assert!(matches!(reloader.reload_now().await.unwrap(), Reload::Applied(a) if a.tools.added == 1));
    let stats = reloader.stats();
    let first_hash = stats.last_hash().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let running = tokio::spawn(reloader.clone().run(async move {
        let _ = stopped.await;
    }));

    mount.update("..2026_11_30_b", &tool("v2"));
    eventually(Awaited("a second reload", &stats), WAIT, async || stats.reloads() == 2).await;
    assert_eq!(keys(&server, ListKind::Tools).await, ["v2"]);
    assert_ne!(stats.last_hash().unwrap(), first_hash);
    assert!(stats.last_success().is_some());

    // An event that changes nothing (another key of the ConfigMap) is skipped by its hash.
    std::fs::write(mount.dir.path().join("other.txt"), "x").unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!((stats.reloads(), stats.failures()), (2, 0));

    stop.send(()).unwrap();
    running.await.unwrap();
}

#[tokio::test]
async fn an_invalid_file_keeps_the_previous_catalog_and_is_counted() {
    let mut mount = ConfigMapDir::new(&tool("v1"));
    let server = McpServer::builder("catalog-test", "0.1.0").build();
    let reloader = reloader(&server, &mount.catalog(), events_only());
    reloader.reload_now().await.unwrap();
    let stats = reloader.stats();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let running = tokio::spawn(reloader.clone().run(async move {
        let _ = stopped.await;
    }));

    mount.update("..2026_11_30_b", "[[tools]]\nname = \"v2\"\ntxt = \"oops\"\n");
    eventually(Awaited("a failed reload", &stats), WAIT, async || stats.failures() == 1).await;
    assert_eq!(keys(&server, ListKind::Tools).await, ["v1"], "the previous catalog keeps serving");
    let error = stats.last_error().unwrap();
    assert!(error.ends_with("catalog.toml:3:1: unknown field `txt`, expected one of `name`, `title`, `description`, `input_schema`, `output_schema`, `annotations`, `required_scopes`, `text`, `http`, `icons`, `_meta`"), "{error}");
    assert!(!error.contains('\n'));

    // The watcher reports a bad file once; an explicit reload reports it again.
    std::fs::write(mount.dir.path().join("other.txt"), "x").unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(stats.failures(), 1);
    assert_eq!(reloader.reload_now().await.unwrap_err().kind(), "syntax");
    assert_eq!(stats.failures(), 2);

    // Back to the content being served: nothing to apply, and no error stands any more.
    mount.update("..2026_11_30_c", &tool("v1"));
    eventually(Awaited("the error cleared", &stats), WAIT, async || stats.last_error().is_none()).await;
    assert_eq!((stats.reloads(), stats.failures()), (1, 2));

    mount.update("..2026_11_30_d", &tool("v3"));
    eventually(Awaited("a second reload", &stats), WAIT, async || stats.reloads() == 2).await;
    assert_eq!(keys(&server, ListKind::Tools).await, ["v3"]);
    assert_eq!(stats.last_error(), None, "a success clears the last error");

    stop.send(()).unwrap();
    running.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn the_poll_finds_changes_no_event_reported() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("catalog.toml");
    std::fs::write(&path, tool("v1")).unwrap();
    let server = McpServer::builder("catalog-test", "0.1.0").build();
    let options = ReloadOptions { watch_events: false, ..ReloadOptions::default() };
    let reloader = reloader(&server, &path, options);
    reloader.reload_now().await.unwrap();
    let stats = reloader.stats();
    tokio::spawn(reloader.clone().run(std::future::pending()));
    // Let `run` make its opening check (a no-op: the file is what was applied).
    tokio::time::sleep(Duration::from_secs(1)).await;

    std::fs::write(&path, tool("v2")).unwrap();
    tokio::time::sleep(Duration::from_secs(8)).await;
    assert_eq!(stats.reloads(), 1, "no poll before 10 s");
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(stats.reloads(), 2, "the default 10 s poll found it");
    assert_eq!(keys(&server, ListKind::Tools).await, ["v2"]);
}

#[tokio::test]
async fn an_unchanged_file_is_not_applied_again() {
    let mount = ConfigMapDir::new(&tool("v1"));
    let server = McpServer::builder("catalog-test", "0.1.0").build();
    let reloader = reloader(&server, &mount.catalog(), events_only());
    assert!(matches!(reloader.reload_now().await.unwrap(), Reload::Applied(_)));
    assert_eq!(reloader.reload_now().await.unwrap(), Reload::Unchanged);
    assert_eq!(reloader.stats().reloads(), 1);
}

#[tokio::test]
async fn a_missing_file_is_a_read_failure() {
    let dir = tempfile::tempdir().unwrap();
    let server = McpServer::builder("catalog-test", "0.1.0").build();
    let reloader = reloader(&server, &dir.path().join("catalog.toml"), events_only());
    let error = reloader.reload_now().await.unwrap_err();
    assert_eq!(error.kind(), "read");
    assert_eq!(reloader.stats().failures(), 1);
    assert!(CatalogReloader::try_new(server, dir.path().join("catalog.yaml"), events_only()).is_err());
}

#[tokio::test]
async fn sighup_reloads() {
    let mut mount = ConfigMapDir::new(&tool("v1"));
    let server = McpServer::builder("catalog-test", "0.1.0").build();
    let reloader = reloader(&server, &mount.catalog(), events_only());
    reloader.reload_now().await.unwrap();
    tokio::spawn(mcp_fleet_catalog_file::reload_on_sighup(reloader.clone()).unwrap());

    mount.update("..2026_11_30_b", &tool("v2"));
    let status = std::process::Command::new("kill").args(["-HUP", &std::process::id().to_string()]).status().unwrap();
    assert!(status.success());
    let stats = reloader.stats();
    eventually(Awaited("a reload on SIGHUP", &stats), WAIT, async || stats.reloads() == 2).await;
    assert_eq!(keys(&server, ListKind::Tools).await, ["v2"]);
}
