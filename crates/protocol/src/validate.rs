//! The request validation ladder, steps 3–9 of the spec digest §3, as one pure function.
//!
//! Which error wins when a request is wrong in several ways is decided here, in the order the
//! reference SDK and the conformance suite expect: parse → shape → era → envelope →
//! header/body agreement → supported version → required headers. Method lookup, capability
//! gates and `Mcp-Param-*` checks need the server's catalog and happen after this.

use http::HeaderMap;
use serde_json::Value;

use crate::envelope::RequestMeta;
use crate::error::RpcError;
use crate::headers::{self, METHOD_HEADER, METHOD_NAME, PROTOCOL_VERSION_HEADER, PROTOCOL_VERSION_NAME};
use crate::jsonrpc::{Message, Rejection, RequestId, message_from_body, parse_body};

/// The first protocol version of the stateless era; ISO dates sort chronologically.
pub const FIRST_MODERN_VERSION: &str = "2026-07-28";
/// The version assumed for a request that names none (spec §21.7).
pub const ASSUMED_LEGACY_VERSION: &str = "2025-03-26";

/// A message that passed the ladder.
#[derive(Debug, Clone, PartialEq)]
pub enum Validated {
    /// A request to dispatch.
    Request {
        /// Its id.
        id: RequestId,
        /// The parsed message.
        message: Message,
        /// Its validated envelope.
        meta: RequestMeta,
    },
    /// A notification: answered 202 and otherwise ignored (HTTP-7).
    Notification(Message),
    /// 2025-era traffic (no modern claim, no modern header), parsed but not shaped: a request,
    /// a notification, a response to a server-to-client request, or a batch.
    Legacy(Value),
}

/// Run ladder steps 3–9 over one POST body.
///
/// Step 5 classifies the era (spec digest §6.3, body claim first, header as cross-check): a
/// body without a protocol-version claim in `params._meta`, under no modern
/// `MCP-Protocol-Version` header, is 2025-era traffic and comes back whole as
/// [`Validated::Legacy`] for the legacy layer (it may be a batch or a posted response).
pub fn validate_message(headers: &HeaderMap, body: &[u8], supported: &[&str]) -> Result<Validated, Rejection> {
    let parsed = parse_body(body)?;
    let claimed = parsed.params().is_some_and(RequestMeta::has_claim);
    if !claimed {
        let header_version =
            headers::header_text(headers, &PROTOCOL_VERSION_NAME).map_err(|e| Rejection::new(id_of(&parsed), e))?;
        if !header_version.is_some_and(is_modern) {
            return Ok(Validated::Legacy(parsed.into_value()));
        }
    }
    let mut message = message_from_body(parsed)?;
    let id = message.id.clone();
    let reject = |error: RpcError| Rejection::new(id.clone(), error);

    // Step 5: no claim under a modern header.
    if !claimed {
        if !message.is_request() {
            return Ok(Validated::Notification(message));
        }
        if message.method == "initialize" {
            // A legacy handshake announcing a modern version in its header (§6.3 step 3).
            return Err(reject(RpcError::header_mismatch(
                PROTOCOL_VERSION_HEADER,
                headers::header_text(headers, PROTOCOL_VERSION_HEADER).ok().flatten(),
                message.params.get("protocolVersion").and_then(Value::as_str),
            )));
        }
        return Err(reject(
            RequestMeta::from_params(&message.params)
                .err()
                .unwrap_or_else(|| RpcError::invalid_params("Missing required params._meta envelope")),
        ));
    }

    // Step 6: envelope well-formed.
    let meta = RequestMeta::take_from_params(&mut message.params).map_err(reject)?;

    // Step 7: headers that are present must agree with the body. Each is read once, here; step
    // 9 asks the same values whether they are present.
    let version_header = headers::header_text(headers, &PROTOCOL_VERSION_NAME).map_err(reject)?;
    agrees(PROTOCOL_VERSION_HEADER, version_header, &meta.protocol_version).map_err(reject)?;
    let method_header = headers::header_text(headers, &METHOD_NAME).map_err(reject)?;
    agrees(METHOD_HEADER, method_header, &message.method).map_err(reject)?;

    // Step 8: the body's version must be one we serve.
    if !supported.contains(&meta.protocol_version.as_str()) {
        return Err(reject(RpcError::unsupported_version(supported, &meta.protocol_version)));
    }

    // Header presence is not enforced on notifications (spec §21.5).
    // Step 9: required headers on requests.
    let Some(request_id) = message.id.clone() else { return Ok(Validated::Notification(message)) };
    present(PROTOCOL_VERSION_HEADER, version_header, &meta.protocol_version).map_err(reject)?;
    present(METHOD_HEADER, method_header, &message.method).map_err(reject)?;
    if let Some(named) = named_target(&message) {
        headers::check_name(headers, named).map_err(reject)?;
    }
    Ok(Validated::Request { id: request_id, message, meta })
}

/// Step 7 for a header already read ([`headers::check_matches`]): absent, or equal to the body.
fn agrees(name: &str, header: Option<&str>, body_value: &str) -> Result<(), RpcError> {
    match header {
        Some(h) if h != body_value => Err(RpcError::header_mismatch(name, Some(h), Some(body_value))),
        _ => Ok(()),
    }
}

/// Step 9 for a header already read, that step 7 found equal to the body when present
/// ([`headers::check_required`]): it must be present.
fn present(name: &str, header: Option<&str>, body_value: &str) -> Result<(), RpcError> {
    match header {
        None => Err(RpcError::header_mismatch(name, None, Some(body_value))),
        Some(_) => Ok(()),
    }
}

/// The id of a parsed body, when it has a readable one (to echo in an early rejection).
fn id_of(body: &crate::jsonrpc::Body) -> Option<RequestId> {
    serde_json::from_value(body.id()?.clone()).ok()
}

/// Whether a version string belongs to the stateless era.
pub fn is_modern(version: &str) -> bool {
    version >= FIRST_MODERN_VERSION
}

/// The body value `Mcp-Name` must mirror, for the methods that carry one: the name or URI of
/// the three core ones, and the task id of `tasks/get`, `tasks/update` and `tasks/cancel` (the
/// tasks extension: "the client MUST set the `Mcp-Name` header to the value of
/// `params.taskId`", so balancers can route on it).
pub fn named_target(message: &Message) -> Option<&str> {
    let key = match message.method.as_str() {
        "tools/call" | "prompts/get" => "name",
        "resources/read" => "uri",
        "tasks/get" | "tasks/update" | "tasks/cancel" => "taskId",
        _ => return None,
    };
    message.params.get(key).and_then(Value::as_str)
}

#[cfg(test)]
mod tests;
