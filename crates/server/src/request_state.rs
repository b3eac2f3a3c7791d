//! The handler's `requestState` codec: signs interim state with the first key of the ring (the
//! same ring on every replica, so a retry may land anywhere) and verifies it on the retry with
//! any key of the ring, bound to the method, the target name and the caller, and carrying the
//! definition revision of its target (compared by `mrtr` with the current one).
//!
//! State is always signed (the 2026-07-28 spec: servers MUST verify `requestState` integrity).
//! Without configured keys the codec makes up a random per-process key, with a warning at
//! start: a retry on another replica then fails with a `-32602` that names the missing shared
//! key (the token says which key signed it), never with silence or a generic error.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

pub(crate) use mcp_fleet_protocol::state::Verified;
use mcp_fleet_protocol::state::{EPHEMERAL_KID_PREFIX, StateError, StateKey, StateSigner, key_id};
use serde_json::Value;

use crate::error::ServerError;

/// Signs and verifies `requestState` for one handler.
#[derive(Clone, Debug)]
pub(crate) struct StateCodec {
    signer: StateSigner,
    ttl: Duration,
}

/// Why a state token was refused, for the client's `-32602`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Refused {
    /// Tampered, expired, malformed or bound to another request: one generic answer.
    Invalid,
    /// Signed with key `kid`, which this replica does not hold.
    UnknownKey {
        /// The id the token names.
        kid: String,
    },
    /// Minted for another definition of its target (the catalog changed in between).
    Stale {
        /// The revision the state was minted for.
        minted: String,
        /// The target's current revision.
        current: String,
    },
}

impl StateCodec {
    /// A codec signing with `keys[0]` and verifying with every key; no keys: a random
    /// per-process key, with a warning naming the consequence when the handler is one of a
    /// fleet (`alone`: no bus was configured, so no other replica can be asked to verify).
    pub(crate) fn try_new(keys: &[Vec<u8>], ttl: Duration, alone: bool) -> Result<Self, ServerError> {
        let options = |e: StateError| ServerError::Options(format!("request_state_keys: {e}"));
        let ring = if keys.is_empty() {
            let key = StateKey::ephemeral(rand::random());
            if alone {
                tracing::debug!(kid = key.kid(), "requestState is signed with a random per-process key");
            } else {
                tracing::warn!(
                    kid = key.kid(),
                    "no request_state_key configured: requestState is signed with a random per-process key, so a \
                     multi-round-trip call must retry on this replica; give every replica the same key"
                );
            }
            vec![key]
        } else {
            keys.iter().map(|k| StateKey::new(k)).collect::<Result<_, _>>().map_err(options)?
        };
        Ok(StateCodec { signer: StateSigner::with_keys(ring).map_err(options)?, ttl })
    }

    /// The key ring, which also seals the SSE ids of scoped principals' GET streams (see
    /// `crate::era2025`): shared by the fleet when configured, like `requestState`.
    pub(crate) fn ring(&self) -> &StateSigner {
        &self.signer
    }

    /// Sign `payload` for `binding`, minted for the target's definition `revision`.
    pub(crate) fn sign(&self, payload: &Value, binding: &str, revision: &str) -> String {
        self.signer.sign_revised(payload, binding, Some(revision), now_secs(), self.ttl.as_secs())
    }

    /// Verify `token` for `binding`; refused as [`Refused::Stale`] when it was minted for a
    /// definition revision other than `current`. A token without a revision (minted by a
    /// version before revisions) is accepted: it cannot say what it approved.
    pub(crate) fn verify(&self, token: &str, binding: &str, current: &str) -> Result<Value, Refused> {
        let Verified { payload, revision } = self.verify_token(token, binding)?;
        match revision {
            Some(minted) if minted != current => {
                tracing::info!(%minted, current, "refused requestState minted for another definition");
                Err(Refused::Stale { minted, current: current.to_owned() })
            }
            _ => Ok(payload),
        }
    }

    fn verify_token(&self, token: &str, binding: &str) -> Result<Verified, Refused> {
        self.signer.verify_revised(token, binding, now_secs()).map_err(|reason| {
            tracing::info!(%reason, kid = key_id(token), "refused requestState");
            match (reason, key_id(token)) {
                (StateError::UnknownKey, Some(kid)) => Refused::UnknownKey { kid: kid.to_owned() },
                _ => Refused::Invalid,
            }
        })
    }
}

impl Refused {
    /// What the client (and the operator reading its error) is told.
    pub(crate) fn message(&self) -> String {
        match self {
            Refused::Invalid => "Invalid or expired requestState".to_owned(),
            Refused::UnknownKey { kid } if kid.starts_with(EPHEMERAL_KID_PREFIX) => format!(
                "requestState was signed by another replica's per-process key ({kid}): no shared request_state_key \
                 is configured; give every replica the same key"
            ),
            Refused::UnknownKey { kid } => format!(
                "requestState was signed with key {kid}, which this replica does not hold: every replica needs the \
                 same request_state_key ring"
            ),
            Refused::Stale { minted, current } => format!(
                "requestState was minted for revision {minted} of this definition, which is now {current}: fetch \
                 it again and ask again"
            ),
        }
    }
}

/// Seconds since the Unix epoch. A clock set before 1970 reads 0: tokens then last as long as
/// their TTL past the epoch — no worse than the broken clock itself, and never a panic.
fn now_secs() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}
