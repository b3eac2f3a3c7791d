//! Sealed values: a few bytes — a 2025-era GET stream's position in the bus's history, as its
//! SSE event id — made opaque and tamper-evident with the `requestState` key ring
//! ([`StateSigner`]), so every replica holding the ring reads them back and a client learns
//! nothing of what is inside, nor can change it.
//!
//! Wire form: `base64url(nonce ‖ ciphertext ‖ tag)`. The ciphertext is the value XORed with a
//! keystream of HMAC-SHA256 blocks over the nonce and a block counter (HMAC is a PRF; a random
//! 16-byte nonce does not repeat in practice); the tag is a 16-byte HMAC over the binding, the
//! nonce and the ciphertext (encrypt-then-MAC), so a changed bit makes the value unreadable
//! instead of another value. Both are domain-separated from `requestState`'s MACs. The ring's
//! first key seals, every key opens (rotate as for `requestState`). The caller draws the nonce:
//! this crate has no randomness.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::Mac as _;

use crate::state::{StateKey, StateSigner};

/// Bytes of the nonce the caller draws for each sealing.
pub const NONCE_LEN: usize = 16;
const TAG_LEN: usize = 16;
const STREAM_LABEL: &[u8] = b"mcp-fleet/sealed/stream\0";
const TAG_LABEL: &[u8] = b"mcp-fleet/sealed/tag\0";

impl StateSigner {
    /// Seal `plain` for `binding` (what it may be opened for: the same binding is needed to
    /// open it) with the ring's first key and a fresh random `nonce`.
    pub fn seal(&self, plain: &[u8], binding: &str, nonce: [u8; NONCE_LEN]) -> String {
        let key = &self.keys()[0];
        let mut out = Vec::with_capacity(NONCE_LEN + plain.len() + TAG_LEN);
        out.extend_from_slice(&nonce);
        out.extend_from_slice(plain);
        keystream_xor(key, &nonce, &mut out[NONCE_LEN..]);
        let tag = tag(key, binding, &out).finalize().into_bytes();
        out.extend_from_slice(&tag[..TAG_LEN]);
        URL_SAFE_NO_PAD.encode(out)
    }

    /// The value `sealed` holds, if a key of the ring sealed it for `binding` and nothing was
    /// changed since (the tag compared in constant time); `None` otherwise.
    pub fn open(&self, sealed: &str, binding: &str) -> Option<Vec<u8>> {
        let bytes = URL_SAFE_NO_PAD.decode(sealed).ok()?;
        let body_len = bytes.len().checked_sub(TAG_LEN).filter(|n| *n >= NONCE_LEN)?;
        let (body, tag_bytes) = bytes.split_at(body_len);
        let key = self.keys().iter().find(|k| tag(k, binding, body).verify_truncated_left(tag_bytes).is_ok())?;
        let (nonce, ciphertext) = body.split_at(NONCE_LEN);
        let mut plain = ciphertext.to_vec();
        keystream_xor(key, nonce, &mut plain);
        Some(plain)
    }
}

/// XOR `data` with the keystream of `nonce`: block `i` is HMAC(key, label ‖ nonce ‖ i).
fn keystream_xor(key: &StateKey, nonce: &[u8], data: &mut [u8]) {
    for (i, chunk) in data.chunks_mut(32).enumerate() {
        let counter = u32::try_from(i).unwrap_or(u32::MAX).to_be_bytes();
        let block = key.mac(&[STREAM_LABEL, nonce, &counter]).finalize().into_bytes();
        chunk.iter_mut().zip(block).for_each(|(b, k)| *b ^= k);
    }
}

/// The MAC over the binding (length-prefixed, so binding and body cannot trade bytes), the
/// nonce and the ciphertext.
fn tag(key: &StateKey, binding: &str, nonce_and_ciphertext: &[u8]) -> hmac::Hmac<sha2::Sha256> {
    let len = (binding.len() as u64).to_be_bytes();
    key.mac(&[TAG_LABEL, &len, binding.as_bytes(), nonce_and_ciphertext])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ring(key: &[u8]) -> StateSigner {
        StateSigner::new(key).unwrap()
    }

    #[test]
    fn opens_what_it_sealed_and_shows_nothing_of_it() {
        let s = ring(b"0123456789abcdef0123456789abcdef");
        let plain = [0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 1, 44];
        let a = s.seal(&plain, "scope-a", [1; NONCE_LEN]);
        let b = s.seal(&plain, "scope-a", [2; NONCE_LEN]);
        assert_ne!(a, b, "a fresh nonce, another id");
        assert_eq!(s.open(&a, "scope-a").as_deref(), Some(&plain[..]));
        assert_eq!(s.open(&b, "scope-a").as_deref(), Some(&plain[..]));
        let raw = URL_SAFE_NO_PAD.decode(&a).unwrap();
        assert_ne!(&raw[NONCE_LEN..NONCE_LEN + plain.len()], &plain[..], "the value is not in the clear");
        assert_eq!(s.open(&a, "scope-b"), None, "bound to its binding");
        assert_eq!(ring(b"another key of at least thirty-two bytes").open(&a, "scope-a"), None);
        assert_eq!(s.open("7-44", "scope-a"), None);
        assert_eq!(s.open("", "scope-a"), None);
        assert_eq!(s.open(&URL_SAFE_NO_PAD.encode([0; NONCE_LEN + TAG_LEN - 1]), "scope-a"), None);
    }

    #[test]
    fn any_changed_bit_makes_it_unreadable() {
        let s = ring(&[3; 32]);
        let sealed = URL_SAFE_NO_PAD.decode(s.seal(&[9; 16], "b", [5; NONCE_LEN])).unwrap();
        for byte in 0..sealed.len() {
            for bit in 0..8 {
                let mut changed = sealed.clone();
                changed[byte] ^= 1 << bit;
                assert_eq!(s.open(&URL_SAFE_NO_PAD.encode(&changed), "b"), None, "byte {byte} bit {bit}");
            }
        }
    }

    #[test]
    fn a_ring_opens_with_any_of_its_keys_and_seals_longer_values() {
        let (old, new) = (StateKey::new(&[1; 32]).unwrap(), StateKey::new(&[2; 32]).unwrap());
        let before = StateSigner::with_keys(vec![old.clone()]).unwrap();
        let during = StateSigner::with_keys(vec![new, old]).unwrap();
        let long: Vec<u8> = (0..100).collect();
        let sealed = before.seal(&long, "b", [7; NONCE_LEN]);
        assert_eq!(during.open(&sealed, "b"), Some(long.clone()));
        assert_eq!(before.open(&during.seal(&long, "b", [7; NONCE_LEN]), "b"), None, "the new key seals");
    }
}
