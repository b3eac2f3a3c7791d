//! `completion/complete` (spec digest §13): argument completion for prompts and resource
//! templates, through one application-supplied function (its types live in the catalog).

use mcp_fleet_protocol::types::stamp_result;
use mcp_fleet_protocol::{Method, RpcError};
use serde_json::{Map, Value, json};

use super::{MethodRequest, Prepared};
use crate::catalog::{CompletionRef, CompletionRequest};

/// Most values sent (MCP caps a completion at 100).
const MAX_VALUES: usize = 100;

pub(super) fn prepare(req: &MethodRequest<'_>) -> Result<Prepared, RpcError> {
    let Some(complete) = req.catalog.completion.clone() else {
        return Err(RpcError::method_not_found(Method::CompletionComplete.as_str()));
    };
    let request = parse(req)?;
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
    };
    Ok(Prepared::call(future, None))
}

fn parse(req: &MethodRequest<'_>) -> Result<CompletionRequest, RpcError> {
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
