//! [`RedisBus`]: publishing through the epoch-settling version script and starting tailing
//! tasks.
//!
//! Publishing shares one connection (see `crate::publisher`); every subscription gets its own
//! tailing connection per shard it reads (see `crate::follow`, `crate::tail`, and the bus crate's `shard`).
//! All find the primary (or the cluster) through the same endpoint, so a Sentinel failover is
//! followed by whichever notices first. Membership and keyspaces (see `crate::keyspace`) run their commands and
//! scripts on the publishing connection, at the unsharded stream key's slot.

use std::sync::Arc;
use std::time::Duration;

use mcp_fleet_bus::check_open;
use mcp_fleet_bus::shard::shards_for;
use mcp_fleet_bus::{
    BoxFuture, BusCounters, BusError, BusStatus, BusStream, EventEnvelope, EventKind, Keyspace, Member, ServerEventBus,
    Subject,
};

use crate::endpoint::{Conn, Endpoint};
use crate::follow::{self, Tails};
use crate::keyspace::RedisKeyspace;
use crate::options::RedisBusOptions;
use crate::publisher::{Publisher, Retry};
use crate::scripts;

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
    /// Every subscription's tails, and which shards they read.
    tails: Tails,
    counters: Arc<BusCounters>,
}

impl RedisBus {
    /// Connect with `options`: fails with [`BusError::Unavailable`] if the primary cannot be
    /// reached (and its epoch read) within the publish timeout, [`BusError::Config`] on invalid
    /// options.
    pub async fn connect(options: RedisBusOptions) -> Result<RedisBus, BusError> {
        options.validate()?;
        let endpoint = Endpoint::new(&options.endpoint).map_err(|e| BusError::Config(e.to_string()))?;
        let publisher = Publisher::new(&options);
        let (endpoint, counters) = (Arc::new(endpoint), Arc::<BusCounters>::default());
        let tails = follow::tails(endpoint.clone(), &options, counters.clone());
        publisher.baseline(&endpoint, tails.reader().shard(0)).await?;
        let inner = Inner { endpoint, publisher, tails, options: Arc::new(options), counters };
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
        self.inner.tails.count() == 1
    }
}

impl ServerEventBus for RedisBus {
    fn publish_event(&self, event: EventEnvelope) -> BoxFuture<'_, Result<EventEnvelope, BusError>> {
        Box::pin(async move {
            let inner = &self.inner;
            let mut places = shards_for(&event, inner.tails.count()).into_iter();
            let first = inner.tails.reader().shard(places.next().unwrap_or(0));
            let mut env = inner.publisher.publish(&inner.endpoint, first, event.clone()).await?;
            for shard in places {
                // The same event (one id) where the other updates it is about are.
                inner.publisher.publish(&inner.endpoint, inner.tails.reader().shard(shard), event.clone()).await?;
            }
            if !self.positioned() && env.kind != EventKind::Occurred {
                env.version = 0;
            }
            BusCounters::bump(&inner.counters.published);
            Ok(env)
        })
    }

    fn subscribe(&self) -> BoxFuture<'_, Result<BusStream, BusError>> {
        Box::pin(self.inner.tails.subscribe())
    }

    fn status(&self) -> BusStatus {
        self.inner.tails.status()
    }

    fn gain(&self, subjects: &[Subject]) -> BoxFuture<'_, Result<(), BusError>> {
        let subjects = subjects.to_vec();
        Box::pin(async move { self.inner.tails.gain(&subjects).await })
    }

    fn routes_by_interest(&self) -> bool {
        self.inner.options.routing == mcp_fleet_bus::shard::Routing::Interest
    }

    fn lose(&self, subjects: &[Subject]) {
        self.inner.tails.lose(subjects);
    }

    fn position(&self) -> BoxFuture<'_, Result<Option<(u64, u64)>, BusError>> {
        Box::pin(async move {
            if !self.positioned() {
                return Ok(None);
            }
            self.occurrence_position().await
        })
    }

    fn occurrence_position(&self) -> BoxFuture<'_, Result<Option<(u64, u64)>, BusError>> {
        Box::pin(async move {
            let inner = &self.inner;
            let baseline = inner.publisher.baseline(&inner.endpoint, inner.tails.reader().shard(0)).await?;
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
