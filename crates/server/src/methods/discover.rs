//! `server/discover` (spec digest §9): versions, capabilities, instructions, cacheable; in
//! `_meta`, the catalog's revisions and which code answers ([`crate::identity::ExecutionIdentity`]).

use mcp_fleet_protocol::cursor::revision_hex;
use mcp_fleet_protocol::envelope::CATALOG_KEY;
use mcp_fleet_protocol::types::stamp_result;
use mcp_fleet_protocol::{ListKind, SUPPORTED_VERSIONS};
use serde_json::{Value, json};

use super::MethodRequest;
use crate::catalog::Catalog;
use crate::identity::EXECUTION_KEY;

/// The capabilities a catalog advertises: identical on every replica serving the same code.
pub(crate) fn capabilities(catalog: &Catalog) -> Value {
    let mut caps = json!({
        "tools": {"listChanged": true},
        "resources": {"subscribe": true, "listChanged": true},
        "prompts": {"listChanged": true},
        "logging": {}
    });
    if catalog.completes() {
        caps["completions"] = json!({});
    }
    caps
}

pub(super) fn discover(req: &MethodRequest<'_>) -> Value {
    let mut capabilities = capabilities(&req.catalog);
    // SEP-2133: the definition's extensions, then the handler's (the tasks extension's
    // among them when tasks are on; the client declares it per request).
    if let Some(extensions) = req.server.extensions().wire(&req.shared.extensions) {
        capabilities["extensions"] = extensions;
    }
    let mut result = json!({
        "supportedVersions": SUPPORTED_VERSIONS,
        "capabilities": capabilities,
    });
    if let Some(instructions) = req.server.instructions() {
        result["instructions"] = json!(instructions);
    }
    let revisions: serde_json::Map<String, Value> = ListKind::ALL
        .iter()
        .map(|&kind| {
            (
                kind.result_key().to_owned(),
                json!(revision_hex(req.shared.revision_salt.apply(kind, req.catalog.list(kind).1))),
            )
        })
        .collect();
    result["_meta"] = json!({CATALOG_KEY: revisions, EXECUTION_KEY: *req.shared.identity});
    let Value::Object(mut obj) = result else { unreachable!("built as an object above") };
    req.server.cache_policy().discover.apply(&mut obj);
    stamp_result(&mut obj, req.server.info());
    Value::Object(obj)
}
