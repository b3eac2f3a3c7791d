//! The handler's `requestState` codec: signs interim state with the configured key (the same on
//! every replica, so a retry may land anywhere) and verifies it on the retry, bound to the
//! method, the target name and the caller.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use mcp_fleet_protocol::state::StateSigner;
use serde_json::Value;

use crate::error::ServerError;

/// Signs and verifies `requestState` for one handler.
#[derive(Clone, Debug)]
pub(crate) struct StateCodec {
    signer: StateSigner,
    ttl: Duration,
}

impl StateCodec {
    pub(crate) fn try_new(key: &[u8], ttl: Duration) -> Result<Self, ServerError> {
        let signer = StateSigner::new(key).map_err(|e| ServerError::Options(e.to_string()))?;
        Ok(StateCodec { signer, ttl })
    }

    pub(crate) fn sign(&self, payload: &Value, binding: &str) -> String {
        self.signer.sign(payload, binding, now_secs(), self.ttl.as_secs())
    }

    pub(crate) fn verify(&self, token: &str, binding: &str) -> Option<Value> {
        match self.signer.verify(token, binding, now_secs()) {
            Ok(payload) => Some(payload),
            Err(reason) => {
                tracing::info!(%reason, "refused requestState");
                None
            }
        }
    }
}

/// Seconds since the Unix epoch. A clock set before 1970 reads 0: tokens then last as long as
/// their TTL past the epoch — no worse than the broken clock itself, and never a panic.
fn now_secs() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}
