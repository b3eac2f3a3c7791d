//! [`ExecutionIdentity`]: which code is answering — an execution epoch minted when the process
//! starts, the SHA-256 of the running executable, the version, the build's commit and the
//! image, each observed at start (never claimed later).
//!
//! The handler shows it in `server/discover` (`_meta["dev.mcp-fleet/execution"]`), in every
//! membership record (so `/admin/fleet` shows the builds a rolling deploy runs side by side),
//! and as the `build_info` metric. Filling it is the binary's job (the node reads its own
//! executable and the orchestrator's environment); this module only defines and observes.

use std::io::Read;
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use mcp_fleet_protocol::ListKind;
use mcp_fleet_protocol::cursor::content_revision;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The `_meta` key under which `server/discover` shows the execution identity.
pub const EXECUTION_KEY: &str = "dev.mcp-fleet/execution";

/// Which code answers, as observed when the process started. Shown to clients, to the fleet and
/// to Prometheus; every field is public information (no secret goes in here).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExecutionIdentity {
    /// Unique to this process: `<start ms, hex>-<64 random bits, hex>`. A restart of the same
    /// pod (same pod UID) gets a new one.
    pub epoch: String,
    /// When the process started, Unix milliseconds.
    pub started_at_ms: u64,
    /// The orchestrator's id of the pod (`MCP_FLEET_POD_UID`, the chart's downward API).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_uid: Option<String>,
    /// SHA-256 of the running executable (hex), when it could be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exe_sha256: Option<String>,
    /// The version of the code (a crate version).
    pub version: String,
    /// The build's commit, when the build knew it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// The container image reference the deployment names (`MCP_FLEET_IMAGE`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
}

/// The environment variable carrying the pod's UID (downward API `metadata.uid`).
pub const POD_UID_ENV: &str = "MCP_FLEET_POD_UID";
/// The environment variable carrying the image reference.
pub const IMAGE_ENV: &str = "MCP_FLEET_IMAGE";

impl ExecutionIdentity {
    /// A fresh epoch for `version`, nothing else known. What a handler uses when it is given no
    /// identity ([`HandlerOptions::identity`](crate::HandlerOptions::identity)).
    pub fn minted(version: impl Into<String>) -> Self {
        let started_at_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
            .unwrap_or_default();
        ExecutionIdentity {
            epoch: format!("{started_at_ms:x}-{:016x}", rand::random::<u64>()),
            started_at_ms,
            pod_uid: None,
            exe_sha256: None,
            version: version.into(),
            commit: None,
            image: None,
        }
    }

    /// Observe this process: a fresh epoch, the SHA-256 of the running executable
    /// (`std::env::current_exe`; omitted, with a warning, when unreadable), the pod UID and
    /// image from the environment ([`POD_UID_ENV`], [`IMAGE_ENV`]). Blocking — it reads the
    /// whole executable: call it before the runtime starts or in `spawn_blocking`.
    pub fn observe(version: impl Into<String>, commit: Option<&str>) -> Self {
        let mut identity = ExecutionIdentity::minted(version);
        identity.commit = commit.filter(|c| !c.is_empty()).map(str::to_owned);
        identity.pod_uid = non_empty_env(POD_UID_ENV);
        identity.image = non_empty_env(IMAGE_ENV);
        identity.exe_sha256 = match std::env::current_exe().and_then(|exe| file_sha256(&exe)) {
            Ok(digest) => Some(digest),
            Err(error) => {
                tracing::warn!(%error, "could not read the running executable: its digest is omitted");
                None
            }
        };
        identity
    }
}

/// What [`HandlerOptions::identity_in_tools_revision`](crate::HandlerOptions::identity_in_tools_revision)
/// folds into the tools list's revision: nothing (the default), or a hash of the build — the
/// executable's digest when known, else version and commit. Applied wherever the revision is
/// shown or compared (lists, discover, cursors, membership records), so replicas of one build
/// agree and a new build changes it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct RevisionSalt {
    tools: Option<u64>,
}

impl RevisionSalt {
    /// `identity`'s salt when `on`, else none.
    pub(crate) fn of(identity: &ExecutionIdentity, on: bool) -> Self {
        let build = match &identity.exe_sha256 {
            Some(digest) => format!("exe:{digest}"),
            None => format!("version:{}\0commit:{}", identity.version, identity.commit.as_deref().unwrap_or("")),
        };
        RevisionSalt { tools: on.then(|| content_revision(build.as_bytes())) }
    }

    /// The revision `kind`'s list is shown with, from its content revision.
    pub(crate) fn apply(self, kind: ListKind, revision: u64) -> u64 {
        match (kind, self.tools) {
            (ListKind::Tools, Some(salt)) => content_revision(&[revision.to_le_bytes(), salt.to_le_bytes()].concat()),
            _ => revision,
        }
    }

    /// [`RevisionSalt::apply`] to every list, indexed like [`ListKind::ALL`].
    pub(crate) fn apply_all(self, revisions: [u64; 4]) -> [u64; 4] {
        let mut shown = revisions;
        for kind in ListKind::ALL {
            shown[kind.index()] = self.apply(kind, revisions[kind.index()]);
        }
        shown
    }
}

fn non_empty_env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// SHA-256 of the file at `path`, hex, read in chunks.
pub(crate) fn file_sha256(path: &Path) -> std::io::Result<String> {
    let mut file = std::fs::File::open(path)?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(hasher.finalize().iter().map(|b| format!("{b:02x}")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn epochs_differ_and_the_digest_is_the_files() {
        let (a, b) = (ExecutionIdentity::minted("1"), ExecutionIdentity::minted("1"));
        assert_ne!(a.epoch, b.epoch);
        let exe = std::env::current_exe().expect("the test binary has a path");
        let observed = ExecutionIdentity::observe("1", Some("abc"));
        assert_eq!(observed.exe_sha256.as_deref(), Some(file_sha256(&exe).expect("readable").as_str()));
        assert_eq!(observed.exe_sha256.as_ref().map(String::len), Some(64));
        assert_eq!(observed.commit.as_deref(), Some("abc"));
    }

    #[test]
    fn the_salt_changes_the_tools_revision_only_when_on() {
        let (a, mut b) = (ExecutionIdentity::minted("1"), ExecutionIdentity::minted("1"));
        b.exe_sha256 = Some("ab".repeat(32));
        assert_eq!(RevisionSalt::of(&a, false).apply(ListKind::Tools, 7), 7);
        let (sa, sb) = (RevisionSalt::of(&a, true), RevisionSalt::of(&b, true));
        assert_ne!(sa.apply(ListKind::Tools, 7), 7);
        assert_ne!(sa.apply(ListKind::Tools, 7), sb.apply(ListKind::Tools, 7));
        assert_eq!(
            sa.apply(ListKind::Tools, 7),
            RevisionSalt::of(&ExecutionIdentity::minted("1"), true).apply(ListKind::Tools, 7),
            "the epoch is not part of it"
        );
        assert_eq!(sb.apply(ListKind::Prompts, 7), 7);
    }

    #[test]
    fn absent_fields_are_omitted_and_unknown_ones_ignored() {
        let json = serde_json::to_value(ExecutionIdentity::minted("2")).expect("plain fields");
        assert!(json.get("commit").is_none() && json.get("exeSha256").is_none(), "{json}");
        let newer = r#"{"epoch":"e","startedAtMs":1,"version":"3","future":true}"#;
        assert_eq!(serde_json::from_str::<ExecutionIdentity>(newer).expect("lenient").epoch, "e");
    }
}
