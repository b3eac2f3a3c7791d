//! The four paginated, cacheable list methods (spec digest §14): pages are slices of the
//! catalog's precomputed wire list; cursors name the list's content revision.

use mcp_fleet_protocol::RpcError;
use mcp_fleet_protocol::cursor::Cursor;
use mcp_fleet_protocol::types::stamp_result;
use serde_json::{Map, Value};

use super::Incoming;

#[derive(Debug, Clone, Copy)]
pub(super) enum ListMethod {
    Tools,
    Resources,
    Templates,
    Prompts,
}

impl ListMethod {
    pub(super) fn of(method: &str) -> Option<ListMethod> {
        Some(match method {
            "tools/list" => ListMethod::Tools,
            "resources/list" => ListMethod::Resources,
            "resources/templates/list" => ListMethod::Templates,
            "prompts/list" => ListMethod::Prompts,
            _ => return None,
        })
    }

    fn key(self) -> &'static str {
        match self {
            ListMethod::Tools => "tools",
            ListMethod::Resources => "resources",
            ListMethod::Templates => "resourceTemplates",
            ListMethod::Prompts => "prompts",
        }
    }
}

pub(super) fn list(req: &Incoming<'_>, method: ListMethod) -> Result<Value, RpcError> {
    let c = &req.catalog;
    let (wire, revision) = match method {
        ListMethod::Tools => (&c.tools.wire, c.tools.revision),
        ListMethod::Resources => (&c.resources.wire, c.resources.revision),
        ListMethod::Templates => (&c.templates.wire, c.templates.revision),
        ListMethod::Prompts => (&c.prompts.wire, c.prompts.revision),
    };
    let offset = match req.params.get("cursor") {
        None | Some(Value::Null) => 0,
        Some(Value::String(raw)) => Cursor::decode_offset(raw, method.key(), revision)?,
        Some(_) => return Err(RpcError::invalid_params("cursor must be a string").in_band()),
    };
    let page_size = req.shared.options.page_size.max(1);
    let end = (offset + page_size).min(wire.len());
    let page = wire.get(offset..end).unwrap_or_default();
    let mut result = Map::new();
    result.insert(method.key().into(), Value::Array(page.to_vec()));
    if end < wire.len() {
        let next = Cursor { list: method.key(), revision, offset: end };
        result.insert("nextCursor".into(), Value::String(next.encode()));
    }
    req.server.inner.cache.lists.apply(&mut result);
    stamp_result(&mut result, req.server.info());
    Ok(Value::Object(result))
}
