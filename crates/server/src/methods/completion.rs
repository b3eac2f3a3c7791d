//! `completion/complete` (spec digest §13): argument completion for prompts and resource
//! templates: the entry's own completer for that argument when it has one (typed prompts and
//! templates), else the server-wide function (its types live in the catalog), else nothing.

use mcp_fleet_protocol::types::stamp_result;
use mcp_fleet_protocol::{Method, RpcError};
use serde_json::{Map, Value, json};

use super::{MethodRequest, Prepared};
use crate::catalog::{Completers, CompletionFn, CompletionRef, CompletionRequest, CompletionValues};

/// Most values sent (MCP caps a completion at 100).
const MAX_VALUES: usize = 100;

pub(super) fn prepare(req: &MethodRequest<'_>) -> Result<Prepared, RpcError> {
    if !req.catalog.completes() {
        return Err(RpcError::method_not_found(Method::CompletionComplete.as_str()));
    }
    let (request, own) = parse(req)?;
    let complete = own.or_else(|| req.catalog.completion.clone());
    let info = req.server.info().clone();
    let future = async move {
        let mut v = match complete {
            Some(complete) => complete(request).await?,
            None => CompletionValues::default(),
        };
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
    };
    Ok(Prepared::call(future, None))
}

/// The request, and the completer its entry has for its argument, if any.
fn parse(req: &MethodRequest<'_>) -> Result<(CompletionRequest, Option<CompletionFn>), RpcError> {
    let invalid = |m: &str| RpcError::invalid_params(m.to_owned()).in_band();
    let reference = req.params.get("ref").ok_or_else(|| invalid("params.ref is required"))?;
    let (reference, completers) = match (reference.get("type").and_then(Value::as_str), reference) {
        (Some("ref/prompt"), r) => {
            let name = r.get("name").and_then(Value::as_str).ok_or_else(|| invalid("ref.name must be a string"))?;
            let Some(prompt) = req.catalog.prompts.get(name) else {
                return Err(RpcError::invalid_params(format!("Unknown prompt: {name}")).in_band());
            };
            (CompletionRef::Prompt(name.to_owned()), prompt.completers.clone())
        }
        (Some("ref/resource"), r) => {
            let uri = r.get("uri").and_then(Value::as_str).ok_or_else(|| invalid("ref.uri must be a string"))?;
            let completers = match (req.catalog.templates.get(uri), req.catalog.resources.get(uri)) {
                (Some(template), _) => template.completers.clone(),
                (None, Some(_)) => Completers::default(),
                (None, None) => {
                    return Err(RpcError::invalid_params(format!("Unknown resource or template: {uri}")).in_band());
                }
            };
            (CompletionRef::Resource(uri.to_owned()), completers)
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
    let own = completers.get(name).cloned();
    Ok((CompletionRequest { reference, argument: name.to_owned(), value: value.to_owned(), context }, own))
}
