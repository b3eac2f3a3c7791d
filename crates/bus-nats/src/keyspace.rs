//! [`NatsKeyspace`]: the [`Keyspace`] of a [`NatsBus`](crate::NatsBus) in JetStream mode — one
//! key-value bucket per keyspace, `<stream>_KS_<name>`, whose `max_age` is the keyspace's TTL —
//! and [`kv_bucket`], which opens the buckets of this crate (the membership one too).
//!
//! - **TTL**: nats-server 2.9 has no per-message TTL, so the TTL is the bucket's: a key lives
//!   `max_age` from its last write (history 1: each write replaces the key's message, and its
//!   age starts again). The server removes aged messages on a timer, so expiry is late by up to
//!   about a second, never early. A bucket found with another `max_age` (a node configured with
//!   another TTL) is **updated** to this node's TTL, with a warning: there is only one TTL per
//!   bucket, and the newest configuration wins, as it would in a rolling deploy.
//! - **Revisions** are the entries' stream sequences: increasing across every key, never
//!   reused. Delete and purge markers, and aged-out keys, read as absent.
//! - **Compare-and-set** is `update` with the expected revision (a wrong last sequence is a
//!   `None`); **create** is the store's create (an existing key is a `None`); **delete** reads
//!   the key, then deletes it expecting that revision, so only one of two concurrent deletes
//!   answers that the key was live; **increment** reads and writes expecting the revision read,
//!   again after a conflict (with a short random pause), at most [`MAX_ATTEMPTS`] times. Counter
//!   values are decimal ASCII.
//! - **Slot sets** are one entry each, `slots/<key>` (no record key holds a `/`): a JSON map of
//!   member → expiry in ms on the writing node's wall clock (so nodes' clocks should agree, as
//!   for the fleet-wide rate windows), pruned and changed by read-then-update expecting the
//!   revision read, like an increment. The entry itself lives the bucket's `max_age` from its
//!   last write, at least as long as any of its slots (a slot's TTL is at most the keyspace's).
//! - Every operation is bounded by the publish timeout; errors while the connection is down are
//!   [`BusError::Unavailable`].
//! - Core NATS stores nothing: opening a keyspace there is [`BusError::Config`].

use std::time::Duration;

use async_nats::jetstream::{self, kv};
use mcp_fleet_bus::{BoxFuture, BusError, Keyspace, Record};
use mcp_fleet_bus::{add_to_counter, check_key, check_slot, now_ms, parse_counter};

use crate::options::NatsBusOptions;
use crate::{backend_error, unavailable_when_down, within};

/// Most read-then-write rounds of a delete or an increment before it gives up on contention.
pub(crate) const MAX_ATTEMPTS: u32 = 100;

/// The longest random pause between two rounds, in milliseconds.
const MAX_PAUSE_MS: u64 = 20;

/// The key-value bucket `bucket` with `ttl` as its max age, created if missing (one message
/// per key, replicas as the bus's stream). With `update_max_age`, a bucket found with another
/// max age gets `ttl` instead; without, it is used as it is.
///
/// The bucket's stream is created directly, with the key-value conventions (`KV_<bucket>`,
/// subjects `$KV.<bucket>.>`, one message per subject, rollups, discard new): async-nats's
/// `create_key_value` first asks for the account's info, whose answer it cannot read from NATS
/// servers before 2.10, which are still common.
///
/// Direct gets only on a single replica. With several, any replica answers a direct get,
/// followers too, and a follower may not hold a write the leader just acknowledged: a session
/// created on one node read back at once as absent (404) on a 3-server cluster. Without direct
/// gets a read goes to the stream's leader, which has every acknowledged write. A replicated
/// bucket found with direct gets (made by an earlier version) is updated.
pub(crate) async fn kv_bucket(
    js: &jetstream::Context,
    options: &NatsBusOptions,
    bucket: &str,
    ttl: Duration,
    update_max_age: bool,
) -> Result<kv::Store, BusError> {
    let config = jetstream::stream::Config {
        name: format!("KV_{bucket}"),
        subjects: vec![format!("$KV.{bucket}.>")],
        max_messages_per_subject: 1,
        max_age: ttl,
        allow_rollup: true,
        deny_delete: true,
        allow_direct: options.replicas <= 1,
        discard: jetstream::stream::DiscardPolicy::New,
        num_replicas: options.replicas,
        ..Default::default()
    };
    let stream = within(options.connect_timeout, js.get_or_create_stream(config)).await?.map_err(backend_error)?;
    let found = &stream.cached_info().config;
    let mut config = found.clone();
    if update_max_age && found.max_age != ttl {
        tracing::warn!(bucket, from = ?found.max_age, to = ?ttl, "nats bus: keyspace bucket found with another TTL; updating it");
        config.max_age = ttl;
        // The server refuses a duplicate window longer than the max age.
        config.duplicate_window = config.duplicate_window.min(ttl);
    }
    if found.allow_direct && found.num_replicas > 1 {
        tracing::info!(
            bucket,
            "nats bus: replicated keyspace bucket reads from its leader from now on (direct gets off)"
        );
        config.allow_direct = false;
    }
    if config != *found {
        within(options.publish_timeout, js.update_stream(&config)).await?.map_err(backend_error)?;
    }
    within(options.publish_timeout, js.get_key_value(bucket)).await?.map_err(backend_error)
}

/// One keyspace's bucket.
pub(crate) struct NatsKeyspace {
    store: kv::Store,
    client: async_nats::Client,
    ttl: Duration,
    /// Bound on one operation (the bus's publish timeout).
    timeout: Duration,
}

impl NatsKeyspace {
    /// Open (or create) the bucket of the keyspace `name` (already checked) with `ttl`.
    pub(crate) async fn open(
        client: async_nats::Client,
        js: &jetstream::Context,
        options: &NatsBusOptions,
        name: &str,
        ttl: Duration,
    ) -> Result<NatsKeyspace, BusError> {
        let bucket = format!("{}_KS_{name}", options.stream_name);
        let store = kv_bucket(js, options, &bucket, ttl, true).await.map_err(|e| unavailable_when_down(&client, e))?;
        Ok(NatsKeyspace { store, client, ttl, timeout: options.publish_timeout })
    }

    /// Run `op` on `key` (checked first) within the timeout; an async-nats error becomes a
    /// [`BusError`], `Unavailable` while the connection is down.
    async fn bounded<T>(&self, key: &str, op: impl Future<Output = Result<T, BusError>>) -> Result<T, BusError> {
        check_key(key)?;
        within(self.timeout, op).await.and_then(|result| result).map_err(|e| unavailable_when_down(&self.client, e))
    }

    /// The key's latest entry: a put, a delete or purge marker, or nothing.
    async fn entry(&self, key: &str) -> Result<Option<kv::Entry>, BusError> {
        self.store.entry(key).await.map_err(backend_error)
    }

    /// Store `value` under `key` only while its last revision is `expected` (0: no message at
    /// all); `None` when it changed.
    async fn update(&self, key: &str, value: Vec<u8>, expected: u64) -> Result<Option<u64>, BusError> {
        match self.store.update(key, value.into(), expected).await {
            Ok(revision) => Ok(Some(revision)),
            Err(err) if err.kind() == kv::UpdateErrorKind::WrongLastRevision => Ok(None),
            Err(err) => Err(backend_error(err)),
        }
    }
}

/// The slot set `key`'s entry: a `/` no record key holds.
fn slots_key(key: &str) -> String {
    format!("slots/{key}")
}

/// A slot set's members and expiries (ms since the epoch); unreadable bytes read as empty.
type Slots = std::collections::BTreeMap<String, u64>;

impl NatsKeyspace {
    /// Change the slot set `key` with `change` (given the live slots at `now`, answering whether
    /// to write them back, and what to answer), read-then-update expecting the revision read,
    /// again after a conflict.
    async fn change_slots<T>(&self, key: &str, change: impl Fn(&mut Slots, u64) -> (bool, T)) -> Result<T, BusError> {
        let entry_key = slots_key(key);
        for attempt in 0..MAX_ATTEMPTS {
            let (mut slots, expected) = match self.entry(&entry_key).await? {
                Some(entry) if entry.operation == kv::Operation::Put => {
                    (serde_json::from_slice::<Slots>(&entry.value).unwrap_or_default(), entry.revision)
                }
                Some(marker) => (Slots::new(), marker.revision),
                None => (Slots::new(), 0),
            };
            let now = now_ms();
            let before = slots.len();
            slots.retain(|_, expiry| *expiry > now);
            let pruned = slots.len() != before;
            let (write, answer) = change(&mut slots, now);
            if !write && !pruned {
                return Ok(answer);
            }
            // A map of strings to numbers always serializes.
            let value = serde_json::to_vec(&slots).unwrap_or_default();
            if self.update(&entry_key, value, expected).await?.is_some() {
                return Ok(answer);
            }
            pause(attempt).await;
        }
        Err(contended(key))
    }
}

/// The entry if it is a live record (not a delete or purge marker).
fn live(entry: Option<kv::Entry>) -> Option<kv::Entry> {
    entry.filter(|entry| entry.operation == kv::Operation::Put)
}

/// A short random pause after a conflict, so contending writers spread out.
async fn pause(attempt: u32) {
    let cap = u64::from(attempt).min(MAX_PAUSE_MS);
    tokio::time::sleep(Duration::from_millis(rand::random_range(0..=cap))).await;
}

fn contended(key: &str) -> BusError {
    BusError::Backend(format!("keyspace key {key:?} changed under {MAX_ATTEMPTS} attempts in a row"))
}

impl Keyspace for NatsKeyspace {
    fn get<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<Record>, BusError>> {
        Box::pin(self.bounded(key, async move {
            let entry = live(self.entry(key).await?);
            Ok(entry.map(|entry| Record { value: entry.value.to_vec(), revision: entry.revision }))
        }))
    }

    fn create<'a>(&'a self, key: &'a str, value: Vec<u8>) -> BoxFuture<'a, Result<Option<u64>, BusError>> {
        Box::pin(self.bounded(key, async move {
            match self.store.create(key, value.into()).await {
                Ok(revision) => Ok(Some(revision)),
                Err(err) if err.kind() == kv::CreateErrorKind::AlreadyExists => Ok(None),
                Err(err) => Err(backend_error(err)),
            }
        }))
    }

    fn put<'a>(&'a self, key: &'a str, value: Vec<u8>) -> BoxFuture<'a, Result<u64, BusError>> {
        Box::pin(self.bounded(key, async move { self.store.put(key, value.into()).await.map_err(backend_error) }))
    }

    fn compare_and_set<'a>(
        &'a self,
        key: &'a str,
        expected: u64,
        value: Vec<u8>,
    ) -> BoxFuture<'a, Result<Option<u64>, BusError>> {
        Box::pin(self.bounded(key, async move {
            // To JetStream 0 means "no message yet"; no record has it.
            if expected == 0 {
                return Ok(None);
            }
            self.update(key, value, expected).await
        }))
    }

    fn delete<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<bool, BusError>> {
        Box::pin(self.bounded(key, async move {
            for attempt in 0..MAX_ATTEMPTS {
                let Some(entry) = live(self.entry(key).await?) else { return Ok(false) };
                match self.store.delete_expect_revision(key, Some(entry.revision)).await {
                    Ok(()) => return Ok(true),
                    Err(err) if err.kind() == kv::UpdateErrorKind::WrongLastRevision => pause(attempt).await,
                    Err(err) => return Err(backend_error(err)),
                }
            }
            Err(contended(key))
        }))
    }

    fn increment<'a>(&'a self, key: &'a str, delta: i64) -> BoxFuture<'a, Result<i64, BusError>> {
        Box::pin(self.bounded(key, async move {
            for attempt in 0..MAX_ATTEMPTS {
                let (current, expected) = match self.entry(key).await? {
                    Some(entry) if entry.operation == kv::Operation::Put => {
                        (parse_counter(key, &entry.value)?, entry.revision)
                    }
                    // A marker is the subject's last message: write after it.
                    Some(marker) => (0, marker.revision),
                    None => (0, 0),
                };
                let next = add_to_counter(key, current, delta)?;
                if self.update(key, next.to_string().into_bytes(), expected).await?.is_some() {
                    return Ok(next);
                }
                pause(attempt).await;
            }
            Err(contended(key))
        }))
    }

    fn hold_slot<'a>(
        &'a self,
        key: &'a str,
        member: &'a str,
        ttl: Duration,
        limit: usize,
    ) -> BoxFuture<'a, Result<bool, BusError>> {
        let ttl_ms = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX);
        Box::pin(self.bounded(key, async move {
            check_slot(key, member, ttl, self.ttl)?;
            self.change_slots(key, |slots, now| {
                let held = slots.contains_key(member) || slots.len() < limit;
                if held {
                    slots.insert(member.to_owned(), now.saturating_add(ttl_ms));
                }
                (held, held)
            })
            .await
        }))
    }

    fn release_slot<'a>(&'a self, key: &'a str, member: &'a str) -> BoxFuture<'a, Result<bool, BusError>> {
        Box::pin(self.bounded(key, async move {
            check_key(member)?;
            self.change_slots(key, |slots, _| {
                let released = slots.remove(member).is_some();
                (released, released)
            })
            .await
        }))
    }

    fn ttl(&self) -> Duration {
        self.ttl
    }
}
