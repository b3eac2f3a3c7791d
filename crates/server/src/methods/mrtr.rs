//! Shared by the three methods that may answer `input_required` (`tools/call`, `prompts/get`,
//! `resources/read`): starting the call (reading a retry's `inputResponses`/`requestState`),
//! and turning a handler's [`Outcome`] into a stamped result object.

use std::sync::Arc;

use mcp_fleet_protocol::envelope::RequestMeta;
use mcp_fleet_protocol::types::{CacheHint, CallToolResult, StampedToolResult, stamp_result};
use mcp_fleet_protocol::{Method, RpcError};
use serde::Serialize;
use serde_json::{Map, Value, json};

use super::{CallResult, MethodRequest};
use crate::catalog::DefinitionRevision;
use crate::context::{CallContext, NotificationReceiver};
use crate::outcome::{InputRequired, Outcome};
use crate::request_state::{Refused, StateCodec};

/// What binds a state token to its request: method, target, the caller (subject and tenant)
/// and the request's own parameters, canonical JSON (sorted keys) without the retry's
/// `inputResponses`, `requestState` and `_meta`. State minted for one principal or one request
/// is refused for any other, on any replica holding the same key.
fn binding(method: Method, target: &str, ctx: &CallContext, params: &Map<String, Value>) -> String {
    let who = ctx.principal.as_ref().map(|p| p.id.as_str()).unwrap_or("");
    let tenant = ctx.principal.as_ref().and_then(|p| p.tenant.as_deref()).unwrap_or("");
    let mut out = Vec::with_capacity(128);
    for part in [method.as_str(), target, who, tenant] {
        out.extend_from_slice(part.as_bytes());
        out.push(0);
    }
    // Serialized from the borrowed entries, in the map's own (sorted) order: the same bytes a
    // filtered copy of the map would give, without copying every argument first. Writing JSON
    // into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut out, &BoundParams(params));
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// The request's parameters a state token is bound to: all but the retry's own and `_meta`.
struct BoundParams<'a>(&'a Map<String, Value>);

impl Serialize for BoundParams<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap as _;
        let mut map = serializer.serialize_map(None)?;
        for (key, value) in self.0 {
            if !matches!(key.as_str(), "inputResponses" | "requestState" | "_meta") {
                map.serialize_entry(key, value)?;
            }
        }
        map.end()
    }
}

fn invalid_state(refused: &Refused) -> RpcError {
    let data = match refused {
        Refused::Invalid => json!({"reason": "invalid_request_state"}),
        Refused::UnknownKey { kid } => json!({"reason": "invalid_request_state", "unknownKeyId": kid}),
        Refused::Stale { minted, current } => {
            json!({"reason": "stale_request_state", "mintedRevision": minted, "currentRevision": current})
        }
    };
    RpcError::invalid_params(refused.message()).with_data(data).in_band()
}

/// Read a retry's `inputResponses` and `requestState` into the call context (MRTR-5, MRTR-6).
fn read_retry(
    params: &Map<String, Value>,
    codec: &StateCodec,
    (binding, revision): (&str, &str),
    ctx: &mut CallContext,
) -> Result<(), RpcError> {
    match params.get("inputResponses") {
        None => {}
        Some(Value::Object(responses)) if responses.values().all(Value::is_object) => {
            ctx.input_responses = Some(Value::Object(responses.clone()));
        }
        Some(_) => {
            return Err(
                RpcError::invalid_params("inputResponses must be an object whose values are result objects").in_band()
            );
        }
    }
    // The 2026-07-28 spec: servers MUST verify requestState integrity; it is always signed.
    ctx.request_state = match params.get("requestState") {
        None => None,
        Some(Value::String(token)) => Some(codec.verify(token, binding, revision).map_err(|r| invalid_state(&r))?),
        Some(_) => return Err(invalid_state(&Refused::Invalid)),
    };
    Ok(())
}

/// Start a call that may answer `input_required`: its context (with the notification channel
/// that switches the response to SSE), the retry's inputs read and verified — state minted for
/// another revision of the target's definition (`revision`, computed when the catalog entry
/// was built) refused as stale — and the [`Finisher`] that will turn the handler's outcome
/// into the result object.
pub(super) fn start_call(
    req: &mut MethodRequest<'_>,
    method: Method,
    target: &str,
    revision: &DefinitionRevision,
) -> Result<(CallContext, Option<NotificationReceiver>, Finisher), RpcError> {
    let (mut ctx, notifications) = req.call_context();
    // Only the declared capabilities are read after the handler (to check its input
    // requests): not a second copy of the whole envelope, which the call context holds.
    let meta = RequestMeta { client_capabilities: ctx.meta.client_capabilities.clone(), ..RequestMeta::default() };
    let binding = binding(method, target, &ctx, &req.params);
    let revision = revision.clone();
    let codec = req.shared.state_codec.clone();
    read_retry(&req.params, &codec, (&binding, &revision), &mut ctx)?;
    let finisher = Finisher { info: req.server.info().clone(), codec, binding, revision, meta, era2025: req.era2025 };
    Ok((ctx, notifications, finisher))
}

/// Everything needed to turn a handler's outcome into the result object, taken from the
/// request before the handler runs (the handler's future owns it, not the request).
pub(crate) struct Finisher {
    info: Arc<Value>,
    /// Shared, not copied: a codec holds its key ring (several allocations per clone).
    codec: Arc<StateCodec>,
    binding: String,
    /// The target's definition revision, which minted state carries.
    revision: DefinitionRevision,
    /// The request's declared client capabilities (the rest of the envelope left empty).
    meta: RequestMeta,
    /// A 2025-era request, whose result the legacy layer reshapes as a map.
    era2025: bool,
}

impl Finisher {
    /// The result object: stamped, with `cache` hints on a complete result of a cacheable
    /// method, and signed state on `input_required`.
    pub(crate) fn finish<T: Serialize>(
        &self,
        outcome: Outcome<T>,
        cache: Option<CacheHint>,
    ) -> Result<Value, RpcError> {
        let mut result = match outcome {
            Outcome::Complete(value) => {
                let Ok(Value::Object(mut obj)) = serde_json::to_value(value) else {
                    return Err(RpcError::internal("Handler result is not a JSON object"));
                };
                obj.insert("resultType".into(), json!("complete"));
                if let Some(cache) = cache {
                    cache.apply(&mut obj);
                }
                obj
            }
            Outcome::InputRequired(ir) => input_required(ir, self, &self.meta)?,
        };
        stamp_result(&mut result, &self.info);
        Ok(Value::Object(result))
    }

    /// [`Finisher::finish`] of a `tools/call`'s outcome: a complete result of a 2026-era
    /// request is written out as JSON text (nothing downstream reads it as a map); anything
    /// else is built as one.
    pub(crate) fn finish_tool_call(&self, outcome: Outcome<CallToolResult>) -> Result<CallResult, RpcError> {
        match outcome {
            Outcome::Complete(result) if !self.era2025 => {
                let stamped = StampedToolResult { result: &result, server_info: &self.info };
                let json = serde_json::to_vec(&stamped)
                    .map_err(|e| RpcError::internal(format!("Handler result could not be serialised: {e}")))?;
                Ok(CallResult::Written { json, is_error: result.is_error })
            }
            outcome => self.finish(outcome, None).map(CallResult::Value),
        }
    }

    /// The `serverInfo` results are stamped with.
    pub(crate) fn info(&self) -> &Arc<Value> {
        &self.info
    }
}

fn input_required(ir: InputRequired, signer: &Finisher, meta: &RequestMeta) -> Result<Map<String, Value>, RpcError> {
    if ir.input_requests.is_empty() && ir.request_state.is_none() {
        return Err(RpcError::internal("input_required needs inputRequests or requestState"));
    }
    for request in ir.input_requests.values() {
        if let Some(missing) = meta.missing_capabilities(&capability_for(request)) {
            return Err(RpcError::missing_capability(missing));
        }
    }
    let mut obj = Map::new();
    obj.insert("resultType".into(), json!("input_required"));
    if !ir.input_requests.is_empty() {
        obj.insert("inputRequests".into(), Value::Object(ir.input_requests));
    }
    if let Some(state) = ir.request_state {
        let token = signer.codec.sign(&state, &signer.binding, &signer.revision);
        obj.insert("requestState".into(), Value::String(token));
    }
    Ok(obj)
}

/// The client capability an input request needs (MRTR-3).
pub(crate) fn capability_for(request: &Value) -> Value {
    let params = request.get("params");
    match request.get("method").and_then(Value::as_str) {
        Some("elicitation/create") if params.and_then(|p| p.get("mode")).and_then(Value::as_str) == Some("url") => {
            json!({"elicitation": {"url": {}}})
        }
        Some("elicitation/create") => json!({"elicitation": {}}),
        Some("sampling/createMessage")
            if params.is_some_and(|p| p.get("tools").is_some() || p.get("toolChoice").is_some()) =>
        {
            json!({"sampling": {"tools": {}}})
        }
        Some("sampling/createMessage") => json!({"sampling": {}}),
        Some("roots/list") => json!({"roots": {}}),
        _ => json!({}),
    }
}
