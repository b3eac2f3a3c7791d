//! What a 2025-03-26 JSON-RPC batch costs before any of it is served: a bound on its messages
//! ([`Era2025Options::max_batch_messages`](crate::options::Era2025Options::max_batch_messages)), and one
//! rate-limit token per message, so a batch of 20,000 `tools/list` is not one request's worth.
//!
//! The endpoint's own check took the HTTP request's token before the body was read; the
//! batch's other messages are charged here, all or none. Parsing the batch's messages is
//! `post`'s.

use http::StatusCode;
use mcp_fleet_protocol::RpcError;

use crate::context::Principal;
use crate::http::{error_response, rate_limited};
use crate::shared::HandlerShared;

impl HandlerShared {
    /// Admit a batch of `messages` from `principal`, or the refusal to answer: 413 with
    /// `-32600` past the size limit, 429 with `Retry-After` when its messages exceed what the
    /// rate limit has left.
    pub(super) async fn admit_batch(
        &self,
        parts: &http::request::Parts,
        principal: Option<&Principal>,
        messages: usize,
    ) -> Result<(), super::post::Refusal> {
        let limit = self.options.era2025.max_batch_messages;
        if messages > limit {
            let message = format!("A batch holds {messages} messages; the limit is {limit}");
            let error = RpcError::invalid_request(message).with_status(StatusCode::PAYLOAD_TOO_LARGE);
            return Err(Box::new(error_response(None, &error)));
        }
        let limits = &self.limits;
        // The request itself was counted already (one message).
        let more = u32::try_from(messages.saturating_sub(1)).unwrap_or(u32::MAX);
        if more == 0 || !limits.counts_requests() {
            return Ok(());
        }
        let key = crate::auth::LimitGate::key(principal, parts);
        limits.check_request(&key, more).await.map_err(|wait| {
            self.metrics.rate_limited.inc();
            Box::new(rate_limited(wait))
        })
    }
}

#[cfg(test)]
mod tests;
