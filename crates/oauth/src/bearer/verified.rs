//! [`VerifiedTokens`]: tokens already verified, so a client that sends the same bearer token on
//! every request pays for one signature check, not one per request.
//!
//! Keyed by the token's SHA-256 (the token itself is never kept), an entry holds the principal
//! it produced and is trusted only while:
//! - the token has not expired (its `exp`, without the leeway verification allowed);
//! - the key set it was verified with is still the one in use
//!   ([`JwksCache::is_current`](crate::jwks::JwksCache::is_current)): when a fetch replaces it — the
//!   scheduled refresh, or a refetch for an unknown key — every entry is verified again, so a
//!   key the issuer withdrew stops being trusted exactly when it would have without the cache;
//!   and a key set past the hard maximum age trusts nothing.
//!
//! Bounded: at [`BearerConfig::verified_token_cache`](super::BearerConfig::verified_token_cache)
//! entries, expired ones are dropped first and then, if still full, the new token is simply not
//! remembered (verified each time). A full cache costs what no cache does, never memory.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

use mcp_fleet_server::Principal;
use sha2::{Digest, Sha256};

use crate::jwks::Loaded;

/// A token's SHA-256.
pub(crate) type TokenDigest = [u8; 32];

/// The digest of `token`.
pub(crate) fn digest(token: &str) -> TokenDigest {
    Sha256::digest(token.as_bytes()).into()
}

/// One verified token.
#[derive(Debug)]
struct Entry {
    principal: Principal,
    /// Its `exp`, seconds since the Unix epoch.
    expires_at: u64,
    /// The key set it was verified with.
    keys: Arc<Loaded>,
}

/// The cache (see the module docs).
#[derive(Debug)]
pub(crate) struct VerifiedTokens {
    capacity: usize,
    /// A std mutex held for a lookup or an insert, never across `.await`.
    entries: Mutex<HashMap<TokenDigest, Entry>>,
}

impl VerifiedTokens {
    /// A cache of at most `capacity` tokens (0: none is remembered).
    pub(crate) fn new(capacity: usize) -> Self {
        VerifiedTokens { capacity, entries: Mutex::new(HashMap::new()) }
    }

    /// The principal of the token with `digest`, if it was verified, has not expired, and
    /// `current` says its key set is still in use.
    pub(crate) fn get(&self, digest: &TokenDigest, current: impl Fn(&Arc<Loaded>) -> bool) -> Option<Principal> {
        let mut entries = self.lock();
        let entry = entries.get(digest)?;
        if entry.expires_at > now_secs() && current(&entry.keys) {
            return Some(entry.principal.clone());
        }
        entries.remove(digest);
        None
    }

    /// Remember that the token with `digest` verified to `principal` with `keys`, until
    /// `expires_at` (its `exp`).
    pub(crate) fn insert(&self, digest: TokenDigest, principal: Principal, expires_at: u64, keys: Arc<Loaded>) {
        if self.capacity == 0 {
            return;
        }
        let mut entries = self.lock();
        if entries.len() >= self.capacity {
            let now = now_secs();
            entries.retain(|_, e| e.expires_at > now);
        }
        if entries.len() < self.capacity {
            entries.insert(digest, Entry { principal, expires_at, keys });
        }
    }

    /// How many tokens are remembered.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.lock().len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<TokenDigest, Entry>> {
        // Short critical sections that do not panic.
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

fn now_secs() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jwks::KeySet;

    fn keys() -> Arc<Loaded> {
        Loaded::now(KeySet::from_jwks(br#"{"keys": []}"#).unwrap())
    }

    #[test]
    fn bounded_expiring_and_tied_to_its_key_set() {
        let (cache, keys) = (VerifiedTokens::new(2), keys());
        let principal = Principal::new("u", None);
        let later = now_secs() + 600;
        cache.insert(digest("a"), principal.clone(), later, keys.clone());
        cache.insert(digest("b"), principal.clone(), now_secs() - 1, keys.clone());
        cache.insert(digest("c"), principal.clone(), later, keys.clone());
        assert_eq!(cache.len(), 2, "the expired entry made room for c");
        cache.insert(digest("d"), principal.clone(), later, keys.clone());
        assert_eq!(cache.len(), 2, "full of live entries: d is not remembered");
        let is = |k: &Arc<Loaded>| Arc::ptr_eq(k, &keys);
        assert_eq!(cache.get(&digest("a"), is), Some(principal.clone()));
        assert_eq!(cache.get(&digest("d"), is), None);
        let other = self::keys();
        assert_eq!(cache.get(&digest("a"), |k: &Arc<Loaded>| Arc::ptr_eq(k, &other)), None, "another key set");
        assert_eq!(cache.len(), 1, "and the stale entry is gone");
        let off = VerifiedTokens::new(0);
        off.insert(digest("a"), principal, later, keys);
        assert_eq!(off.len(), 0);
    }
}
