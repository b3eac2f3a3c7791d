//! What a fetched list must satisfy before it replaces the one a host holds: every entry an
//! object with its identifying field (a tool's, a prompt's `name`, a resource's `uri`, a
//! template's `uriTemplate`) as a string, no identity twice, and a tool's `inputSchema` a JSON
//! Schema object of `"type": "object"` (spec: tools declare their input as an object schema).
//!
//! A list that fails is refused as a whole ([`ClientError::InvalidList`]): the watcher keeps
//! the previous snapshot rather than hand a host a catalog it cannot use.

use std::collections::HashSet;

use serde_json::Value;

use crate::error::ClientError;
use crate::list::ListKind;

/// The field naming an entry of `kind`, unique within its list.
pub fn identity_field(kind: ListKind) -> &'static str {
    match kind {
        ListKind::Tools | ListKind::Prompts => "name",
        ListKind::Resources => "uri",
        ListKind::ResourceTemplates => "uriTemplate",
    }
}

/// Check a complete list of `kind`.
///
/// ```
/// use mcp_fleet_client::{ListKind, validate::validate_list};
/// use serde_json::json;
/// let tool = |name: &str| json!({"name": name, "inputSchema": {"type": "object"}});
/// assert!(validate_list(ListKind::Tools, &[tool("a"), tool("b")]).is_ok());
/// assert!(validate_list(ListKind::Tools, &[tool("a"), tool("a")]).is_err());
/// assert!(validate_list(ListKind::Tools, &[json!({"name": "a", "inputSchema": {"type": "string"}})]).is_err());
/// ```
pub fn validate_list(kind: ListKind, items: &[Value]) -> Result<(), ClientError> {
    let invalid = |reason: String| ClientError::InvalidList { list: kind.method().as_str(), reason };
    let field = identity_field(kind);
    let mut seen = HashSet::with_capacity(items.len());
    for (index, item) in items.iter().enumerate() {
        let Some(id) = item.get(field).and_then(Value::as_str) else {
            return Err(invalid(format!("entry {index} has no string {field}")));
        };
        if !seen.insert(id) {
            return Err(invalid(format!("{field} {id:?} appears twice")));
        }
        if kind == ListKind::Tools {
            check_input_schema(item).map_err(|why| invalid(format!("tool {id:?}: {why}")))?;
        }
    }
    Ok(())
}

fn check_input_schema(tool: &Value) -> Result<(), &'static str> {
    match tool.get("inputSchema") {
        Some(Value::Object(schema)) if schema.get("type") == Some(&Value::from("object")) => Ok(()),
        Some(Value::Object(_)) => Err("inputSchema is not of type object"),
        Some(_) => Err("inputSchema is not an object"),
        None => Err("no inputSchema"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_list_is_keyed_by_its_own_field() {
        assert!(validate_list(ListKind::Resources, &[json!({"uri": "a://1"}), json!({"uri": "a://2"})]).is_ok());
        assert!(validate_list(ListKind::Resources, &[json!({"uri": "a://1"}), json!({"uri": "a://1"})]).is_err());
        assert!(validate_list(ListKind::ResourceTemplates, &[json!({"uri": "a://1"})]).is_err());
        assert!(validate_list(ListKind::Prompts, &[json!({"name": "p"}), json!("p")]).is_err());
        let err = validate_list(ListKind::Tools, &[json!({"name": "t"})]).unwrap_err();
        assert_eq!(err.to_string(), "invalid tools/list: tool \"t\": no inputSchema");
    }
}
