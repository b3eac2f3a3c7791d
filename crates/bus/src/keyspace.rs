//! [`Keyspace`]: the one contract for fleet-wide shared state with expiry — keyed records with a
//! time to live, compare-and-set on a revision, and counters — that every backend implements
//! once (a map with deadlines in memory, keys with `PEXPIRE` and Lua scripts in Redis, a
//! JetStream key-value bucket whose records carry their TTLs in NATS).
//!
//! Sessions of the 2025 protocol era, the replies of server-to-client requests, and any other
//! feature that needs state shared by the fleet take a keyspace of their own from
//! [`ServerEventBus::keyspace`](crate::ServerEventBus::keyspace) instead of a store of their
//! own.
//!
//! # Contract
//!
//! - **A TTL per handle**, fixed when it is opened: every write (create, put,
//!   compare-and-set, increment) makes the key live for the writing handle's `ttl` from then,
//!   measured on the broker's clock where there is a broker. A key not written for that long
//!   is gone: `get` answers `None`, and `create` succeeds again. Expiry may be late by the
//!   backend's granularity (JetStream's is about a second), never early. Nodes that open a
//!   keyspace with different TTLs (a rolling deploy that changes one) share its records, each
//!   living by the TTL of its last writer.
//! - **Revisions** increase with every write of a key; a key created anew (after a delete or an
//!   expiry) may start again from any value, but never repeats the revision it had when it was
//!   read, so a compare-and-set against a stale read fails.
//! - **Compare-and-set** replaces a key only while its revision is still the one given; it
//!   answers `None` (and changes nothing) when the key changed or is gone.
//! - **Counters** are keys holding a signed 64-bit integer as decimal ASCII (`b"-42"`: what
//!   `get` reads and what `put` may store), changed atomically by `increment`; an absent counter
//!   counts from zero. Incrementing a key that holds anything else, or past the `i64` range, is
//!   [`BusError::Backend`] and changes nothing.
//! - **Slot sets** count what holds a share of a quota: a slot set under a key holds members
//!   (the ids of the records that hold a slot), **each with its own expiry**. `hold_slot` drops
//!   the expired members, then renews the member if it is there, or adds it if fewer than the
//!   limit are live, in one atomic step; `release_slot` removes it. So a quota follows the
//!   records it counts: a record that expires without being ended gives its slot back when its
//!   slot expires, and renewing the record renews its slot. A slot's TTL is from 1 ms to the
//!   keyspace's TTL (the set itself lives as long as its longest slot); members take the key
//!   alphabet. `live_slots` counts the live members. Slot sets are a namespace of their own: the key `k` of a slot set and the record
//!   `k` are unrelated.
//! - Errors are [`BusError`]: the broker unreachable, refusing, or answering too late. A failed
//!   write may or may not have happened (the caller reads again to know).
//! - Keys are at most [`MAX_KEY_LEN`] bytes of `[A-Za-z0-9_=.-]`, neither starting nor ending
//!   with `.` nor holding `..` (safe as a Redis key suffix and as JetStream subject tokens);
//!   names as in [`check_name`]; a TTL from 1 ms to [`MAX_TTL`]. Anything else is
//!   [`BusError::Config`]. Values are opaque bytes (empty allowed).
//!
//! # Backends
//!
//! - **Memory** ([`MemoryBus`](crate::MemoryBus)): every clone of one bus shares its keyspaces;
//!   expiry is exact (on the process's clock).
//! - **Redis**: one hash `{v, r}` per key with `PEXPIRE`, every write one Lua script, revisions
//!   from one counter per keyspace that never expires; expiry on Redis's clock, to the
//!   millisecond. A slot set is a sorted set scored by expiry (`<prefix>#slots.<key>`), pruned
//!   and changed by one script on Redis's clock.
//! - **NATS JetStream**: one key-value bucket per keyspace; each record carries its writer's
//!   TTL in a header (servers before 2.11 have no per-message TTL) and is live until the
//!   broker's timestamp of the write plus that TTL; the bucket's `max_age`, the longest TTL
//!   any node opened it with, sweeps what is long dead. Revisions are its stream sequences.
//!   Increments are read-then-write, combined per node and counter so that contenders are the
//!   nodes, not the requests. Core NATS stores nothing: opening a keyspace there is
//!   [`BusError::Config`]. A slot set is one entry (`slots/<key>`, a `/` no record key holds)
//!   mapping members to expiries on the writing node's wall clock, changed by
//!   compare-and-set.
//!
use std::time::Duration;

use crate::bus::{BoxFuture, BusError};

/// The longest key a keyspace takes.
pub const MAX_KEY_LEN: usize = 200;

/// The longest TTL a keyspace takes (a year): beyond it the state is not "with expiry".
pub const MAX_TTL: Duration = Duration::from_secs(365 * 24 * 60 * 60);

/// A record read from a keyspace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// The stored bytes.
    pub value: Vec<u8>,
    /// The key's revision at this read (see the module docs).
    pub revision: u64,
}

/// Keyed records with one TTL, compare-and-set and counters, shared by every node of the fleet
/// (see the module docs for the contract).
pub trait Keyspace: Send + Sync + 'static {
    /// The record under `key`, if it is live.
    fn get<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<Record>, BusError>>;

    /// Store `value` under `key` only if the key is absent (or expired); answers its revision,
    /// or `None` if the key already exists.
    fn create<'a>(&'a self, key: &'a str, value: Vec<u8>) -> BoxFuture<'a, Result<Option<u64>, BusError>>;

    /// Store `value` under `key` whatever was there; answers the new revision.
    fn put<'a>(&'a self, key: &'a str, value: Vec<u8>) -> BoxFuture<'a, Result<u64, BusError>>;

    /// Replace `key` with `value` only while its revision is `expected`; answers the new
    /// revision, or `None` when the key changed since or is gone.
    fn compare_and_set<'a>(
        &'a self,
        key: &'a str,
        expected: u64,
        value: Vec<u8>,
    ) -> BoxFuture<'a, Result<Option<u64>, BusError>>;

    /// Remove `key`; answers whether it was live.
    fn delete<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<bool, BusError>>;

    /// Add `delta` to the counter under `key` (absent counts as zero) and renew its TTL;
    /// answers the new value.
    fn increment<'a>(&'a self, key: &'a str, delta: i64) -> BoxFuture<'a, Result<i64, BusError>>;

    /// Hold the slot `member` of the slot set `key` for `ttl` from now: after dropping the
    /// expired slots, renew it if the set holds it, or take it if fewer than `limit` slots are
    /// live; answers whether `member` holds a slot now (`false` changed nothing). `usize::MAX`
    /// renews (or restores) a slot whatever the count.
    fn hold_slot<'a>(
        &'a self,
        key: &'a str,
        member: &'a str,
        ttl: Duration,
        limit: usize,
    ) -> BoxFuture<'a, Result<bool, BusError>>;

    /// Give back the slot `member` of the slot set `key`; answers whether it held a live one.
    fn release_slot<'a>(&'a self, key: &'a str, member: &'a str) -> BoxFuture<'a, Result<bool, BusError>>;

    /// How many slots of the slot set `key` are live now (0 for a set never held).
    fn live_slots<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<usize, BusError>>;

    /// The keyspace's TTL.
    fn ttl(&self) -> Duration;
}

/// Check what [`Keyspace::hold_slot`] is given: the key and the member ([`check_key`]), and a
/// slot TTL from 1 ms to the keyspace's `keyspace_ttl`.
pub fn check_slot(key: &str, member: &str, ttl: Duration, keyspace_ttl: Duration) -> Result<(), BusError> {
    check_key(key)?;
    check_key(member)?;
    if ttl < Duration::from_millis(1) || ttl > keyspace_ttl {
        return Err(BusError::Config(format!(
            "slot TTL {ttl:?} is not from 1 ms to the keyspace's TTL {keyspace_ttl:?}"
        )));
    }
    Ok(())
}

/// Check a key against the contract's alphabet and length: `.` separates subject tokens in
/// JetStream, so it may not start or end a key, nor follow another `.`.
pub fn check_key(key: &str) -> Result<(), BusError> {
    let valid = !key.is_empty()
        && key.len() <= MAX_KEY_LEN
        && key.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'=' | b'.' | b'-'))
        && !key.starts_with('.')
        && !key.ends_with('.')
        && !key.contains("..");
    if valid { Ok(()) } else { Err(BusError::Config(format!("invalid keyspace key {key:?}"))) }
}

/// Check a keyspace name: the key alphabet without `.` (it names a Redis prefix and a
/// JetStream bucket), at most 64 bytes.
pub fn check_name(name: &str) -> Result<(), BusError> {
    let valid = !name.is_empty()
        && name.len() <= 64
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-'));
    if valid { Ok(()) } else { Err(BusError::Config(format!("invalid keyspace name {name:?}"))) }
}

/// Check what [`ServerEventBus::keyspace`](crate::ServerEventBus::keyspace) is given: the name
/// ([`check_name`]) and a TTL from 1 ms to [`MAX_TTL`]. Every backend calls it first.
pub fn check_open(name: &str, ttl: Duration) -> Result<(), BusError> {
    check_name(name)?;
    if ttl < Duration::from_millis(1) || ttl > MAX_TTL {
        return Err(BusError::Config(format!("keyspace {name:?}: a TTL of {ttl:?} is not from 1 ms to {MAX_TTL:?}")));
    }
    Ok(())
}

/// Read a stored counter as Redis's `HINCRBY` reads it — `0`, or an optional `-` and digits
/// without a leading zero — so every backend takes the same values; anything else (and a value
/// outside `i64`) is [`BusError::Backend`].
pub fn parse_counter(key: &str, value: &[u8]) -> Result<i64, BusError> {
    let digits = value.strip_prefix(b"-").unwrap_or(value);
    let canonical = value == b"0" || digits.first().is_some_and(|d| (b'1'..=b'9').contains(d));
    let parsed = if canonical && digits.iter().all(u8::is_ascii_digit) {
        std::str::from_utf8(value).ok().and_then(|text| text.parse().ok())
    } else {
        None
    };
    parsed.ok_or_else(|| BusError::Backend(format!("keyspace key {key:?} does not hold a 64-bit counter")))
}

/// `current + delta` for the counter `key`, or [`BusError::Backend`] past the `i64` range.
pub fn add_to_counter(key: &str, current: i64, delta: i64) -> Result<i64, BusError> {
    current
        .checked_add(delta)
        .ok_or_else(|| BusError::Backend(format!("keyspace counter {key:?} would overflow adding {delta}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_and_names_keep_to_their_alphabet() {
        assert!(check_key("session.ab12-CD_=").is_ok());
        assert!(check_key("").is_err());
        assert!(check_key("a b").is_err());
        assert!(check_key("a*").is_err());
        assert!(check_key(&"k".repeat(MAX_KEY_LEN + 1)).is_err());
        assert!(check_key(".a").is_err());
        assert!(check_key("a.").is_err());
        assert!(check_key("a..b").is_err());
        assert!(check_name("sessions").is_ok());
        assert!(check_name("a.b").is_err());
        assert!(check_open("sessions", Duration::from_secs(60)).is_ok());
        assert!(check_open("sessions", Duration::ZERO).is_err());
        assert!(check_open("sessions", MAX_TTL * 2).is_err());
    }

    #[test]
    fn counters_read_as_redis_reads_them() {
        assert_eq!(parse_counter("k", b"-42").ok(), Some(-42));
        assert_eq!(parse_counter("k", b"9223372036854775807").ok(), Some(i64::MAX));
        assert_eq!(parse_counter("k", b"0").ok(), Some(0));
        for bad in [&b""[..], b"-", b"+1", b" 1", b"1.0", b"abc", b"01", b"-0", b"9223372036854775808"] {
            assert!(matches!(parse_counter("k", bad), Err(BusError::Backend(_))), "{bad:?}");
        }
        assert!(add_to_counter("k", i64::MAX, 1).is_err());
        assert_eq!(add_to_counter("k", 5, -7).ok(), Some(-2));
    }
}
