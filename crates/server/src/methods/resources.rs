//! `resources/read` (spec digest §11): static resources first, then templates; an unknown URI
//! is `-32602` with `data.uri` (never an empty `contents`).

use mcp_fleet_protocol::types::ResourceContents;
use mcp_fleet_protocol::{Method, RpcError};
use serde::Serialize;
use serde_json::{Map, json};

use super::mrtr::start_call;
use super::{MethodRequest, Prepared};
use crate::catalog::{ResourceRead, run_guarded};
use crate::outcome::Outcome;

#[derive(Serialize)]
struct ReadResult {
    contents: Vec<ResourceContents>,
}

pub(super) fn prepare_read(req: &mut MethodRequest<'_>) -> Result<Prepared, RpcError> {
    let uri = req.string_param("uri")?;
    let found = match req.catalog.resources.get(&uri) {
        Some(entry) => Some((entry.read.clone(), Map::new(), entry.revision.clone())),
        None => req
            .catalog
            .templates
            .enabled()
            .find_map(|t| t.pattern.matches(&uri).map(|vars| (t.read.clone(), vars, t.revision.clone()))),
    };
    let Some((read, variables, revision)) = found else {
        let err = RpcError::invalid_params(format!("Resource not found: {uri}")).with_data(json!({"uri": uri}));
        return Err(err.in_band());
    };
    let (ctx, notifications, finisher) = start_call(req, Method::ResourcesRead, &uri, &revision)?;
    // A retry's result must not be cached (CACHE-3); otherwise the configured hint.
    let cache = if ctx.input_responses.is_some() || ctx.request_state.is_some() {
        mcp_fleet_protocol::types::CacheHint::NONE
    } else {
        req.server.cache_policy().reads
    };
    let future = async move {
        let outcome = match run_guarded(&read, ResourceRead { uri: uri.clone(), variables, ctx }).await? {
            Outcome::Complete(contents) if contents.is_empty() => {
                return Err(RpcError::internal(format!("Resource {uri} produced no contents")));
            }
            Outcome::Complete(contents) => Outcome::Complete(ReadResult { contents }),
            Outcome::InputRequired(ir) => Outcome::InputRequired(ir),
        };
        finisher.finish(outcome, Some(cache))
    };
    Ok(Prepared::call(future, notifications))
}
