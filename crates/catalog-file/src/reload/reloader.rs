//! [`CatalogReloader`]: one reload of the catalog file into a server — read it through its
//! path (following symlinks, as a ConfigMap mount needs), hash it, parse, validate, apply —
//! and what it leaves behind: [`ReloadStats`] and one log line.
//!
//! A file that fails leaves the previous catalog serving (validation happens before the
//! server is touched, and the apply is one swap). Content already applied is skipped by its
//! hash, so no-op events cost one read. Reloads are serialized, so a slow reload can never
//! apply an older read after a newer one.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use mcp_fleet_server::McpServer;
use sha2::{Digest, Sha256};

use super::stats::ReloadStats;
use crate::apply::{Applied, apply};
use crate::catalog::Catalog;
use crate::confine::Confinement;
use crate::env::process_env;
use crate::error::{CatalogError, Location};
use crate::parse::Format;

/// How the reloader notices changes, and what the file may reach. Defaults: 200 ms debounce,
/// a 10 s poll, directory events on, the default [`Confinement`].
///
/// ```
/// use std::time::Duration;
/// use mcp_fleet_catalog_file::ReloadOptions;
/// let options = ReloadOptions { poll_interval: Some(Duration::from_secs(30)), ..ReloadOptions::default() };
/// assert_eq!(options.debounce, Duration::from_millis(200));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReloadOptions {
    /// After a directory event, wait this long and fold further events into one reload (a
    /// ConfigMap update is several events: new directory, new symlink, rename, old removal).
    pub debounce: Duration,
    /// Also re-read the file this often, for filesystems that send no events (some network
    /// and FUSE mounts); `None` or zero: never.
    pub poll_interval: Option<Duration>,
    /// Watch the file's directory for events (inotify on Linux). Off, only the poll runs.
    pub watch_events: bool,
    /// Where `file` resources may come from and which variables `${VAR}` may read, at every
    /// reload.
    pub confinement: Confinement,
}

impl Default for ReloadOptions {
    fn default() -> Self {
        ReloadOptions {
            debounce: Duration::from_millis(200),
            poll_interval: Some(Duration::from_secs(10)),
            watch_events: true,
            confinement: Confinement::default(),
        }
    }
}

/// What a reload did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reload {
    /// The file's content was applied; what changed.
    Applied(Applied),
    /// The file holds what is already served (or, for a watcher-triggered reload, what
    /// already failed and was reported): nothing was done.
    Unchanged,
}

/// Keeps a server's catalog equal to a catalog file. A cheap `Clone` handle: clones share one
/// reload lock and one [`ReloadStats`].
///
/// ```no_run
/// use mcp_fleet_catalog_file::{CatalogReloader, ReloadOptions, reload_on_sighup};
/// # async fn node(server: mcp_fleet_server::McpServer, stop: impl std::future::Future<Output = ()> + Send + 'static)
/// # -> Result<(), Box<dyn std::error::Error>> {
/// let reloader = CatalogReloader::try_new(server, "/etc/mcp/catalog.toml", ReloadOptions::default())?;
/// reloader.reload_now().await?;                          // at startup, an invalid file is fatal
/// tokio::spawn(reload_on_sighup(reloader.clone())?);     // SIGHUP → reload_now
/// tokio::spawn(reloader.clone().run(stop));              // directory events + poll
/// let stats = reloader.stats();                          // export reloads(), failures(), …
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct CatalogReloader {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for CatalogReloader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CatalogReloader")
            .field("path", &self.shared.path)
            .field("options", &self.shared.options)
            .field("stats", &self.shared.stats)
            .finish_non_exhaustive()
    }
}

struct Shared {
    path: PathBuf,
    format: Format,
    server: McpServer,
    options: ReloadOptions,
    stats: Arc<ReloadStats>,
    /// What the last reloads saw. An async mutex held for a whole reload: it is what
    /// serializes reloads (explicit and watcher-triggered alike).
    seen: tokio::sync::Mutex<Seen>,
}

/// Fingerprints of what earlier reloads read.
#[derive(Default)]
struct Seen {
    /// The content being served.
    applied: Option<[u8; 32]>,
    /// What the latest reload read, applied or not.
    latest: Option<Fingerprint>,
}

/// What one read found: content (by hash), or an error of some kind.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Fingerprint {
    Content([u8; 32]),
    Unreadable(std::io::ErrorKind),
}

/// Who asked for a reload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Trigger {
    /// `reload_now` (SIGHUP, startup): always re-reports a failure.
    Explicit,
    /// An event or the poll: stays quiet about a failure already reported.
    Watch,
}

impl CatalogReloader {
    /// A reloader of the file at `path` (format by its extension) into `server`. Nothing is
    /// read yet: call [`reload_now`](Self::reload_now) for the first load.
    pub fn try_new(
        server: McpServer,
        path: impl Into<PathBuf>,
        options: ReloadOptions,
    ) -> Result<CatalogReloader, CatalogError> {
        let path = path.into();
        let format =
            Format::from_path(&path).ok_or_else(|| CatalogError::UnknownFormat { path: path.display().to_string() })?;
        let stats = Arc::new(ReloadStats::default());
        let seen = tokio::sync::Mutex::new(Seen::default());
        Ok(CatalogReloader { shared: Arc::new(Shared { path, format, server, options, stats, seen }) })
    }

    /// Re-read the file and apply it unless its content is already served. Failures are
    /// logged and counted, and the previous catalog keeps serving.
    ///
    /// ```
    /// use mcp_fleet_catalog_file::{CatalogReloader, Reload, ReloadOptions};
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let dir = tempfile::tempdir().unwrap();
    /// let path = dir.path().join("catalog.toml");
    /// std::fs::write(&path, "[[tools]]\nname = \"hi\"\ntext = \"hi\"\n").unwrap();
    /// let server = mcp_fleet_server::McpServer::builder("demo", "1").build();
    /// let reloader = CatalogReloader::try_new(server, &path, ReloadOptions::default())?;
    /// assert!(matches!(reloader.reload_now().await?, Reload::Applied(a) if a.tools.added == 1));
    /// assert_eq!(reloader.reload_now().await?, Reload::Unchanged);
    ///
    /// std::fs::write(&path, "[[tools]]\nname = \"hi\"\n").unwrap();
    /// assert!(reloader.reload_now().await.is_err());
    /// assert_eq!((reloader.stats().reloads(), reloader.stats().failures()), (1, 1));
    /// # Ok::<(), mcp_fleet_catalog_file::CatalogError>(())
    /// # }).unwrap();
    /// ```
    pub async fn reload_now(&self) -> Result<Reload, CatalogError> {
        self.reload(Trigger::Explicit).await
    }

    /// The counters, to export as metrics.
    pub fn stats(&self) -> Arc<ReloadStats> {
        Arc::clone(&self.shared.stats)
    }

    /// The catalog file's path.
    pub fn path(&self) -> &Path {
        &self.shared.path
    }

    pub(super) fn options(&self) -> &ReloadOptions {
        &self.shared.options
    }

    /// One reload; see [`Trigger`] for how the two kinds differ.
    pub(super) async fn reload(&self, trigger: Trigger) -> Result<Reload, CatalogError> {
        let mut seen = self.shared.seen.lock().await;
        let read = tokio::fs::read(&self.shared.path).await.map(|bytes| {
            let hash: [u8; 32] = Sha256::digest(&bytes).into();
            (bytes, hash)
        });
        let fingerprint = match &read {
            Ok((_, hash)) => Fingerprint::Content(*hash),
            Err(e) => Fingerprint::Unreadable(e.kind()),
        };
        let served = matches!(fingerprint, Fingerprint::Content(hash) if seen.applied == Some(hash));
        let reported = trigger == Trigger::Watch && seen.latest.as_ref() == Some(&fingerprint);
        if served && seen.latest.as_ref() != Some(&fingerprint) {
            // Back to the content being served after a failure: nothing is wrong any more.
            self.shared.stats.clear_error();
        }
        seen.latest = Some(fingerprint);
        if served || reported {
            return Ok(Reload::Unchanged);
        }
        let (bytes, hash) = match read {
            Ok(read) => read,
            Err(source) => {
                return Err(self.failed(CatalogError::Read { path: self.shared.path.display().to_string(), source }));
            }
        };
        match self.load_and_apply(&bytes).await {
            Ok(applied) => {
                seen.applied = Some(hash);
                self.succeeded(&hash, &applied);
                Ok(Reload::Applied(applied))
            }
            Err(e) => Err(self.failed(e)),
        }
    }

    async fn load_and_apply(&self, bytes: &[u8]) -> Result<Applied, CatalogError> {
        let path = &self.shared.path;
        let text = std::str::from_utf8(bytes).map_err(|e| CatalogError::Syntax {
            at: Location { file: path.display().to_string(), line_col: None },
            message: format!("the file is not UTF-8 text (invalid byte at offset {})", e.valid_up_to()),
        })?;
        let catalog =
            Catalog::parse_confined(text, self.shared.format, path, &self.shared.options.confinement, &process_env)?;
        apply(&self.shared.server, &catalog).await
    }

    fn succeeded(&self, hash: &[u8; 32], applied: &Applied) {
        let hash = hex(hash);
        tracing::info!(path = %self.shared.path.display(), %hash, changes = %applied, "catalog applied");
        self.shared.stats.record_success(hash);
    }

    fn failed(&self, error: CatalogError) -> CatalogError {
        let line = error.to_string();
        tracing::error!(kind = error.kind(), "catalog reload failed, the previous catalog keeps serving: {line}");
        self.shared.stats.record_failure(line);
        error
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
