//! [`CatalogState`]: what a host sees of one list — whether it can trust its snapshot
//! ([`Freshness`]), the revision, when it was last confirmed, and why not, when it is not.
//!
//! The watcher publishes a list's state on a `watch` channel only when something a host
//! acts on changed (freshness, revision or reason): a periodic verification that finds the
//! same revision moves `fetched_at` without waking anyone.

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::Serialize;
use serde_json::Value;

use crate::list::{ListKind, short_name};
use crate::snapshot::Snapshot;

/// How far a host can trust a list's snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Freshness {
    /// The snapshot covers every change heard, confirmed by the server.
    Fresh,
    /// A change was heard (a notification, a reconnect, a refresh) and the list is being
    /// read again; the snapshot shown is the previous one.
    Refreshing,
    /// The server is reachable but the re-read failed (the list kept changing, a bad
    /// answer): the previous snapshot is kept and the read is retried with backoff.
    Stale,
    /// The server cannot be reached or refuses this client (`unauthorized`, the method is
    /// gone): the snapshot, if any, is the last one known.
    Unavailable,
}

impl Freshness {
    /// `fresh`, `refreshing`, `stale`, `unavailable`.
    pub fn as_str(self) -> &'static str {
        match self {
            Freshness::Fresh => "fresh",
            Freshness::Refreshing => "refreshing",
            Freshness::Stale => "stale",
            Freshness::Unavailable => "unavailable",
        }
    }
}

/// One list as a host sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct CatalogState {
    /// Which list.
    pub list: ListKind,
    /// How far the snapshot can be trusted.
    pub freshness: Freshness,
    /// The installed snapshot (kept through every failure); `None` until a first read.
    pub snapshot: Option<Arc<Snapshot>>,
    /// When the server last confirmed the snapshot (a read that succeeded).
    pub fetched_at: Option<SystemTime>,
    /// Why the list is not fresh (`unauthorized`, `method not found: …`, the error), or
    /// what it is refreshing for; `None` when fresh.
    pub reason: Option<String>,
}

impl CatalogState {
    /// A list not read yet: unavailable, "not fetched yet".
    pub fn new(list: ListKind) -> CatalogState {
        CatalogState {
            list,
            freshness: Freshness::Unavailable,
            snapshot: None,
            fetched_at: None,
            reason: Some("not fetched yet".into()),
        }
    }

    /// The installed snapshot's revision.
    pub fn revision(&self) -> Option<&str> {
        self.snapshot.as_ref().map(|s| s.revision.value.as_str())
    }

    /// Whether `other` differs in what a host acts on (freshness, revision, reason).
    pub fn differs_from(&self, other: &CatalogState) -> bool {
        self.freshness != other.freshness || self.revision() != other.revision() || self.reason != other.reason
    }

    /// The state as one JSON object, the example host's line:
    /// `{"list","state","revision","fetchedAtMs","reason"}` (absent values are `null`).
    ///
    /// ```
    /// use mcp_fleet_client::{CatalogState, ListKind};
    /// let line = CatalogState::new(ListKind::Tools).to_json();
    /// assert_eq!(line, serde_json::json!({"list": "tools", "state": "unavailable",
    ///     "revision": null, "fetchedAtMs": null, "reason": "not fetched yet"}));
    /// ```
    pub fn to_json(&self) -> Value {
        serde_json::to_value(self.line()).unwrap_or_default()
    }

    /// [`CatalogState::to_json`] as one line of text, keys in the documented order.
    ///
    /// ```
    /// use mcp_fleet_client::{CatalogState, ListKind};
    /// assert_eq!(CatalogState::new(ListKind::Prompts).to_line(),
    ///     r#"{"list":"prompts","state":"unavailable","revision":null,"fetchedAtMs":null,"reason":"not fetched yet"}"#);
    /// ```
    pub fn to_line(&self) -> String {
        // Serializing a struct of strings and integers cannot fail.
        serde_json::to_string(&self.line()).unwrap_or_default()
    }

    fn line(&self) -> StateLine<'_> {
        let fetched_at_ms = self
            .fetched_at
            .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
            .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        StateLine {
            list: short_name(self.list),
            state: self.freshness.as_str(),
            revision: self.revision(),
            fetched_at_ms,
            reason: self.reason.as_deref(),
        }
    }
}

/// The wire shape of a state line (a struct, so the keys keep their order).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct StateLine<'a> {
    list: &'static str,
    state: &'static str,
    revision: Option<&'a str>,
    fetched_at_ms: Option<u64>,
    reason: Option<&'a str>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_freshness_revision_and_reason_count_as_a_change() {
        let before = CatalogState::new(ListKind::Tools);
        let mut later = before.clone();
        later.fetched_at = Some(SystemTime::now());
        assert!(!later.differs_from(&before), "a new confirmation time alone wakes no host");
        later.freshness = Freshness::Fresh;
        assert!(later.differs_from(&before));
        let mut reason = before.clone();
        reason.reason = None;
        assert!(reason.differs_from(&before));
    }
}
