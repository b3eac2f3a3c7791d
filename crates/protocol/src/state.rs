//! Signed MRTR `requestState` (spec digest §16.3; the 2026-07-28 spec: servers MUST verify its
//! integrity): integrity-protected, expiring, bound to the caller and target, and verifiable by
//! any replica holding the key that signed it.
//!
//! Wire form: `v2.<kid>.<base64url(JSON {"p": payload, "exp": unix-seconds, "b": bind-tag, "r"?: revision})>.<base64url(HMAC-SHA256)>`,
//! the MAC over everything before its `.`. `kid` names the key ([`StateKey::kid`]: a
//! fingerprint, so every replica holding the same key derives the same id), so a replica that
//! does not hold it can say so ([`StateError::UnknownKey`]) instead of reporting tampering. A
//! [`StateSigner`] holds a key ring: the first key signs, every key verifies — rotate by adding
//! the new key first on every replica, then dropping the old one once its tokens expired.
//! Tokens of the earlier `v1.<body>.<mac>` form (no kid) are verified against every key.
//! `r`, when present, is the definition revision of what the state was minted for (a tool, a
//! prompt, a resource): the verifier compares it with the current one ([`Verified::revision`]).
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
    /// Signed with a key this signer does not hold (its id: [`key_id`]): another replica's
    /// per-process key, or a key rotated out or not yet rotated in here.
    #[error("requestState signed with a key this replica does not hold")]
    UnknownKey,
    /// A key ring without keys, or two keys with one id.
    #[error("a requestState key ring needs at least one key, each once")]
    KeyRing,
}

/// Prefix of the ids of keys made with [`StateKey::ephemeral`].
pub const EPHEMERAL_KID_PREFIX: &str = "ephemeral-";

/// One HMAC key of a [`StateSigner`]'s ring, with its id.
#[derive(Clone)]
pub struct StateKey {
    kid: String,
    key: Vec<u8>,
}

impl std::fmt::Debug for StateKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "StateKey {{ kid: {:?}, key: <redacted> }}", self.kid)
    }
}

impl StateKey {
    /// A configured key (≥ [`MIN_KEY_LEN`] bytes), its id a fingerprint of it: the first 8
    /// bytes of a domain-separated SHA-256, base64url (11 characters). Every replica holding
    /// the key derives the same id; the id reveals nothing usable about the key.
    pub fn new(key: &[u8]) -> Result<Self, StateError> {
        if key.len() < MIN_KEY_LEN {
            return Err(StateError::ShortKey);
        }
        Ok(StateKey { kid: fingerprint(key), key: key.to_vec() })
    }

    /// A key made up by this process (from 32 random bytes the caller draws), its id marked
    /// [`EPHEMERAL_KID_PREFIX`] so a replica that gets a token it signed can tell the operator
    /// that no shared key is configured.
    pub fn ephemeral(random: [u8; 32]) -> Self {
        StateKey { kid: format!("{EPHEMERAL_KID_PREFIX}{}", fingerprint(&random)), key: random.to_vec() }
    }

    /// The key's id, as tokens it signs carry it.
    pub fn kid(&self) -> &str {
        &self.kid
    }

    pub(crate) fn mac(&self, parts: &[&[u8]]) -> HmacSha256 {
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
}

fn fingerprint(key: &[u8]) -> String {
    use sha2::Digest as _;
    let digest = Sha256::new().chain_update(b"mcp-fleet/request-state-kid\0").chain_update(key).finalize();
    URL_SAFE_NO_PAD.encode(&digest[..8])
}

/// The key id a `v2` token names, read without verifying anything (for error messages and
/// logs). `None` for other shapes.
pub fn key_id(token: &str) -> Option<&str> {
    let rest = token.strip_prefix("v2.")?;
    let (kid, _) = rest.split_once('.')?;
    (!kid.is_empty() && kid.len() <= 64 && kid.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_".contains(&b)))
        .then_some(kid)
}

/// Signs `requestState` tokens with the first key of its ring and verifies them with any.
#[derive(Clone, Debug)]
pub struct StateSigner {
    keys: Vec<StateKey>,
}

impl StateSigner {
    /// A signer with the one key `key` (≥ 32 bytes).
    pub fn new(key: &[u8]) -> Result<Self, StateError> {
        Self::with_keys(vec![StateKey::new(key)?])
    }

    /// A signer with a key ring: `keys[0]` signs, every key verifies. Needs at least one key,
    /// with distinct ids.
    pub fn with_keys(keys: Vec<StateKey>) -> Result<Self, StateError> {
        let distinct = keys.iter().enumerate().all(|(i, k)| keys[..i].iter().all(|o| o.kid != k.kid));
        if keys.is_empty() || !distinct {
            return Err(StateError::KeyRing);
        }
        Ok(StateSigner { keys })
    }

    /// The ring, its signing key first (for [`crate::sealed`]).
    pub(crate) fn keys(&self) -> &[StateKey] {
        &self.keys
    }

    /// The id of the key that signs.
    pub fn signing_kid(&self) -> &str {
        &self.keys[0].kid
    }

    /// Sign `payload`, valid until `now + ttl_secs`, bound to `binding`.
    pub fn sign(&self, payload: &Value, binding: &str, now_secs: u64, ttl_secs: u64) -> String {
        self.sign_revised(payload, binding, None, now_secs, ttl_secs)
    }

    /// [`sign`](Self::sign), also carrying `revision`: the definition revision of what the
    /// state was minted for, which [`verify_revised`](Self::verify_revised) hands back.
    pub fn sign_revised(
        &self,
        payload: &Value,
        binding: &str,
        revision: Option<&str>,
        now_secs: u64,
        ttl_secs: u64,
    ) -> String {
        let key = &self.keys[0];
        let mut body = json!({"p": payload, "exp": now_secs.saturating_add(ttl_secs), "b": key.bind_tag(binding)});
        if let Some(revision) = revision {
            body["r"] = json!(revision);
        }
        let middle = URL_SAFE_NO_PAD.encode(crate::jsonrpc::value_bytes(&body));
        let signed = format!("v2.{}.{middle}", key.kid);
        let mac = key.mac(&[signed.as_bytes()]).finalize().into_bytes();
        format!("{signed}.{}", URL_SAFE_NO_PAD.encode(mac))
    }

    /// Verify a token: shape → key by id → MAC (constant time) → JSON → expiry → binding.
    pub fn verify(&self, token: &str, binding: &str, now_secs: u64) -> Result<Value, StateError> {
        self.verify_revised(token, binding, now_secs).map(|v| v.payload)
    }

    /// [`verify`](Self::verify), also returning the revision the token was minted with.
    pub fn verify_revised(&self, token: &str, binding: &str, now_secs: u64) -> Result<Verified, StateError> {
        let (signed, mac_b64) = token.rsplit_once('.').ok_or(StateError::Malformed)?;
        let mac = URL_SAFE_NO_PAD.decode(mac_b64).map_err(|_| StateError::Malformed)?;
        let (key, middle) = if let Some(rest) = signed.strip_prefix("v2.") {
            let (kid, middle) = rest.split_once('.').ok_or(StateError::Malformed)?;
            let key = self.keys.iter().find(|k| k.kid == kid).ok_or(StateError::UnknownKey)?;
            key.mac(&[signed.as_bytes()]).verify_slice(&mac).map_err(|_| StateError::Mac)?;
            (key, middle)
        } else {
            let middle = signed.strip_prefix("v1.").ok_or(StateError::Malformed)?;
            let key = self.keys.iter().find(|k| k.mac(&[signed.as_bytes()]).verify_slice(&mac).is_ok());
            (key.ok_or(StateError::Mac)?, middle)
        };
        let body: Value = URL_SAFE_NO_PAD
            .decode(middle)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .ok_or(StateError::Malformed)?;
        let exp = body.get("exp").and_then(Value::as_u64).ok_or(StateError::Malformed)?;
        if now_secs > exp.saturating_add(CLOCK_SKEW_SECS) {
            return Err(StateError::Expired);
        }
        let tag = body.get("b").and_then(Value::as_str).ok_or(StateError::Bind)?;
        let expected = key.bind_tag(binding);
        let same =
            tag.len() == expected.len() && tag.bytes().zip(expected.bytes()).fold(0u8, |d, (a, b)| d | (a ^ b)) == 0;
        if !same {
            return Err(StateError::Bind);
        }
        // Every token this signer made has a payload (possibly `null`); one without is not ours.
        let payload = body.get("p").cloned().ok_or(StateError::Malformed)?;
        let revision = body.get("r").and_then(Value::as_str).map(str::to_owned);
        Ok(Verified { payload, revision })
    }
}

/// A verified token's contents.
#[derive(Debug, Clone, PartialEq)]
pub struct Verified {
    /// The state the server minted.
    pub payload: Value,
    /// The definition revision it was minted for (`None`: minted without one, e.g. by an
    /// older version).
    pub revision: Option<String>,
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
        flipped[20] = if flipped[20] == b'A' { b'B' } else { b'A' }; // inside the body
        assert_eq!(s.verify(std::str::from_utf8(&flipped).unwrap(), "tools/call:x", 1010), Err(StateError::Mac));
        assert_eq!(s.verify(&token, "tools/call:x", 1000 + 60 + CLOCK_SKEW_SECS + 1), Err(StateError::Expired));
        assert_eq!(s.verify(&token, "tools/call:y", 1010), Err(StateError::Bind));
        let other = StateSigner::new(b"another key of at least thirty-two bytes").unwrap();
        assert_eq!(other.verify(&token, "tools/call:x", 1010), Err(StateError::UnknownKey));
        assert_eq!(StateSigner::new(b"short").unwrap_err(), StateError::ShortKey);
    }

    #[test]
    fn tokens_name_their_key_and_a_ring_verifies_with_any_of_its_keys() {
        let (old, new) = (StateKey::new(KEY).unwrap(), StateKey::new(&[7; 40]).unwrap());
        assert_eq!(old.kid(), StateKey::new(KEY).unwrap().kid(), "the id is derived from the key");
        assert_ne!(old.kid(), new.kid());
        let before = StateSigner::with_keys(vec![old.clone()]).unwrap();
        let token = before.sign(&json!(1), "b", 1000, 60);
        assert_eq!(key_id(&token), Some(old.kid()));
        // Rotation: the new key signs, the old one still verifies what it signed.
        let during = StateSigner::with_keys(vec![new.clone(), old.clone()]).unwrap();
        assert_eq!(during.verify(&token, "b", 1010), Ok(json!(1)));
        let fresh = during.sign(&json!(2), "b", 1000, 60);
        assert_eq!(key_id(&fresh), Some(new.kid()));
        assert_eq!(before.verify(&fresh, "b", 1010), Err(StateError::UnknownKey));
        // A forged token naming a held key with another key's MAC is tampering, not unknown.
        let forged = fresh.replacen(new.kid(), old.kid(), 1);
        assert_eq!(during.verify(&forged, "b", 1010), Err(StateError::Mac));
        assert_eq!(StateSigner::with_keys(vec![]).unwrap_err(), StateError::KeyRing);
        assert_eq!(StateSigner::with_keys(vec![old.clone(), old]).unwrap_err(), StateError::KeyRing);
        let ephemeral = StateKey::ephemeral([9; 32]);
        assert!(ephemeral.kid().starts_with(EPHEMERAL_KID_PREFIX), "{ephemeral:?}");
        assert!(!format!("{ephemeral:?}").contains("9, 9"), "the key is redacted");
    }

    #[test]
    fn a_revision_rides_signed_and_comes_back() {
        let s = StateSigner::new(KEY).unwrap();
        let token = s.sign_revised(&json!(1), "b", Some("r1"), 1000, 60);
        let verified = s.verify_revised(&token, "b", 1010).unwrap();
        assert_eq!((verified.payload, verified.revision.as_deref()), (json!(1), Some("r1")));
        assert_eq!(s.verify_revised(&s.sign(&json!(1), "b", 1000, 60), "b", 1010).unwrap().revision, None);
    }

    #[test]
    fn v1_tokens_of_the_previous_form_still_verify() {
        let key = StateKey::new(KEY).unwrap();
        let body = json!({"p": {"step": 1}, "exp": 1060, "b": key.bind_tag("b")});
        let signed = format!("v1.{}", URL_SAFE_NO_PAD.encode(crate::jsonrpc::value_bytes(&body)));
        let mac = key.mac(&[signed.as_bytes()]).finalize().into_bytes();
        let token = format!("{signed}.{}", URL_SAFE_NO_PAD.encode(mac));
        let ring = StateSigner::with_keys(vec![StateKey::new(&[1; 32]).unwrap(), key]).unwrap();
        assert_eq!(ring.verify(&token, "b", 1010), Ok(json!({"step": 1})));
        assert_eq!(key_id(&token), None);
    }
}
