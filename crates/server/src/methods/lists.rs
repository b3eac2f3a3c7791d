//! The four paginated, cacheable list methods (spec digest §14): pages are slices of the
//! catalog's precomputed wire list; cursors name the list's content revision.

use mcp_fleet_protocol::cursor::{Cursor, revision_hex};
use mcp_fleet_protocol::envelope::CATALOG_KEY;
use mcp_fleet_protocol::types::stamp_result;
use mcp_fleet_protocol::{ListKind, RpcError};
use serde_json::{Map, Value, json};

use super::MethodRequest;

pub(super) fn list(req: &MethodRequest<'_>, kind: ListKind) -> Result<Value, RpcError> {
    let (wire, revision) = req.catalog.list(kind);
    let revision = req.shared.revision_salt.apply(kind, revision);
    let visible = visible_tools(req, kind);
    let wire: &[Value] = visible.as_deref().unwrap_or(wire);
    let offset = match req.params.get("cursor") {
        None | Some(Value::Null) => 0,
        Some(Value::String(raw)) => Cursor::decode_offset(raw, kind.result_key(), revision)?,
        Some(_) => return Err(RpcError::invalid_params("cursor must be a string").in_band()),
    };
    // A crafted cursor may point anywhere: past the end is an empty last page, never an
    // overflow.
    let start = offset.min(wire.len());
    let end = start.saturating_add(req.shared.options.page_size.max(1)).min(wire.len());
    let mut result = Map::new();
    result.insert(kind.result_key().into(), Value::Array(wire[start..end].to_vec()));
    if end < wire.len() {
        let next = Cursor { list: kind.result_key(), revision, offset: end };
        result.insert("nextCursor".into(), Value::String(next.encode()));
    }
    req.server.cache_policy().lists.apply(&mut result);
    // AUTH-4: a list that depends on the caller's grants is reusable only in that
    // authorization context, whatever the policy says (privileged callers' full list included).
    if kind == ListKind::Tools && req.catalog.tools.enabled().any(|t| !t.required_scopes.is_empty()) {
        result.insert("cacheScope".into(), json!("private"));
    }
    result.insert("_meta".into(), json!({CATALOG_KEY: {"revision": revision_hex(revision)}}));
    stamp_result(&mut result, req.server.info());
    Ok(Value::Object(result))
}

/// The tools the caller may see, when some tool requires scopes it lacks (`None`: the whole
/// list). Cursors stay consistent: the same principal sees the same filtered list.
fn visible_tools(req: &MethodRequest<'_>, kind: ListKind) -> Option<Vec<Value>> {
    if kind != ListKind::Tools {
        return None;
    }
    let principal = req.ctx.principal.as_ref();
    let tools = &req.catalog.tools;
    if tools.enabled().all(|t| t.allows(principal)) {
        return None;
    }
    let (wire, _) = req.catalog.list(kind);
    // `wire` holds the enabled entries in order, so the two zip one to one.
    Some(tools.enabled().zip(wire.iter()).filter(|(t, _)| t.allows(principal)).map(|(_, w)| w.clone()).collect())
}
