//! Fleet membership on NATS: each node's announcement, kept by every node in a local map that a
//! background task feeds, so [`members`](mcp_fleet_bus::ServerEventBus::members) needs no round
//! trip.
//!
//! - **JetStream**: a key-value bucket `<stream>_MEMBERS` (one key per node, history 1,
//!   `max_age` = the TTL, replicas as the stream's), watched. A watcher is not told when an
//!   entry ages out, so the map expires entries itself, one TTL after it **received** them —
//!   on this node's clock alone, as the core mode does (and Redis, on the server's clock).
//!   The entry's creation time is the server's clock: compared with this node's, a node a few
//!   seconds ahead saw its peers flicker out, ten seconds ahead it saw only itself. The cost:
//!   an announcement replayed when the watch (re)starts counts as fresh, so a node that died
//!   just before is seen for up to one more TTL (the bucket keeps nothing older than one).
//! - **Node ids** are KV keys through one injective encoding ([`kv_key`], undone by
//!   [`node_of_key`]): the map, [`members`](Members::members) and every comparison use the
//!   node's own id, so an FQDN id (`pod.ns.svc:8080`) is not counted twice, and two ids that
//!   a lossy sanitising would merge (`a.b`, `a_b`) stay two members.
//! - **Core**: heartbeats on the subject `<prefix>-members` (outside the event subjects), a
//!   tombstone on leave; nothing is stored, so a new node sees the others after their next
//!   heartbeat.
//!
//! If the watch or subscription ends (a server restart, a deleted bucket), the task starts it
//! again with backoff; the next heartbeats refill the map.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use async_nats::jetstream::{self, kv};
use futures_util::StreamExt;
use mcp_fleet_bus::{Backoff, BusError, Member};
use serde::{Deserialize, Serialize};
use tokio::time::Instant;

use crate::keyspace::kv_bucket;
use crate::options::{NatsBusOptions, NatsMode};
use crate::{backend_error, within};

/// TTL of the bucket when `members()` is asked before any announcement.
const DEFAULT_TTL: Duration = Duration::from_secs(10);

/// Node id → (payload, expiry on this node's clock).
type MemberMap = Arc<Mutex<HashMap<String, (String, Instant)>>>;

/// A core-mode heartbeat (or, with `leave`, a tombstone).
#[derive(Debug, Serialize, Deserialize)]
struct Heartbeat {
    node: String,
    #[serde(default)]
    payload: String,
    #[serde(default)]
    ttl_ms: u64,
    #[serde(default)]
    leave: bool,
}

/// How announcements travel.
enum Transport {
    Kv(Box<kv::Store>),
    Core { client: async_nats::Client, subject: String },
}

/// This node's view of the fleet's membership, and how it announces itself.
pub(crate) struct Members {
    map: MemberMap,
    transport: Transport,
    ttl: Duration,
    options: Arc<NatsBusOptions>,
    /// Ends the feeding task when the bus is dropped.
    _feed: tokio::task::JoinHandle<()>,
}

impl Drop for Members {
    fn drop(&mut self) {
        self._feed.abort();
    }
}

impl Members {
    /// Open the transport of `options.mode` and start feeding the map.
    pub(crate) async fn start(
        client: async_nats::Client,
        js: jetstream::Context,
        options: Arc<NatsBusOptions>,
        ttl: Option<Duration>,
    ) -> Result<Members, BusError> {
        let ttl = ttl.unwrap_or(DEFAULT_TTL);
        let map = MemberMap::default();
        let (transport, feed) = match options.mode {
            NatsMode::JetStream => {
                // The membership bucket; one whose max age differs is used as it is.
                let bucket = format!("{}_MEMBERS", options.stream_name);
                let store = kv_bucket(&js, &options, &bucket, ttl, false).await?;
                let feed = tokio::spawn(watch_bucket(store.clone(), map.clone(), options.clone(), ttl));
                (Transport::Kv(Box::new(store)), feed)
            }
            NatsMode::Core => {
                let subject = format!("{}-members", options.subject_prefix);
                let subscriber = client.subscribe(subject.clone()).await.map_err(backend_error)?;
                let feed = tokio::spawn(follow_heartbeats(subscriber, map.clone()));
                (Transport::Core { client, subject }, feed)
            }
        };
        Ok(Members { map, transport, ttl, options, _feed: feed })
    }

    /// Announce `payload` for this node (see the trait).
    pub(crate) async fn announce(&self, payload: String) -> Result<(), BusError> {
        let node = self.options.node_id.clone();
        // Our own announcement counts at once, whatever the transport's latency.
        self.lock().insert(node.clone(), (payload.clone(), Instant::now() + self.ttl));
        let timeout = self.options.publish_timeout;
        match &self.transport {
            Transport::Kv(store) => {
                within(timeout, store.put(kv_key(&node), payload.into())).await?.map_err(backend_error)?;
            }
            Transport::Core { client, subject } => {
                let beat = Heartbeat { node, payload, ttl_ms: self.ttl.as_millis() as u64, leave: false };
                publish(client, subject, &beat, timeout).await?;
            }
        }
        Ok(())
    }

    /// The live members.
    pub(crate) fn members(&self) -> Vec<Member> {
        let now = Instant::now();
        let mut map = self.lock();
        map.retain(|_, (_, expiry)| *expiry > now);
        map.iter()
            .map(|(node, (payload, expiry))| Member {
                node_id: node.clone(),
                payload: payload.clone(),
                expires_in: *expiry - now,
            })
            .collect()
    }

    /// Withdraw this node's announcement.
    pub(crate) async fn leave(&self) -> Result<(), BusError> {
        let node = self.options.node_id.clone();
        self.lock().remove(&node);
        let timeout = self.options.publish_timeout;
        match &self.transport {
            Transport::Kv(store) => within(timeout, store.delete(kv_key(&node))).await?.map_err(backend_error),
            Transport::Core { client, subject } => {
                let beat = Heartbeat { node, payload: String::new(), ttl_ms: 0, leave: true };
                publish(client, subject, &beat, timeout).await
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, (String, Instant)>> {
        // Entries are inserted and removed whole.
        self.map.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The KV key of `node`: KV keys allow `[-/_=.a-zA-Z0-9]`, and the key is all a watcher sees,
/// so the id is encoded injectively — ASCII letters, digits and `-` as they are, every other
/// byte as `_` and two uppercase hex digits (`pod.ns:80` → `pod_2Ens_3A80`).
fn kv_key(node: &str) -> String {
    let mut key = String::with_capacity(node.len());
    for byte in node.bytes() {
        if byte.is_ascii_alphanumeric() || byte == b'-' {
            key.push(char::from(byte));
        } else {
            key.push_str(&format!("_{byte:02X}"));
        }
    }
    key
}

/// The node id a KV key stands for ([`kv_key`] undone). A key that is not such an encoding (an
/// older node's sanitised id) is taken as the id itself.
fn node_of_key(key: &str) -> String {
    decode_key(key).filter(|node| kv_key(node) == key).unwrap_or_else(|| key.to_owned())
}

fn decode_key(key: &str) -> Option<String> {
    let mut bytes = Vec::with_capacity(key.len());
    let mut rest = key.as_bytes();
    while let Some((&first, tail)) = rest.split_first() {
        rest = tail;
        if first == b'_' {
            let hex = std::str::from_utf8(rest.get(..2)?).ok()?;
            bytes.push(u8::from_str_radix(hex, 16).ok()?);
            rest = &rest[2..];
        } else {
            bytes.push(first);
        }
    }
    String::from_utf8(bytes).ok()
}

async fn publish(
    client: &async_nats::Client,
    subject: &str,
    beat: &Heartbeat,
    timeout: Duration,
) -> Result<(), BusError> {
    let bytes = serde_json::to_vec(beat).map_err(|e| BusError::Backend(e.to_string()))?;
    within(timeout, client.publish(subject.to_owned(), bytes.into())).await?.map_err(backend_error)
}

/// Watch the bucket into `map` until the bus is dropped, restarting the watch when it ends.
async fn watch_bucket(store: kv::Store, map: MemberMap, options: Arc<NatsBusOptions>, ttl: Duration) {
    let mut backoff = Backoff::new(options.reconnect_min, options.reconnect_max);
    loop {
        match store.watch_all().await {
            Ok(mut entries) => {
                backoff.reset();
                while let Some(Ok(entry)) = entries.next().await {
                    apply_entry(&map, entry, ttl);
                }
            }
            Err(err) => tracing::warn!(error = %err, "nats bus: membership watch failed"),
        }
        tokio::time::sleep(backoff.next_delay()).await;
    }
}

/// Record one bucket entry: a put (expiring one TTL after its receipt, see the module docs)
/// or a delete.
fn apply_entry(map: &MemberMap, entry: kv::Entry, ttl: Duration) {
    let mut map = map.lock().unwrap_or_else(PoisonError::into_inner);
    let node = node_of_key(&entry.key);
    match entry.operation {
        kv::Operation::Put => {
            let payload = String::from_utf8_lossy(&entry.value).into_owned();
            map.insert(node, (payload, Instant::now() + ttl));
        }
        kv::Operation::Delete | kv::Operation::Purge => {
            map.remove(&node);
        }
    }
}

/// Follow core-mode heartbeats into `map` until the subscription ends.
async fn follow_heartbeats(mut subscriber: async_nats::Subscriber, map: MemberMap) {
    while let Some(message) = subscriber.next().await {
        let Ok(beat) = serde_json::from_slice::<Heartbeat>(&message.payload) else {
            tracing::warn!("nats bus: skipping an unreadable membership heartbeat");
            continue;
        };
        let mut map = map.lock().unwrap_or_else(PoisonError::into_inner);
        if beat.leave {
            map.remove(&beat.node);
        } else {
            map.insert(beat.node, (beat.payload, Instant::now() + Duration::from_millis(beat.ttl_ms)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put(key: &str, created: time::OffsetDateTime) -> kv::Entry {
        kv::Entry {
            bucket: "B_MEMBERS".into(),
            key: key.into(),
            value: bytes::Bytes::from_static(b"{}"),
            revision: 1,
            delta: 0,
            created,
            operation: kv::Operation::Put,
            seen_current: true,
        }
    }

    #[test]
    fn node_ids_are_kv_keys_one_to_one() {
        for node in ["node-1", "pod-a.ns.svc.cluster.local:8080", "a_b", "a.b", "a:b", "é/x y", ""] {
            let key = kv_key(node);
            assert!(key.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_".contains(&b)), "{key}");
            assert_eq!(node_of_key(&key), node, "{key}");
        }
        assert_ne!(kv_key("a.b"), kv_key("a_b"), "ids a sanitising would merge stay apart");
        assert_eq!(node_of_key("old_id_1"), "old_id_1", "an older node's key is its id");
    }

    #[tokio::test]
    async fn an_announcement_lives_a_ttl_from_its_receipt_whatever_the_clocks() {
        let (map, ttl) = (MemberMap::default(), Duration::from_secs(10));
        let now = time::OffsetDateTime::now_utc();
        // This node's clock runs 5 and 10 s ahead of the server's; another's 30 s behind.
        apply_entry(&map, put(&kv_key("peer-5s"), now - Duration::from_secs(5)), ttl);
        apply_entry(&map, put(&kv_key("peer-10s"), now - Duration::from_secs(10)), ttl);
        apply_entry(&map, put(&kv_key("peer-ahead"), now + Duration::from_secs(30)), ttl);
        let map = map.lock().unwrap_or_else(PoisonError::into_inner);
        let soon = Instant::now() + ttl - Duration::from_secs(1);
        for node in ["peer-5s", "peer-10s", "peer-ahead"] {
            let (_, expiry) = map.get(node).unwrap_or_else(|| panic!("{node} is a member"));
            assert!(*expiry > soon && *expiry <= Instant::now() + ttl, "{node} expires a TTL after receipt");
        }
    }
}
