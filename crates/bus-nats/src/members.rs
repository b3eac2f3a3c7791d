//! Fleet membership on NATS: each node's announcement, kept by every node in a local map that a
//! background task feeds, so [`members`](mcp_fleet_bus::ServerEventBus::members) needs no round
//! trip.
//!
//! - **JetStream**: a key-value bucket `<stream>_MEMBERS` (one key per node, history 1,
//!   `max_age` = the TTL, replicas as the stream's), watched. A watcher is not told when an
//!   entry ages out, so the map expires entries itself, from their creation time.
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
        let node = self.node();
        // Our own announcement counts at once, whatever the transport's latency.
        self.lock().insert(node.clone(), (payload.clone(), Instant::now() + self.ttl));
        let timeout = self.options.publish_timeout;
        match &self.transport {
            Transport::Kv(store) => {
                within(timeout, store.put(&node, payload.into())).await?.map_err(backend_error)?;
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
        let node = self.node();
        self.lock().remove(&node);
        let timeout = self.options.publish_timeout;
        match &self.transport {
            Transport::Kv(store) => within(timeout, store.delete(&node)).await?.map_err(backend_error),
            Transport::Core { client, subject } => {
                let beat = Heartbeat { node, payload: String::new(), ttl_ms: 0, leave: true };
                publish(client, subject, &beat, timeout).await
            }
        }
    }

    /// This node's key in the map: its id, made a valid KV key in JetStream mode (where the
    /// key is all a watcher sees).
    fn node(&self) -> String {
        match self.transport {
            Transport::Kv(_) => kv_key(&self.options.node_id),
            Transport::Core { .. } => self.options.node_id.clone(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, (String, Instant)>> {
        // Entries are inserted and removed whole.
        self.map.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// KV keys allow `[-/_=.a-zA-Z0-9]`; anything else in a node id is replaced.
fn kv_key(node: &str) -> String {
    node.chars().map(|c| if c.is_ascii_alphanumeric() || "-_=".contains(c) { c } else { '_' }).collect()
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

/// Record one bucket entry: a put (its expiry counted from its creation) or a delete.
fn apply_entry(map: &MemberMap, entry: kv::Entry, ttl: Duration) {
    let mut map = map.lock().unwrap_or_else(PoisonError::into_inner);
    match entry.operation {
        kv::Operation::Put => {
            let age_ms = (time::OffsetDateTime::now_utc() - entry.created)
                .whole_milliseconds()
                .clamp(0, ttl.as_millis() as i128);
            let expiry = Instant::now() + ttl.saturating_sub(Duration::from_millis(age_ms as u64));
            let payload = String::from_utf8_lossy(&entry.value).into_owned();
            map.insert(entry.key, (payload, expiry));
        }
        kv::Operation::Delete | kv::Operation::Purge => {
            map.remove(&entry.key);
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
