//! [`Snapshot`]: one list read completely — every page — as of one revision, so a host never
//! mixes pages of two catalog versions.
//!
//! Pagination restarts from the first page when the server refuses a cursor as stale (the
//! list changed underneath) or when pages name different revisions. The revision is the
//! server's (`_meta["dev.mcp-fleet/catalog"].revision` on each page) when it sends one, else
//! a stable content hash of the full item list computed here.

use std::time::{Duration, Instant};

use mcp_fleet_protocol::cursor::{content_revision, revision_hex};
use mcp_fleet_protocol::types::CacheScope;
use serde_json::{Value, json};

use crate::error::ClientError;
use crate::list::ListKind;
use crate::rpc::RpcClient;
use crate::validate::validate_list;

/// The `_meta` key under which a page names its list's content revision.
pub const CATALOG_META_KEY: &str = mcp_fleet_protocol::envelope::CATALOG_KEY;

/// Where a snapshot's revision came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RevisionSource {
    /// The server named it on every page.
    Server,
    /// Computed here: FNV-1a of the items' canonical JSON (sorted keys), in hex.
    Computed,
}

/// A list's content revision.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Revision {
    /// The revision string.
    pub value: String,
    /// Who computed it.
    pub source: RevisionSource,
}

/// A complete list as of one revision.
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot {
    /// Which list.
    pub kind: ListKind,
    /// Every item, in the server's order.
    pub items: Vec<Value>,
    /// The revision the items belong to.
    pub revision: Revision,
    /// Pages read for the snapshot that was kept (restarts not counted).
    pub pages: u32,
    /// The server's `ttlMs` on the first page: how long the list may be reused without
    /// asking again (CACHE-1); `None` when it sent none.
    pub ttl_ms: Option<u64>,
    /// The server's `cacheScope` on the first page (`Private`: reusable only with these
    /// credentials); `None` when it sent none. Reported, not acted on: a watcher holds one
    /// authorization context and never shares a snapshot beyond it, which is all `private`
    /// asks; a host that shares snapshots across users must check it.
    pub cache_scope: Option<CacheScope>,
}

/// Limits of one snapshot fetch.
#[derive(Debug, Clone, Copy)]
pub struct FetchOptions {
    /// Pages read in one pass before giving up (a server looping its cursors). Default 10 000.
    pub max_pages: u32,
    /// Restarts from the first page before giving up ([`ClientError::Unstable`]). Default 3.
    pub max_restarts: u32,
}

impl Default for FetchOptions {
    fn default() -> Self {
        FetchOptions { max_pages: 10_000, max_restarts: 3 }
    }
}

/// One page request's timing and outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestTiming {
    /// Request sent → response read.
    pub duration: Duration,
    /// Whether it returned a page.
    pub ok: bool,
}

/// A fetch's outcome and every request it made (for load figures).
#[derive(Debug)]
pub struct FetchReport {
    /// The snapshot, or why there is none.
    pub outcome: Result<Snapshot, ClientError>,
    /// Each page request, in order.
    pub requests: Vec<RequestTiming>,
}

/// Read every page of `kind` through `rpc` into one consistent [`Snapshot`], checked by
/// [`validate_list`] before it is returned.
pub async fn fetch_snapshot(rpc: &RpcClient, kind: ListKind, options: FetchOptions) -> FetchReport {
    let mut requests = Vec::new();
    let mut restarts = 0;
    loop {
        match read_all_pages(rpc, kind, options, &mut requests).await {
            Ok(Pass::Complete(snapshot)) => {
                let outcome = validate_list(kind, &snapshot.items).map(|()| snapshot);
                return FetchReport { outcome, requests };
            }
            Ok(Pass::Changed) if restarts < options.max_restarts => restarts += 1,
            Ok(Pass::Changed) => {
                let error = ClientError::Unstable { list: kind.method().as_str(), restarts };
                return FetchReport { outcome: Err(error), requests };
            }
            Err(error) => return FetchReport { outcome: Err(error), requests },
        }
    }
}

/// The result of one pass over the pages.
enum Pass {
    Complete(Snapshot),
    /// The list changed during the pass: start again.
    Changed,
}

async fn read_all_pages(
    rpc: &RpcClient,
    kind: ListKind,
    options: FetchOptions,
    requests: &mut Vec<RequestTiming>,
) -> Result<Pass, ClientError> {
    let mut items = Vec::new();
    let mut server_revision: Option<String> = None;
    let mut cursor: Option<String> = None;
    let mut hint = (None, None);
    for page_number in 1..=options.max_pages {
        let params = match &cursor {
            Some(c) => json!({"cursor": c}),
            None => json!({}),
        };
        let started = Instant::now();
        let result = rpc.call(kind.method().as_str(), params).await;
        requests.push(RequestTiming { duration: started.elapsed(), ok: result.is_ok() });
        let mut page = match result {
            Ok(page) => page,
            Err(e) if e.is_stale_cursor() => return Ok(Pass::Changed),
            Err(e) => return Err(e),
        };
        let page_revision = page_revision(&page);
        if page_number > 1 && page_revision != server_revision {
            return Ok(Pass::Changed);
        }
        server_revision = page_revision;
        if page_number == 1 {
            hint = cache_hint(&page);
        }
        match page.get_mut(kind.result_key()).map(Value::take) {
            Some(Value::Array(page_items)) => items.extend(page_items),
            _ => {
                return Err(ClientError::Protocol(format!(
                    "{} page without a {} array",
                    kind.method().as_str(),
                    kind.result_key()
                )));
            }
        }
        cursor = match page.get("nextCursor") {
            None | Some(Value::Null) => {
                let revision = revision_of(server_revision, &items);
                let (ttl_ms, cache_scope) = hint;
                let snapshot = Snapshot { kind, items, revision, pages: page_number, ttl_ms, cache_scope };
                return Ok(Pass::Complete(snapshot));
            }
            Some(Value::String(next)) if cursor.as_deref() != Some(next.as_str()) => Some(next.clone()),
            Some(other) => return Err(ClientError::Protocol(format!("unusable nextCursor {other}"))),
        };
    }
    Err(ClientError::Protocol(format!("{} has more than {} pages", kind.method().as_str(), options.max_pages)))
}

/// A page's `ttlMs` and `cacheScope`, each when present and well-formed.
fn cache_hint(page: &Value) -> (Option<u64>, Option<CacheScope>) {
    let ttl = page.get("ttlMs").and_then(Value::as_u64);
    let scope = page.get("cacheScope").and_then(|s| serde_json::from_value(s.clone()).ok());
    (ttl, scope)
}

/// The server's revision of a page, if it names one.
fn page_revision(page: &Value) -> Option<String> {
    page.get("_meta")?.get(CATALOG_META_KEY)?.get("revision")?.as_str().map(str::to_owned)
}

/// The server's revision, else a content hash of the items.
fn revision_of(server: Option<String>, items: &[Value]) -> Revision {
    match server {
        Some(value) => Revision { value, source: RevisionSource::Server },
        None => Revision { value: computed_revision(items), source: RevisionSource::Computed },
    }
}

/// A stable content hash of a full item list: FNV-1a of its canonical JSON (serde_json
/// sorts object keys), in hex.
///
/// ```
/// use serde_json::json;
/// let a = mcp_fleet_client::snapshot::computed_revision(&[json!({"name": "x", "description": "d"})]);
/// let b = mcp_fleet_client::snapshot::computed_revision(&[json!({"description": "d", "name": "x"})]);
/// assert_eq!(a, b);
/// ```
pub fn computed_revision(items: &[Value]) -> String {
    // Serializing a Value cannot fail.
    let bytes = serde_json::to_vec(items).unwrap_or_default();
    revision_hex(content_revision(&bytes))
}
