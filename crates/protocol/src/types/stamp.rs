//! Cache hints and result stamping: the `ttlMs`/`cacheScope` hint a result may carry, and the
//! `resultType` and `_meta.serverInfo` every 2026-07-28 result is stamped with (RES-1, RES-2),
//! in place on a map or while serializing a tool result.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::CallToolResult;
use crate::envelope::SERVER_INFO_KEY;

/// Who a cached result may be shared with (CACHE-1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CacheScope {
    /// No user-specific data; any cache may share it.
    Public,
    /// Reusable only within the same authorization context.
    Private,
}

/// Freshness hint stamped on cacheable results: `ttlMs` and `cacheScope`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheHint {
    /// Milliseconds of freshness.
    pub ttl_ms: u64,
    /// Who may share it.
    pub scope: CacheScope,
}

impl CacheHint {
    /// The conservative default: not cached, private (CACHE-6).
    pub const NONE: CacheHint = CacheHint { ttl_ms: 0, scope: CacheScope::Private };

    /// Write `ttlMs`/`cacheScope` into a result object unless the handler set valid ones.
    pub fn apply(&self, result: &mut Map<String, Value>) {
        if !result.get("ttlMs").is_some_and(Value::is_u64) {
            result.insert("ttlMs".into(), Value::from(self.ttl_ms));
        }
        if !matches!(result.get("cacheScope").and_then(Value::as_str), Some("public" | "private")) {
            let scope = match self.scope {
                CacheScope::Public => "public",
                CacheScope::Private => "private",
            };
            result.insert("cacheScope".into(), Value::from(scope));
        }
    }
}

/// Stamp `resultType: "complete"` (when absent) and `_meta.serverInfo` (when absent) on a
/// result object (RES-1, RES-2).
pub fn stamp_result(result: &mut Map<String, Value>, server_info: &Value) {
    // Looked up before inserting: `Map::entry` takes an owned key, a copy per call even
    // when the member is there already.
    if !result.contains_key("resultType") {
        result.insert("resultType".to_owned(), Value::from("complete"));
    }
    match result.get_mut("_meta") {
        Some(Value::Object(meta)) => {
            if !meta.contains_key(SERVER_INFO_KEY) {
                meta.insert(SERVER_INFO_KEY.to_owned(), server_info.clone());
            }
        }
        Some(_) => {}
        None => {
            let mut meta = Map::new();
            meta.insert(SERVER_INFO_KEY.to_owned(), server_info.clone());
            result.insert("_meta".to_owned(), Value::Object(meta));
        }
    }
}

/// A complete `tools/call` result as its stamped wire object: what [`stamp_result`] gives for
/// `result` turned into a map (`resultType: "complete"`, `_meta.serverInfo` beside the result's
/// own `_meta`, whose own `serverInfo` wins), written without building that map.
///
/// ```
/// use mcp_fleet_protocol::types::{CallToolResult, StampedToolResult};
/// let info = serde_json::json!({"name": "demo", "version": "1.0.0"});
/// let result = CallToolResult::text("hi");
/// let wire = serde_json::to_value(StampedToolResult { result: &result, server_info: &info }).unwrap();
/// assert_eq!(wire["resultType"], "complete");
/// assert_eq!(wire["_meta"]["io.modelcontextprotocol/serverInfo"], info);
/// ```
#[derive(Debug, Clone, Copy)]
pub struct StampedToolResult<'a> {
    /// The handler's result.
    pub result: &'a CallToolResult,
    /// The server's `serverInfo`.
    pub server_info: &'a Value,
}

impl Serialize for StampedToolResult<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap as _;
        let r = self.result;
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("content", &r.content)?;
        if let Some(structured) = &r.structured_content {
            map.serialize_entry("structuredContent", structured)?;
        }
        if r.is_error {
            map.serialize_entry("isError", &true)?;
        }
        map.serialize_entry("resultType", "complete")?;
        map.serialize_entry("_meta", &MetaWithServerInfo { meta: r.meta.as_ref(), server_info: self.server_info })?;
        map.end()
    }
}

/// A result's `_meta` with the server's `serverInfo` added when it has none.
struct MetaWithServerInfo<'a> {
    meta: Option<&'a Map<String, Value>>,
    server_info: &'a Value,
}

impl Serialize for MetaWithServerInfo<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap as _;
        let mut map = serializer.serialize_map(None)?;
        let own = self.meta.into_iter().flatten();
        for (key, value) in own {
            map.serialize_entry(key, value)?;
        }
        if !self.meta.is_some_and(|m| m.contains_key(SERVER_INFO_KEY)) {
            map.serialize_entry(SERVER_INFO_KEY, self.server_info)?;
        }
        map.end()
    }
}
