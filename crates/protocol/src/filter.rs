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
}

impl SubscriptionFilter {
    /// Parse `params.notifications` (LSTN-2). Missing or ill-typed → in-band `-32602`;
    /// more than `max_uris` resource subscriptions → in-band `-32602`.
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
        let mut filter = SubscriptionFilter {
            tools_list_changed: flag("toolsListChanged")?,
            prompts_list_changed: flag("promptsListChanged")?,
            resources_list_changed: flag("resourcesListChanged")?,
            resource_subscriptions: Vec::new(),
        };
        match notifications.get("resourceSubscriptions") {
            None | Some(Value::Null) => {}
            Some(Value::Array(uris)) => {
                if uris.len() > max_uris {
                    return Err(invalid(format!(
                        "params.notifications.resourceSubscriptions lists {} URIs; the limit is {max_uris}",
                        uris.len()
                    )));
                }
                let mut seen = std::collections::HashSet::with_capacity(uris.len());
                for uri in uris {
                    let Value::String(uri) = uri else {
                        return Err(invalid(
                            "params.notifications.resourceSubscriptions must be an array of strings".into(),
                        ));
                    };
                    if seen.insert(uri.as_str()) {
                        filter.resource_subscriptions.push(uri.clone());
                    }
                }
            }
            Some(_) => {
                return Err(invalid("params.notifications.resourceSubscriptions must be an array of strings".into()));
            }
        }
        Ok(filter)
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
        }
    }

    /// Whether nothing at all is followed.
    pub fn is_empty(&self) -> bool {
        !self.tools_list_changed
            && !self.prompts_list_changed
            && !self.resources_list_changed
            && self.resource_subscriptions.is_empty()
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
        Value::Object(out)
    }
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
        };
        assert_eq!(
            f.honoured(all).to_wire(),
            json!({"toolsListChanged":true,"promptsListChanged":true,"resourceSubscriptions":["u"]})
        );
        assert_eq!(SubscriptionFilter::default().to_wire(), json!({}));
    }
}
