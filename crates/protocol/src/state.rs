//! Signed MRTR `requestState` (spec digest §16.3): integrity-protected, expiring, optionally
//! bound to the caller and target, and verifiable by any replica holding the same key.
//!
//! Wire form: `v1.<base64url(JSON {"p": payload, "exp": unix-seconds, "b"?: bind-tag})>.<base64url(HMAC-SHA256)>`.
//! Signed, not encrypted: the client can read the payload, so keep secrets out of it.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use serde_json::{Value, json};
use sha2::Sha256;

type HmacSha256 = Hmac<Sha256>;

/// Minimum key length in bytes.
pub const MIN_KEY_LEN: usize = 32;
/// Clock skew tolerated on expiry, in seconds (replicas' clocks differ a little).
pub const CLOCK_SKEW_SECS: u64 = 5;

/// Why a state token was refused (for logs only; the client sees one generic error).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum StateError {
    /// The key is shorter than [`MIN_KEY_LEN`].
    #[error("requestState key must be at least {MIN_KEY_LEN} bytes")]
    ShortKey,
    /// Not of the `v1.<payload>.<mac>` shape, or undecodable.
    #[error("malformed requestState")]
    Malformed,
    /// The MAC does not verify (tampered or another key).
    #[error("requestState signature mismatch")]
    Mac,
    /// Past its expiry.
    #[error("requestState expired")]
    Expired,
    /// Minted for another caller or target.
    #[error("requestState bound to another request")]
    Bind,
}

/// Signs and verifies `requestState` tokens with one HMAC key.
#[derive(Clone)]
pub struct StateSigner {
    key: Vec<u8>,
}

impl std::fmt::Debug for StateSigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StateSigner { key: <redacted> }")
    }
}

impl StateSigner {
    /// A signer with `key` (≥ 32 bytes).
    pub fn new(key: &[u8]) -> Result<Self, StateError> {
        if key.len() < MIN_KEY_LEN {
            return Err(StateError::ShortKey);
        }
        Ok(StateSigner { key: key.to_vec() })
    }

    fn mac(&self, parts: &[&[u8]]) -> HmacSha256 {
        // HMAC accepts keys of any length.
        let mut mac = HmacSha256::new_from_slice(&self.key).expect("HMAC takes any key length");
        for p in parts {
            mac.update(p);
        }
        mac
    }

    fn bind_tag(&self, binding: &str) -> String {
        let tag = self.mac(&[b"mcp-fleet/bind\0", binding.as_bytes()]).finalize().into_bytes();
        URL_SAFE_NO_PAD.encode(&tag[..16])
    }

    /// Sign `payload`, valid until `now + ttl_secs`, bound to `binding`.
    pub fn sign(&self, payload: &Value, binding: &str, now_secs: u64, ttl_secs: u64) -> String {
        let body = json!({"p": payload, "exp": now_secs + ttl_secs, "b": self.bind_tag(binding)});
        let middle = URL_SAFE_NO_PAD.encode(crate::jsonrpc::value_bytes(&body));
        let signed = format!("v1.{middle}");
        let mac = self.mac(&[signed.as_bytes()]).finalize().into_bytes();
        format!("{signed}.{}", URL_SAFE_NO_PAD.encode(mac))
    }

    /// Verify a token: shape → MAC (constant time) → JSON → expiry → binding.
    pub fn verify(&self, token: &str, binding: &str, now_secs: u64) -> Result<Value, StateError> {
        let (signed, mac_b64) = token.rsplit_once('.').ok_or(StateError::Malformed)?;
        let middle = signed.strip_prefix("v1.").ok_or(StateError::Malformed)?;
        let mac = URL_SAFE_NO_PAD.decode(mac_b64).map_err(|_| StateError::Malformed)?;
        self.mac(&[signed.as_bytes()]).verify_slice(&mac).map_err(|_| StateError::Mac)?;
        let body: Value = URL_SAFE_NO_PAD
            .decode(middle)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .ok_or(StateError::Malformed)?;
        let exp = body.get("exp").and_then(Value::as_u64).ok_or(StateError::Malformed)?;
        if now_secs > exp + CLOCK_SKEW_SECS {
            return Err(StateError::Expired);
        }
        let tag = body.get("b").and_then(Value::as_str).ok_or(StateError::Bind)?;
        let expected = self.bind_tag(binding);
        let same =
            tag.len() == expected.len() && tag.bytes().zip(expected.bytes()).fold(0u8, |d, (a, b)| d | (a ^ b)) == 0;
        if !same {
            return Err(StateError::Bind);
        }
        // Every token this signer made has a payload (possibly `null`); one without is not ours.
        body.get("p").cloned().ok_or(StateError::Malformed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &[u8] = b"0123456789abcdef0123456789abcdef";

    #[test]
    fn round_trips_and_rejects_tampering_expiry_and_rebinding() {
        let s = StateSigner::new(KEY).unwrap();
        let token = s.sign(&json!({"step": 1}), "tools/call:x", 1000, 60);
        assert_eq!(s.verify(&token, "tools/call:x", 1010).unwrap(), json!({"step": 1}));
        assert!(s.verify(&format!("{token}-TAMPERED"), "tools/call:x", 1010).is_err());
        let mut flipped = token.clone().into_bytes();
        flipped[5] = if flipped[5] == b'A' { b'B' } else { b'A' };
        assert_eq!(s.verify(std::str::from_utf8(&flipped).unwrap(), "tools/call:x", 1010), Err(StateError::Mac));
        assert_eq!(s.verify(&token, "tools/call:x", 1000 + 60 + CLOCK_SKEW_SECS + 1), Err(StateError::Expired));
        assert_eq!(s.verify(&token, "tools/call:y", 1010), Err(StateError::Bind));
        let other = StateSigner::new(b"another key of at least thirty-two bytes").unwrap();
        assert_eq!(other.verify(&token, "tools/call:x", 1010), Err(StateError::Mac));
        assert_eq!(StateSigner::new(b"short").unwrap_err(), StateError::ShortKey);
    }
}
