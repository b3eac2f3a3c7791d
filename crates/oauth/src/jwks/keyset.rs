//! One fetched JWKS as verification keys, and the choice of key for a token: pure, no I/O.
//!
//! Only asymmetric signature keys are kept: `oct` (shared-secret) keys, keys marked for
//! encryption and key types `jsonwebtoken` does not know are skipped one by one, so a single
//! odd entry does not cost the whole set. A key is used only for algorithms of its own type
//! (RSA for RS*/PS*, the matching curve for ES256/ES384, Ed25519 for EdDSA) and, if it
//! declares an `alg`, for that algorithm only (RFC 7517 §4.4).

use std::collections::HashMap;
use std::sync::Arc;

use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk, PublicKeyUse};
use jsonwebtoken::{Algorithm, DecodingKey};
use serde_json::Value;

use super::KeyError;

/// A usable key.
#[derive(Debug)]
struct VerifyKey {
    key: Arc<DecodingKey>,
    kind: KeyKind,
    /// The `alg` the JWK declares, if any.
    alg: Option<Algorithm>,
}

/// The key type, with the curve where it matters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum KeyKind {
    Rsa,
    P256,
    P384,
    Ed25519,
}

impl KeyKind {
    fn of(jwk: &Jwk) -> Option<KeyKind> {
        match &jwk.algorithm {
            AlgorithmParameters::RSA(_) => Some(KeyKind::Rsa),
            AlgorithmParameters::EllipticCurve(ec) => match ec.curve {
                EllipticCurve::P256 => Some(KeyKind::P256),
                EllipticCurve::P384 => Some(KeyKind::P384),
                _ => None,
            },
            AlgorithmParameters::OctetKeyPair(okp) => (okp.curve == EllipticCurve::Ed25519).then_some(KeyKind::Ed25519),
            // `oct` keys are shared secrets: never a verification key for a resource server.
            AlgorithmParameters::OctetKey(_) | AlgorithmParameters::Other(_) => None,
            _ => None,
        }
    }

    fn verifies(self, alg: Algorithm) -> bool {
        use Algorithm as A;
        match self {
            KeyKind::Rsa => matches!(alg, A::RS256 | A::RS384 | A::RS512 | A::PS256 | A::PS384 | A::PS512),
            KeyKind::P256 => alg == A::ES256,
            KeyKind::P384 => alg == A::ES384,
            KeyKind::Ed25519 => alg == A::EdDSA,
        }
    }
}

impl VerifyKey {
    fn verifies(&self, alg: Algorithm) -> bool {
        self.kind.verifies(alg) && self.alg.is_none_or(|declared| declared == alg)
    }
}

/// The usable keys of one JWKS.
#[derive(Debug, Default)]
pub(crate) struct KeySet {
    by_kid: HashMap<String, VerifyKey>,
    /// Keys without a `kid`.
    anonymous: Vec<VerifyKey>,
}

impl KeySet {
    /// Parse a JWKS document (`{"keys": [...]}`); entries that are not usable keys are skipped.
    pub(crate) fn from_jwks(document: &[u8]) -> Result<KeySet, String> {
        #[derive(serde::Deserialize)]
        struct Jwks {
            keys: Vec<Value>,
        }
        let jwks: Jwks = serde_json::from_slice(document).map_err(|e| format!("not a JWKS: {e}"))?;
        let mut set = KeySet::default();
        for entry in jwks.keys {
            let Some((kid, key)) = usable_key(entry) else { continue };
            match kid {
                Some(kid) => {
                    set.by_kid.insert(kid, key);
                }
                None => set.anonymous.push(key),
            }
        }
        Ok(set)
    }

    /// Number of usable keys.
    pub(crate) fn len(&self) -> usize {
        self.by_kid.len() + self.anonymous.len()
    }

    /// Whether no key is usable.
    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The key for a token with `kid` signed with `alg`. A token without a `kid` is verified
    /// with the only key able to verify `alg`; with several candidates it is refused, not
    /// tried against each.
    pub(crate) fn find(&self, kid: Option<&str>, alg: Algorithm) -> Result<Arc<DecodingKey>, KeyError> {
        if let Some(kid) = kid {
            return match self.by_kid.get(kid) {
                Some(key) if key.verifies(alg) => Ok(key.key.clone()),
                Some(_) => Err(KeyError::Mismatch),
                None => Err(KeyError::Unknown),
            };
        }
        let mut candidates = self.by_kid.values().chain(&self.anonymous).filter(|k| k.verifies(alg));
        match (candidates.next(), candidates.next()) {
            (Some(only), None) => Ok(only.key.clone()),
            _ => Err(KeyError::Unknown),
        }
    }
}

/// One JWKS entry as a verification key, or `None` (logged) if it is not one.
fn usable_key(entry: Value) -> Option<(Option<String>, VerifyKey)> {
    let jwk: Jwk = serde_json::from_value(entry)
        .inspect_err(|error| tracing::debug!(%error, "JWKS entry skipped: not a JWK"))
        .ok()?;
    if jwk.common.public_key_use.as_ref().is_some_and(|u| *u != PublicKeyUse::Signature) {
        return None;
    }
    let kind = KeyKind::of(&jwk)?;
    let alg = match jwk.common.key_algorithm {
        // A declared `alg` we cannot map (an encryption algorithm, say): not a signing key.
        Some(declared) => Some(Algorithm::try_from(declared).ok()?),
        None => None,
    };
    let key = DecodingKey::from_jwk(&jwk)
        .inspect_err(|error| tracing::debug!(%error, "JWKS entry skipped: unusable key"))
        .ok()?;
    Some((jwk.common.key_id, VerifyKey { key: Arc::new(key), kind, alg }))
}
