//! `prompts/get` (spec digest §12): arguments are strings; a missing required one is `-32602`
//! before the handler runs.

use futures_util::FutureExt;
use mcp_fleet_protocol::RpcError;
use serde_json::json;

use super::outcome::start_call;
use super::{Incoming, Prepared};
use crate::catalog::PromptGet;

pub(super) fn prepare_get(req: Incoming<'_>) -> Prepared {
    match checked(&req) {
        Ok(prepared) => prepared,
        Err(e) => Prepared::Immediate(Err(e)),
    }
}

fn checked(req: &Incoming<'_>) -> Result<Prepared, RpcError> {
    let name = req.string_param("name")?;
    let Some(entry) = req.catalog.prompts.get(&name).cloned() else {
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
    let (ctx, notifications, finisher) = start_call(req, "prompts/get", &name)?;
    let get = entry.get.clone();
    let future = async move {
        let outcome = get(PromptGet { arguments, ctx }).await?;
        finisher.finish(outcome, None)
    }
    .boxed();
    Ok(Prepared::Call { future, notifications })
}
