//! `prompts/get` (spec digest §12): arguments are strings; a missing required one is `-32602`
//! before the handler runs.

use mcp_fleet_protocol::{Method, RpcError};
use serde_json::json;

use super::mrtr::start_call;
use super::{MethodRequest, Prepared};
use crate::catalog::{PromptGet, run_guarded};

pub(super) fn prepare_get(req: &mut MethodRequest<'_>) -> Result<Prepared, RpcError> {
    let name = req.string_param("name")?;
    let catalog = req.catalog.clone();
    let Some(entry) = catalog.prompts.get(&name) else {
        return Err(RpcError::invalid_params(format!("Unknown prompt: {name}"))
            .with_data(json!({"name": name}))
            .in_band());
    };
    let arguments = req.object_param("arguments")?;
    if let Some((key, _)) = arguments.iter().find(|(_, v)| !v.is_string()) {
        return Err(RpcError::invalid_params(format!("Prompt argument {key:?} must be a string")).in_band());
    }
    if let Some(missing) = entry.def.arguments.iter().find(|a| a.required && !arguments.contains_key(&a.name)) {
        return Err(RpcError::invalid_params(format!("Missing required prompt argument {:?}", missing.name)).in_band());
    }
    let (ctx, notifications, finisher) = start_call(req, Method::PromptsGet, &name, &entry.revision)?;
    let get = entry.get.clone();
    let future = async move {
        let outcome = run_guarded(&get, PromptGet { arguments, ctx }).await?;
        finisher.finish(outcome, None)
    };
    Ok(Prepared::call(future, notifications))
}
