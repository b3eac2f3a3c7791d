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
use crate::headers::{self, METHOD_HEADER, PROTOCOL_VERSION_HEADER};
use crate::jsonrpc::{Message, Rejection, RequestId, parse_message};

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
}

/// Run ladder steps 3–9 over one POST body.
pub fn validate_message(headers: &HeaderMap, body: &[u8], supported: &[&str]) -> Result<Validated, Rejection> {
    let message = parse_message(body)?;
    let id = message.id.clone();
    let reject = |error: RpcError| Rejection::new(id.clone(), error);

    // Step 5: era classification.
    if !RequestMeta::has_claim(&message.params) {
        let header_version = headers::header_text(headers, PROTOCOL_VERSION_HEADER).map_err(reject)?;
        if !message.is_request() {
            return Ok(Validated::Notification(message));
        }
        if header_version.is_some_and(is_modern) {
            return Err(reject(
                RequestMeta::from_params(&message.params)
                    .err()
                    .unwrap_or_else(|| RpcError::invalid_params("Missing required params._meta envelope")),
            ));
        }
        // Legacy traffic on a modern-only endpoint.
        let requested = message
            .params
            .get("protocolVersion")
            .and_then(Value::as_str)
            .or(header_version)
            .unwrap_or(ASSUMED_LEGACY_VERSION);
        return Err(reject(RpcError::unsupported_version(supported, requested)));
    }

    // Step 6: envelope well-formed.
    let meta = RequestMeta::from_params(&message.params).map_err(reject)?;

    // Step 7: headers that are present must agree with the body.
    headers::check_matches(headers, PROTOCOL_VERSION_HEADER, &meta.protocol_version).map_err(reject)?;
    headers::check_matches(headers, METHOD_HEADER, &message.method).map_err(reject)?;

    // Step 8: the body's version must be one we serve.
    if !supported.contains(&meta.protocol_version.as_str()) {
        return Err(reject(RpcError::unsupported_version(supported, &meta.protocol_version)));
    }

    // Header presence is not enforced on notifications (spec §21.5).
    // Step 9: required headers on requests.
    let Some(request_id) = message.id.clone() else { return Ok(Validated::Notification(message)) };
    headers::check_required(headers, PROTOCOL_VERSION_HEADER, &meta.protocol_version).map_err(reject)?;
    headers::check_required(headers, METHOD_HEADER, &message.method).map_err(reject)?;
    if let Some(named) = named_target(&message) {
        headers::check_name(headers, named).map_err(reject)?;
    }
    Ok(Validated::Request { id: request_id, message, meta })
}

/// Whether a version string belongs to the stateless era.
pub fn is_modern(version: &str) -> bool {
    version >= FIRST_MODERN_VERSION
}

/// The body value `Mcp-Name` must mirror, for the three methods that carry one.
pub fn named_target(message: &Message) -> Option<&str> {
    let key = match message.method.as_str() {
        "tools/call" | "prompts/get" => "name",
        "resources/read" => "uri",
        _ => return None,
    };
    message.params.get(key).and_then(Value::as_str)
}

#[cfg(test)]
mod tests;
