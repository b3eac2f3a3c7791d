//! [`RedisBus`]: publishing through the epoch-settling version script and starting tailing
//! tasks.
//!
//! Publishing shares one connection (see `crate::publisher`); every subscription gets its own
//! tailing connection (see `crate::tail`). Both find the primary through the same endpoint,
//! so a Sentinel failover is followed by whichever notices first. Membership and keyspaces
//! (see `crate::keyspace`) run their commands and scripts on the publishing connection.

use std::sync::Arc;
use std::time::Duration;

use mcp_fleet_bus::check_open;
use mcp_fleet_bus::{
    BoxFuture, BusCounters, BusError, BusItem, BusStatus, BusStream, EventEnvelope, Keyspace, Member, ServerEventBus,
    StatusCell,
};
use redis::aio::MultiplexedConnection;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;

use crate::cursor::Cursor;
use crate::endpoint::Endpoint;
use crate::keyspace::RedisKeyspace;
use crate::options::RedisBusOptions;
use crate::publisher::{Publisher, Retry};
use crate::scripts;
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
    counters: Arc<BusCounters>,
    /// The consumers' state; publishing never touches it.
    status: StatusCell,
}

impl RedisBus {
    /// Connect with `options`: fails with [`BusError::Unavailable`] if the primary cannot be
    /// reached (and its epoch read) within the publish timeout, [`BusError::Config`] on invalid
    /// options.
    pub async fn connect(options: RedisBusOptions) -> Result<RedisBus, BusError> {
        options.validate()?;
        let endpoint = Endpoint::new(&options.endpoint).map_err(|e| BusError::Config(e.to_string()))?;
        let publisher = Publisher::new(&options);
        publisher.baseline(&endpoint, &options).await?;
        let inner = Inner {
            endpoint: Arc::new(endpoint),
            publisher,
            options: Arc::new(options),
            counters: Arc::default(),
            status: StatusCell::connected(),
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
        F: Fn(MultiplexedConnection) -> Fut,
        Fut: Future<Output = redis::RedisResult<T>>,
    {
        let inner = &self.inner;
        inner.publisher.run(&inner.endpoint, &inner.options, retry, op).await
    }

    /// Read where the stream stands, open the tailing connection, then spawn the task: once
    /// this returns, every later entry is after the cursor and will be read.
    async fn start_tail(&self) -> Result<BusStream, BusError> {
        let inner = &self.inner;
        let baseline = inner.publisher.baseline(&inner.endpoint, &inner.options).await?;
        let tail_conn = tail::open_tail_connection(&inner.endpoint, &inner.options).await?;
        let (tx, rx) = mpsc::channel::<BusItem>(CHANNEL_CAPACITY);
        let tail = Tail {
            endpoint: inner.endpoint.clone(),
            options: inner.options.clone(),
            cursor: Cursor::at(baseline),
            tx,
            counters: inner.counters.clone(),
            status: inner.status.clone(),
        };
        tokio::spawn(tail.run(tail_conn));
        inner.status.set_connected();
        Ok(Box::pin(ReceiverStream::new(rx)) as BusStream)
    }
}

impl ServerEventBus for RedisBus {
    fn publish_event(&self, event: EventEnvelope) -> BoxFuture<'_, Result<EventEnvelope, BusError>> {
        Box::pin(async move {
            let inner = &self.inner;
            let env = inner.publisher.publish(&inner.endpoint, &inner.options, event).await?;
            BusCounters::bump(&inner.counters.published);
            Ok(env)
        })
    }

    fn subscribe(&self) -> BoxFuture<'_, Result<BusStream, BusError>> {
        Box::pin(self.start_tail())
    }

    fn status(&self) -> BusStatus {
        self.inner.status.get()
    }

    fn position(&self) -> BoxFuture<'_, Result<Option<(u64, u64)>, BusError>> {
        Box::pin(async move {
            let inner = &self.inner;
            let baseline = inner.publisher.baseline(&inner.endpoint, &inner.options).await?;
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
