//! `subscriptions/listen` filters (spec digest §17.2–17.4): what a listen stream asked for, and
//! the honoured subset the server acknowledges and delivers.

use serde_json::{Map, Value, json};

use crate::error::RpcError;

/// Which change notifications one listen stream asked for.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SubscriptionFilter {
    /// `notifications/tools/list_changed`.
    pub tools_list_changed: bool,
    /// `notifications/prompts/list_changed`.
    pub prompts_list_changed: bool,
    /// `notifications/resources/list_changed`.
    pub resources_list_changed: bool,
    /// `notifications/resources/updated` for exactly these URIs (deduplicated, in order).
    pub resource_subscriptions: Vec<String>,
    /// `notifications/tasks` for these task ids (the tasks extension; deduplicated, in order).
    pub task_ids: Vec<String>,
}

/// Which listen features the server supports (from its advertised capabilities).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ListenSupport {
    /// `tools.listChanged` advertised.
    pub tools_list_changed: bool,
    /// `prompts.listChanged` advertised.
    pub prompts_list_changed: bool,
    /// `resources.listChanged` advertised.
    pub resources_list_changed: bool,
    /// `resources.subscribe` advertised.
    pub resource_subscribe: bool,
    /// The `io.modelcontextprotocol/tasks` extension advertised (`taskIds`).
    pub tasks: bool,
}

impl SubscriptionFilter {
    /// Parse `params.notifications` (LSTN-2). Missing or ill-typed → in-band `-32602`;
    /// more than `max_uris` resource subscriptions (or task ids) → in-band `-32602`.
    pub fn from_params(params: &Map<String, Value>, max_uris: usize) -> Result<SubscriptionFilter, RpcError> {
        let invalid = |m: String| RpcError::invalid_params(m).in_band();
        let notifications = match params.get("notifications") {
            Some(Value::Object(n)) => n,
            Some(_) => return Err(invalid("params.notifications must be an object".into())),
            None => return Err(invalid("params.notifications is required".into())),
        };
        let flag = |key: &str| -> Result<bool, RpcError> {
            match notifications.get(key) {
                None | Some(Value::Null) => Ok(false),
                Some(Value::Bool(b)) => Ok(*b),
                Some(_) => Err(invalid(format!("params.notifications.{key} must be a boolean"))),
            }
        };
        Ok(SubscriptionFilter {
            tools_list_changed: flag("toolsListChanged")?,
            prompts_list_changed: flag("promptsListChanged")?,
            resources_list_changed: flag("resourcesListChanged")?,
            resource_subscriptions: strings(notifications, ("resourceSubscriptions", "URIs"), max_uris)?,
            task_ids: strings(notifications, ("taskIds", "task ids"), max_uris)?,
        })
    }

    /// The honoured subset (LSTN-4): only what was asked for and what the server supports.
    pub fn honoured(&self, support: ListenSupport) -> SubscriptionFilter {
        SubscriptionFilter {
            tools_list_changed: self.tools_list_changed && support.tools_list_changed,
            prompts_list_changed: self.prompts_list_changed && support.prompts_list_changed,
            resources_list_changed: self.resources_list_changed && support.resources_list_changed,
            resource_subscriptions: if support.resource_subscribe {
                self.resource_subscriptions.clone()
            } else {
                Vec::new()
            },
            task_ids: if support.tasks { self.task_ids.clone() } else { Vec::new() },
        }
    }

    /// Whether nothing at all is followed.
    pub fn is_empty(&self) -> bool {
        !self.tools_list_changed
            && !self.prompts_list_changed
            && !self.resources_list_changed
            && self.resource_subscriptions.is_empty()
            && self.task_ids.is_empty()
    }

    /// The wire form used in the acknowledgement: only true flags and non-empty URI lists.
    pub fn to_wire(&self) -> Value {
        let mut out = Map::new();
        for (key, on) in [
            ("toolsListChanged", self.tools_list_changed),
            ("promptsListChanged", self.prompts_list_changed),
            ("resourcesListChanged", self.resources_list_changed),
        ] {
            if on {
                out.insert(key.into(), Value::Bool(true));
            }
        }
        if !self.resource_subscriptions.is_empty() {
            out.insert("resourceSubscriptions".into(), json!(self.resource_subscriptions));
        }
        if !self.task_ids.is_empty() {
            out.insert("taskIds".into(), json!(self.task_ids));
        }
        Value::Object(out)
    }
}

/// `params.notifications[key]`: absent, or an array of at most `max` strings (deduplicated, in
/// order); anything else is an in-band `-32602` (counting `what`).
fn strings(notifications: &Map<String, Value>, (key, what): (&str, &str), max: usize) -> Result<Vec<String>, RpcError> {
    let invalid = |m: String| RpcError::invalid_params(m).in_band();
    let items = match notifications.get(key) {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(items)) => items,
        Some(_) => return Err(invalid(format!("params.notifications.{key} must be an array of strings"))),
    };
    if items.len() > max {
        return Err(invalid(format!("params.notifications.{key} lists {} {what}; the limit is {max}", items.len())));
    }
    let mut seen = std::collections::HashSet::with_capacity(items.len());
    let mut out = Vec::with_capacity(items.len());
    for item in items {
        let Value::String(item) = item else {
            return Err(invalid(format!("params.notifications.{key} must be an array of strings")));
        };
        if seen.insert(item.as_str()) {
            out.push(item.clone());
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(v: Value) -> Result<SubscriptionFilter, RpcError> {
        SubscriptionFilter::from_params(v.as_object().unwrap(), 3)
    }

    #[test]
    fn parses_and_dedupes() {
        let f =
            parse(json!({"notifications":{"toolsListChanged":true,"resourceSubscriptions":["a","b","a"]}})).unwrap();
        assert!(f.tools_list_changed && !f.prompts_list_changed);
        assert_eq!(f.resource_subscriptions, vec!["a", "b"]);
    }

    #[test]
    fn rejects_wrong_types_in_band() {
        for bad in [
            json!({}),
            json!({"notifications": true}),
            json!({"notifications":{"toolsListChanged":"yes"}}),
            json!({"notifications":{"resourceSubscriptions":"a"}}),
            json!({"notifications":{"resourceSubscriptions":[1]}}),
            json!({"notifications":{"resourceSubscriptions":["a","b","c","d"]}}),
            json!({"notifications":{"taskIds":"t1"}}),
            json!({"notifications":{"taskIds":["a","b","c","d"]}}),
        ] {
            let err = parse(bad.clone()).unwrap_err();
            assert_eq!(err.code, crate::ErrorCode::InvalidParams, "{bad}");
            assert_eq!(err.status, http::StatusCode::OK);
        }
    }

    #[test]
    fn honoured_subset_drops_unsupported_and_empty() {
        let f = parse(
            json!({"notifications":{"toolsListChanged":true,"promptsListChanged":true,"resourceSubscriptions":["u"]}}),
        )
        .unwrap();
        let support = ListenSupport { tools_list_changed: true, ..Default::default() };
        assert_eq!(f.honoured(support).to_wire(), json!({"toolsListChanged": true}));
        let all = ListenSupport {
            tools_list_changed: true,
            prompts_list_changed: true,
            resources_list_changed: true,
            resource_subscribe: true,
            tasks: true,
        };
        assert_eq!(
            f.honoured(all).to_wire(),
            json!({"toolsListChanged":true,"promptsListChanged":true,"resourceSubscriptions":["u"]})
        );
        assert_eq!(SubscriptionFilter::default().to_wire(), json!({}));
    }

    #[test]
    fn task_ids_are_honoured_only_with_the_extension() {
        let f = parse(json!({"notifications":{"taskIds":["t1","t2","t1"]}})).unwrap();
        assert_eq!(f.task_ids, vec!["t1", "t2"]);
        assert!(!f.is_empty());
        assert_eq!(f.honoured(ListenSupport::default()).to_wire(), json!({}));
        let tasks = ListenSupport { tasks: true, ..Default::default() };
        assert_eq!(f.honoured(tasks).to_wire(), json!({"taskIds": ["t1", "t2"]}));
    }
}
