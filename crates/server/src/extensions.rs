//! Extensions a server advertises in `server/discover`'s `capabilities.extensions` (SEP-2133:
//! a map from an extension's id to its settings object).
//!
//! Code registers an [`Extension`] where it implements one: on the server definition
//! ([`McpServerBuilder::extension`](crate::catalog::McpServerBuilder::extension)) when the catalog's
//! own handlers speak it, on the handler ([`HandlerOptions::extension`](crate::HandlerOptions::extension))
//! when code around them does; the handler adds the tasks extension itself when tasks are
//! on. Discover merges them, the handler's last. Both are fixed at build time, so every
//! replica built from the same code advertises the same set (spec digest DISC-4).
//!
//! A 2025-era `initialize` result advertises the same map in its `capabilities.extensions`:
//! the 2025-11-25 schema has no such field, but its `ServerCapabilities` is open (no
//! `additionalProperties: false`), and SEP-2133 negotiates extensions exactly there, in the
//! `initialize` exchange of a 2025-06-18 session. The one left out is the tasks extension,
//! which the 2025 path does not serve (2025-11-25 has core tasks of another shape, which this
//! framework does not implement).

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::error::ServerError;

/// One extension: an id with a vendor prefix (`io.modelcontextprotocol/tasks`,
/// `com.example/audit`) and its settings.
///
/// ```
/// use mcp_fleet_server::{extensions::Extension, McpServer};
/// use serde_json::json;
/// let audit = Extension::new("com.example/audit", json!({"retentionDays": 30})).unwrap();
/// let server = McpServer::builder("demo", "1").extension(audit).build();
/// # drop(server);
/// assert!(Extension::new("audit", json!({})).is_err(), "an id needs a prefix");
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Extension {
    id: String,
    settings: Map<String, Value>,
}

impl Extension {
    /// An extension called `id` (`prefix/name`: a dotted prefix such as a reversed domain,
    /// then a name; letters, digits, `.`, `-`, `_`) with `settings` (a JSON object).
    pub fn new(id: impl Into<String>, settings: Value) -> Result<Self, ServerError> {
        let id = id.into();
        if !is_extension_id(&id) {
            return Err(ServerError::Definition(format!(
                "extension id {id:?} must be `prefix/name`, e.g. \"com.example/audit\""
            )));
        }
        let Value::Object(settings) = settings else {
            return Err(ServerError::Definition(format!("extension {id:?}: settings must be a JSON object")));
        };
        Ok(Extension { id, settings })
    }

    /// Its id.
    pub fn id(&self) -> &str {
        &self.id
    }
}

/// `prefix/name`, each part non-empty of `[A-Za-z0-9._-]`, the prefix dotted.
fn is_extension_id(id: &str) -> bool {
    let part =
        |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_'));
    id.split_once('/').is_some_and(|(prefix, name)| part(prefix) && part(name) && prefix.contains('.'))
}

/// A set of extensions by id; registering an id again replaces its settings.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Extensions(BTreeMap<String, Map<String, Value>>);

impl Extensions {
    /// Add (or replace) `extension`.
    pub(crate) fn register(&mut self, extension: Extension) {
        self.0.insert(extension.id, extension.settings);
    }

    /// `capabilities.extensions`: `self`'s, then `more`'s over them; `None` when both are empty.
    pub(crate) fn wire(&self, more: &Extensions) -> Option<Value> {
        if self.0.is_empty() && more.0.is_empty() {
            return None;
        }
        let merged = self.0.iter().chain(&more.0).map(|(id, s)| (id.clone(), Value::Object(s.clone())));
        Some(Value::Object(merged.collect()))
    }

    /// The same set without the extension `id`.
    pub(crate) fn without(&self, id: &str) -> Extensions {
        let mut rest = self.clone();
        rest.0.remove(id);
        rest
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn ids_need_a_dotted_prefix_and_a_name() {
        for good in ["io.modelcontextprotocol/tasks", "com.example/audit-log", "a.b/c_d"] {
            assert!(is_extension_id(good), "{good}");
        }
        for bad in ["tasks", "/tasks", "com.example/", "example/x", "com.example/a/b", "com.ex ample/x"] {
            assert!(!is_extension_id(bad), "{bad}");
        }
        assert!(Extension::new("com.example/x", json!([])).is_err(), "settings are an object");
    }

    #[test]
    fn the_later_set_wins_and_empty_is_absent() {
        let mut server = Extensions::default();
        assert_eq!(server.wire(&Extensions::default()), None);
        server.register(Extension::new("com.example/a", json!({"v": 1})).unwrap());
        server.register(Extension::new("com.example/b", json!({})).unwrap());
        let mut handler = Extensions::default();
        handler.register(Extension::new("com.example/a", json!({"v": 2})).unwrap());
        assert_eq!(server.wire(&handler), Some(json!({"com.example/a": {"v": 2}, "com.example/b": {}})));
        assert_eq!(server.without("com.example/a").wire(&Extensions::default()), Some(json!({"com.example/b": {}})));
    }
}
