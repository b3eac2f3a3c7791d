//! [`RedisBus`]: publishing through the epoch-settling version script and starting tailing
//! tasks.
//!
//! Publishing shares one connection (see `crate::publisher`); every subscription gets its own
//! tailing connection per shard (see `crate::tail`, `crate::shard`). All find the primary (or
//! the cluster) through the same endpoint, so a Sentinel failover is followed by whichever
//! notices first. Membership and keyspaces (see `crate::keyspace`) run their commands and
//! scripts on the publishing connection, at the unsharded stream key's slot.

use std::sync::Arc;
use std::time::Duration;

use mcp_fleet_bus::check_open;
use mcp_fleet_bus::{
    BoxFuture, BusCounters, BusError, BusItem, BusStatus, BusStream, EventEnvelope, Keyspace, Member, ServerEventBus,
    StatusCell,
};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;

use crate::cursor::Cursor;
use crate::endpoint::{Conn, Endpoint};
use crate::keyspace::RedisKeyspace;
use crate::options::RedisBusOptions;
use crate::publisher::{Publisher, Retry};
use crate::scripts;
use crate::shard::shard_of;
use crate::tail::{self, CHANNEL_CAPACITY, Tail};

/// A [`ServerEventBus`] on one Redis stream. Cheap to clone; clones share connections.
///
/// Delivery is at-least-once with gaps reported: see the crate docs.
#[derive(Clone)]
pub struct RedisBus {
    inner: Arc<Inner>,
}

struct Inner {
    endpoint: Arc<Endpoint>,
    publisher: Publisher,
    options: Arc<RedisBusOptions>,
    /// Each shard's options (its stream key); one entry when the bus is not sharded.
    shards: Vec<Arc<RedisBusOptions>>,
    counters: Arc<BusCounters>,
    /// The consumers' state, one cell per shard (every subscription's tail of a shard keeps
    /// it); publishing never touches it.
    status: Vec<StatusCell>,
}

impl RedisBus {
    /// Connect with `options`: fails with [`BusError::Unavailable`] if the primary cannot be
    /// reached (and its epoch read) within the publish timeout, [`BusError::Config`] on invalid
    /// options.
    pub async fn connect(options: RedisBusOptions) -> Result<RedisBus, BusError> {
        options.validate()?;
        let endpoint = Endpoint::new(&options.endpoint).map_err(|e| BusError::Config(e.to_string()))?;
        let publisher = Publisher::new(&options);
        let shards: Vec<_> = (0..options.shards).map(|i| Arc::new(options.shard(i))).collect();
        publisher.baseline(&endpoint, &shards[0]).await?;
        let inner = Inner {
            endpoint: Arc::new(endpoint),
            publisher,
            status: shards.iter().map(|_| StatusCell::connected()).collect(),
            shards,
            options: Arc::new(options),
            counters: Arc::default(),
        };
        Ok(RedisBus { inner: Arc::new(inner) })
    }

    /// The options this bus runs with.
    pub fn options(&self) -> &RedisBusOptions {
        &self.inner.options
    }

    /// Run `op` on the publishing connection (see [`Publisher::run`]), within the publish
    /// timeout.
    pub(crate) async fn run<T, F, Fut>(&self, retry: Retry, op: F) -> Result<T, BusError>
    where
        F: Fn(Conn) -> Fut,
        Fut: Future<Output = redis::RedisResult<T>>,
    {
        let inner = &self.inner;
        inner.publisher.run(&inner.endpoint, &inner.options, retry, op).await
    }

    /// Whether events carry their position: only an unsharded bus has one history in order.
    fn positioned(&self) -> bool {
        self.inner.shards.len() == 1
    }

    /// For every shard, read where its stream stands and open a tailing connection, then spawn
    /// the tasks: once this returns, every later entry is after a cursor and will be read.
    async fn start_tails(&self) -> Result<BusStream, BusError> {
        let inner = &self.inner;
        let (tx, rx) = mpsc::channel::<BusItem>(CHANNEL_CAPACITY);
        let mut tails = Vec::with_capacity(inner.shards.len());
        for (options, status) in inner.shards.iter().zip(&inner.status) {
            let baseline = inner.publisher.baseline(&inner.endpoint, options).await?;
            let conn = tail::open_tail_connection(&inner.endpoint, options).await?;
            let tail = Tail {
                endpoint: inner.endpoint.clone(),
                options: options.clone(),
                cursor: Cursor::at(baseline),
                positioned: self.positioned(),
                tx: tx.clone(),
                counters: inner.counters.clone(),
                status: status.clone(),
            };
            tails.push((tail, conn));
        }
        for (tail, conn) in tails {
            tail.status.set_connected();
            tokio::spawn(tail.run(conn));
        }
        Ok(Box::pin(ReceiverStream::new(rx)) as BusStream)
    }
}

impl ServerEventBus for RedisBus {
    fn publish_event(&self, event: EventEnvelope) -> BoxFuture<'_, Result<EventEnvelope, BusError>> {
        Box::pin(async move {
            let inner = &self.inner;
            let shard = &inner.shards[shard_of(&event, inner.shards.len())];
            let mut env = inner.publisher.publish(&inner.endpoint, shard, event).await?;
            if !self.positioned() {
                env.version = 0;
            }
            BusCounters::bump(&inner.counters.published);
            Ok(env)
        })
    }

    fn subscribe(&self) -> BoxFuture<'_, Result<BusStream, BusError>> {
        Box::pin(self.start_tails())
    }

    fn status(&self) -> BusStatus {
        let mut shards = self.inner.status.iter().map(StatusCell::get);
        shards.find(|status| !status.is_connected()).unwrap_or(BusStatus::Connected)
    }

    fn position(&self) -> BoxFuture<'_, Result<Option<(u64, u64)>, BusError>> {
        Box::pin(async move {
            let inner = &self.inner;
            if !self.positioned() {
                return Ok(None);
            }
            let baseline = inner.publisher.baseline(&inner.endpoint, &inner.shards[0]).await?;
            Ok(Some((baseline.epoch, baseline.version)))
        })
    }

    fn announce(&self, payload: String, ttl: Duration) -> BoxFuture<'_, Result<(), BusError>> {
        Box::pin(async move {
            let ttl_ms = ttl.as_millis().max(1) as u64;
            let key = self.inner.options.members_key();
            let (node, payload) = (&self.inner.options.node_id, &payload);
            self.run(Retry::Always, |mut conn| {
                let mut call = scripts::ANNOUNCE.prepare_invoke();
                call.key(&key).arg(node).arg(payload).arg(ttl_ms);
                async move { call.invoke_async::<i64>(&mut conn).await }
            })
            .await
            .map(drop)
        })
    }

    fn members(&self) -> BoxFuture<'_, Result<Vec<Member>, BusError>> {
        Box::pin(async move {
            let key = self.inner.options.members_key();
            let flat: Vec<(String, String, u64)> = self
                .run(Retry::Always, |mut conn| {
                    let mut call = scripts::MEMBERS.prepare_invoke();
                    call.key(&key);
                    async move { call.invoke_async(&mut conn).await }
                })
                .await?;
            Ok(flat
                .into_iter()
                .map(|(node_id, payload, ms)| Member { node_id, payload, expires_in: Duration::from_millis(ms) })
                .collect())
        })
    }

    fn leave(&self) -> BoxFuture<'_, Result<(), BusError>> {
        Box::pin(async move {
            let (key, node) = (self.inner.options.members_key(), &self.inner.options.node_id);
            self.run(Retry::Always, |mut conn| {
                let cmd = redis::cmd("HDEL").arg(&key).arg(node).clone();
                async move { cmd.query_async::<i64>(&mut conn).await }
            })
            .await
            .map(drop)
        })
    }

    fn keyspace(&self, name: &str, ttl: Duration) -> BoxFuture<'_, Result<Arc<dyn Keyspace>, BusError>> {
        let opened = check_open(name, ttl).map(|()| Arc::new(RedisKeyspace::new(self.clone(), name, ttl)) as _);
        Box::pin(std::future::ready(opened))
    }

    fn node_id(&self) -> &str {
        &self.inner.options.node_id
    }

    fn counters(&self) -> Arc<BusCounters> {
        self.inner.counters.clone()
    }

    fn backend(&self) -> &'static str {
        "redis"
    }
}
