//! `completion/complete` (spec digest §13): argument completion for prompts and resource
//! templates, through one application-supplied function.

use std::sync::Arc;

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use mcp_fleet_protocol::RpcError;
use mcp_fleet_protocol::types::stamp_result;
use serde_json::{Map, Value, json};

use super::{Incoming, Prepared};

/// What is being completed.
#[derive(Debug, Clone, PartialEq)]
pub enum CompletionRef {
    /// A prompt argument.
    Prompt(String),
    /// A resource template (or resource URI) variable.
    Resource(String),
}

/// One completion request.
#[derive(Debug, Clone)]
pub struct CompletionRequest {
    /// The prompt or resource being completed.
    pub reference: CompletionRef,
    /// The argument's name.
    pub argument: String,
    /// What the user typed so far.
    pub value: String,
    /// Already-resolved arguments (`context.arguments`).
    pub context: Map<String, Value>,
}

/// Completion values (at most 100 are sent, best first).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CompletionValues {
    /// Suggestions.
    pub values: Vec<String>,
    /// Total number of matches, if known.
    pub total: Option<u64>,
    /// Whether more exist than were returned.
    pub has_more: Option<bool>,
}

pub(crate) type CompletionFn =
    Arc<dyn Fn(CompletionRequest) -> BoxFuture<'static, Result<CompletionValues, RpcError>> + Send + Sync>;

const MAX_VALUES: usize = 100;

pub(super) fn prepare(req: Incoming<'_>) -> Prepared {
    let parsed = parse(&req);
    let Some(complete) = req.catalog.completion.clone() else {
        return Prepared::Immediate(Err(RpcError::method_not_found("completion/complete")));
    };
    let request = match parsed {
        Ok(r) => r,
        Err(e) => return Prepared::Immediate(Err(e)),
    };
    let info = req.server.info().clone();
    let future = async move {
        let mut v = complete(request).await?;
        let more = v.values.len() > MAX_VALUES;
        v.values.truncate(MAX_VALUES);
        let mut completion = json!({"values": v.values});
        if let Some(total) = v.total {
            completion["total"] = json!(total);
        }
        if let Some(has_more) = v.has_more.or(more.then_some(true)) {
            completion["hasMore"] = json!(has_more);
        }
        let mut result = Map::new();
        result.insert("completion".into(), completion);
        stamp_result(&mut result, &info);
        Ok(Value::Object(result))
    }
    .boxed();
    Prepared::Call { future, notifications: None }
}

fn parse(req: &Incoming<'_>) -> Result<CompletionRequest, RpcError> {
    let invalid = |m: &str| RpcError::invalid_params(m.to_owned()).in_band();
    let reference = req.params.get("ref").ok_or_else(|| invalid("params.ref is required"))?;
    let reference = match (reference.get("type").and_then(Value::as_str), reference) {
        (Some("ref/prompt"), r) => {
            let name = r.get("name").and_then(Value::as_str).ok_or_else(|| invalid("ref.name must be a string"))?;
            if req.catalog.prompts.get(name).is_none() {
                return Err(RpcError::invalid_params(format!("Unknown prompt: {name}")).in_band());
            }
            CompletionRef::Prompt(name.to_owned())
        }
        (Some("ref/resource"), r) => {
            let uri = r.get("uri").and_then(Value::as_str).ok_or_else(|| invalid("ref.uri must be a string"))?;
            let known = req.catalog.templates.get(uri).is_some() || req.catalog.resources.get(uri).is_some();
            if !known {
                return Err(RpcError::invalid_params(format!("Unknown resource or template: {uri}")).in_band());
            }
            CompletionRef::Resource(uri.to_owned())
        }
        _ => return Err(invalid("ref.type must be ref/prompt or ref/resource")),
    };
    let argument = req.params.get("argument").ok_or_else(|| invalid("params.argument is required"))?;
    let name = argument.get("name").and_then(Value::as_str).ok_or_else(|| invalid("argument.name must be a string"))?;
    let value =
        argument.get("value").and_then(Value::as_str).ok_or_else(|| invalid("argument.value must be a string"))?;
    let context = req
        .params
        .get("context")
        .and_then(|c| c.get("arguments"))
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    Ok(CompletionRequest { reference, argument: name.to_owned(), value: value.to_owned(), context })
}
