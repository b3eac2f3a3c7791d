//! [`NatsKeyspace`]: the [`Keyspace`] of a [`NatsBus`](crate::NatsBus) in JetStream mode — one
//! key-value bucket per keyspace, `<stream>_KS_<name>` — and [`kv_bucket`], which opens the
//! buckets of this crate (the membership one too).
//!
//! - `record`: reading and writing a key, each record with **its own TTL** (the writing
//!   handle's, in a header): nats-server before 2.11 has no per-message TTL, and a bucket's
//!   one `max_age` would let the node that opened it last set every node's TTL. The bucket's
//!   `max_age` is the longest TTL any node opened the keyspace with: it only sweeps what is
//!   long dead. Expiry is on the broker's timestamp of the write, read on the node's clock.
//! - `counter`: increments, one round in flight per counter and node, so contenders are the
//!   nodes, not the requests.
//! - **Revisions** are the entries' stream sequences: increasing across every key, never
//!   reused. Delete and purge markers, and records past their TTL, read as absent.
//! - **Create** writes expecting the last revision read (0: none) if the key is not live;
//!   **compare-and-set** writes expecting the given revision if that is the live record's;
//!   **delete** writes a marker expecting the live record's revision, so only one of two
//!   concurrent deletes answers that the key was live. A conflict reads again.
//! - **Slot sets** are one entry each, `slots/<key>` (no record key holds a `/`): a JSON map of
//!   member → expiry in ms on the writing node's wall clock (so nodes' clocks should agree, as
//!   for the fleet-wide rate windows), pruned and changed by read-then-write expecting the
//!   revision read. The entry itself lives the keyspace's TTL from its last write, at least as
//!   long as any of its slots (a slot's TTL is at most the keyspace's).
//! - Every operation is bounded by the publish timeout; errors while the connection is down are
//!   [`BusError::Unavailable`].
//! - Core NATS stores nothing: opening a keyspace there is [`BusError::Config`].

mod counter;
mod record;

use std::time::Duration;

use async_nats::jetstream::{self, kv};
use mcp_fleet_bus::{BoxFuture, BusError, Keyspace, Record};
use mcp_fleet_bus::{check_slot, now_ms};

use crate::options::NatsBusOptions;
use crate::{backend_error, unavailable_when_down, within};
use counter::Counters;
use record::{Bucket, Last, pause};

/// The key-value bucket `bucket` with `ttl` as its max age, created if missing (one message
/// per key, replicas as the bus's stream). With `grow_max_age`, a bucket found with a shorter
/// max age gets `ttl` instead (the keyspace's records carry their own TTLs; the max age only
/// has to outlast the longest); without, it is used as it is.
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
    grow_max_age: bool,
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
    if grow_max_age && found.max_age < ttl {
        tracing::info!(bucket, from = ?found.max_age, to = ?ttl, "nats bus: keyspace bucket keeps records longer now");
        config.max_age = ttl;
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

/// One keyspace handle: its bucket, and its counters' rounds.
pub(crate) struct NatsKeyspace {
    bucket: Bucket,
    counters: Counters,
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
        let bucket = Bucket::new(store, js.clone(), client, ttl, options.publish_timeout);
        Ok(NatsKeyspace { counters: Counters::new(bucket.clone()), bucket })
    }

    /// Write `key` if it is not live (expecting what is there); `None` when it is.
    async fn create_once(&self, key: &str, value: Vec<u8>) -> Result<Option<u64>, BusError> {
        let mut attempt = 0u32;
        loop {
            let last = self.bucket.last(key).await?;
            if matches!(last, Last::Live { .. }) {
                return Ok(None);
            }
            if let Some(revision) = self.bucket.write(key, value.clone(), Some(last.revision())).await? {
                return Ok(Some(revision));
            }
            pause(attempt).await;
            attempt = attempt.saturating_add(1);
        }
    }

    /// Mark `key` deleted if it is live; answers whether it was.
    async fn delete_live(&self, key: &str) -> Result<bool, BusError> {
        let mut attempt = 0u32;
        loop {
            let Last::Live { revision, .. } = self.bucket.last(key).await? else { return Ok(false) };
            if self.bucket.delete(key, revision).await? {
                return Ok(true);
            }
            pause(attempt).await;
            attempt = attempt.saturating_add(1);
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
    /// to write them back, and what to answer), read-then-write expecting the revision read,
    /// again after a conflict.
    async fn change_slots<T>(&self, key: &str, change: impl Fn(&mut Slots, u64) -> (bool, T)) -> Result<T, BusError> {
        let entry_key = slots_key(key);
        let mut attempt = 0u32;
        loop {
            let last = self.bucket.last(&entry_key).await?;
            let mut slots = match &last {
                Last::Live { value, .. } => serde_json::from_slice::<Slots>(value).unwrap_or_default(),
                Last::Gone(_) | Last::Nothing => Slots::new(),
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
            if self.bucket.write(&entry_key, value, Some(last.revision())).await?.is_some() {
                return Ok(answer);
            }
            pause(attempt).await;
            attempt = attempt.saturating_add(1);
        }
    }
}

impl Keyspace for NatsKeyspace {
    fn get<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<Record>, BusError>> {
        Box::pin(self.bucket.bounded(key, async move {
            Ok(match self.bucket.last(key).await? {
                Last::Live { value, revision } => Some(Record { value: value.to_vec(), revision }),
                Last::Gone(_) | Last::Nothing => None,
            })
        }))
    }

    fn create<'a>(&'a self, key: &'a str, value: Vec<u8>) -> BoxFuture<'a, Result<Option<u64>, BusError>> {
        Box::pin(self.bucket.bounded(key, self.create_once(key, value)))
    }

    fn put<'a>(&'a self, key: &'a str, value: Vec<u8>) -> BoxFuture<'a, Result<u64, BusError>> {
        Box::pin(self.bucket.bounded(key, async move {
            let written = self.bucket.write(key, value, None).await?;
            written.ok_or_else(|| BusError::Backend("an unconditional write was refused".into()))
        }))
    }

    fn compare_and_set<'a>(
        &'a self,
        key: &'a str,
        expected: u64,
        value: Vec<u8>,
    ) -> BoxFuture<'a, Result<Option<u64>, BusError>> {
        Box::pin(self.bucket.bounded(key, async move {
            // The live record's revision only: a record past its TTL is gone, though its
            // message is still the subject's last.
            match self.bucket.last(key).await? {
                Last::Live { revision, .. } if revision == expected => {
                    self.bucket.write(key, value, Some(expected)).await
                }
                _ => Ok(None),
            }
        }))
    }

    fn delete<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<bool, BusError>> {
        Box::pin(self.bucket.bounded(key, self.delete_live(key)))
    }

    fn increment<'a>(&'a self, key: &'a str, delta: i64) -> BoxFuture<'a, Result<i64, BusError>> {
        Box::pin(self.bucket.bounded(key, self.counters.increment(key, delta)))
    }

    fn hold_slot<'a>(
        &'a self,
        key: &'a str,
        member: &'a str,
        ttl: Duration,
        limit: usize,
    ) -> BoxFuture<'a, Result<bool, BusError>> {
        let ttl_ms = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX);
        Box::pin(self.bucket.bounded(key, async move {
            check_slot(key, member, ttl, self.bucket.ttl)?;
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
        Box::pin(self.bucket.bounded(key, async move {
            mcp_fleet_bus::check_key(member)?;
            self.change_slots(key, |slots, _| {
                let released = slots.remove(member).is_some();
                (released, released)
            })
            .await
        }))
    }

    fn live_slots<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<usize, BusError>> {
        Box::pin(self.bucket.bounded(key, async move {
            let now = now_ms();
            Ok(match self.bucket.last(&slots_key(key)).await? {
                Last::Live { value, .. } => {
                    let slots = serde_json::from_slice::<Slots>(&value).unwrap_or_default();
                    slots.values().filter(|expiry| **expiry > now).count()
                }
                Last::Gone(_) | Last::Nothing => 0,
            })
        }))
    }

    fn ttl(&self) -> Duration {
        self.bucket.ttl
    }
}
