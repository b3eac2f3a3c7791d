//! [`RedisBus`]: publishing through the atomic version script and starting tailing tasks.
//!
//! Publishing shares one auto-reconnecting [`ConnectionManager`]; every subscription gets its
//! own tailing connection (see [`crate::tail`]).

use std::sync::Arc;

use mcp_fleet_bus::{
    BoxFuture, BusCounters, BusError, BusItem, BusStatus, BusStream, Change, EventEnvelope, ServerEventBus,
};
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;

use crate::cursor::Cursor;
use crate::options::RedisBusOptions;
use crate::scripts;
use crate::status::StatusCell;
use crate::tail::{self, CHANNEL_CAPACITY, Tail};
use crate::to_bus_error;

/// Retries the publishing connection makes per reconnect attempt; publishing itself is bounded
/// by the publish timeout, so a down Redis fails the publish rather than queueing it.
const PUBLISH_CONNECT_RETRIES: usize = 2;

/// A [`ServerEventBus`] on one Redis stream. Cheap to clone; clones share connections.
///
/// Delivery is at-least-once with gaps reported: see the crate docs.
#[derive(Clone)]
pub struct RedisBus {
    inner: Arc<Inner>,
}

struct Inner {
    client: redis::Client,
    publisher: ConnectionManager,
    options: Arc<RedisBusOptions>,
    counters: Arc<BusCounters>,
    status: StatusCell,
}

impl RedisBus {
    /// Connect with `options`; fails with [`BusError::Unavailable`] if Redis cannot be reached
    /// within the publish timeout, [`BusError::Config`] on invalid options.
    pub async fn connect(options: RedisBusOptions) -> Result<RedisBus, BusError> {
        options.validate()?;
        let client = redis::Client::open(options.connection.clone()).map_err(|e| BusError::Config(e.to_string()))?;
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(options.publish_timeout))
            .set_response_timeout(Some(options.publish_timeout))
            .set_number_of_retries(PUBLISH_CONNECT_RETRIES)
            .set_max_delay(options.reconnect_max);
        let publisher =
            tokio::time::timeout(options.publish_timeout, client.get_connection_manager_with_config(config))
                .await
                .map_err(|_| {
                    BusError::Unavailable(format!("redis connect timed out after {:?}", options.publish_timeout))
                })?
                .map_err(to_bus_error)?;
        let inner = Inner {
            client,
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

    async fn publish_change(&self, change: Change) -> Result<EventEnvelope, BusError> {
        let inner = &self.inner;
        let mut env = EventEnvelope::new(change, &inner.options.node_id);
        let mut conn = inner.publisher.clone();
        let mut invocation = scripts::PUBLISH.prepare_invoke();
        invocation.key(&inner.options.stream_key).key(inner.options.version_key());
        invocation.arg(env.encode()).arg(inner.options.max_len);
        let invocation = invocation.invoke_async::<u64>(&mut conn);
        let timeout = inner.options.publish_timeout;
        let result = tokio::time::timeout(timeout, invocation).await.map_err(|_| BusError::Timeout(timeout));
        match result.and_then(|r| r.map_err(to_bus_error)) {
            Ok(version) => {
                inner.status.set_connected();
                BusCounters::bump(&inner.counters.published);
                env.version = version;
                Ok(env)
            }
            Err(err) => {
                if matches!(err, BusError::Unavailable(_) | BusError::Timeout(_)) {
                    inner.status.set_reconnecting(&err);
                }
                Err(err)
            }
        }
    }

    /// Read where the stream stands, open the tailing connection, then spawn the task: once
    /// this returns, every later entry is after the cursor and will be read.
    async fn start_tail(&self) -> Result<BusStream, BusError> {
        let inner = &self.inner;
        let mut conn = inner.publisher.clone();
        let (version, last_id) =
            tokio::time::timeout(inner.options.publish_timeout, tail::baseline(&mut conn, &inner.options))
                .await
                .map_err(|_| BusError::Timeout(inner.options.publish_timeout))?
                .map_err(to_bus_error)?;
        let tail_conn = tail::open_tail_connection(&inner.client, &inner.options).await?;
        let (tx, rx) = mpsc::channel::<BusItem>(CHANNEL_CAPACITY);
        let tail = Tail {
            client: inner.client.clone(),
            options: inner.options.clone(),
            cursor: Cursor::new(last_id, version),
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
    fn publish(&self, change: Change) -> BoxFuture<'_, Result<EventEnvelope, BusError>> {
        Box::pin(self.publish_change(change))
    }

    fn subscribe(&self) -> BoxFuture<'_, Result<BusStream, BusError>> {
        Box::pin(self.start_tail())
    }

    fn status(&self) -> BusStatus {
        self.inner.status.get()
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
