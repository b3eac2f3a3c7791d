//! [`RedisReader`]: how this backend reads one shard for
//! [`Shards`](mcp_fleet_bus::shard::Shards) — a tailing connection of its own, positioned where
//! the shard's stream stands now, and the tailing task (`crate::tail`) feeding the subscription.
//! Which shards a subscription reads, and when, is the bus crate's `Shards`.

use std::sync::Arc;

use mcp_fleet_bus::shard::{ShardReader, Shards};
use mcp_fleet_bus::{BoxFuture, BusCounters, BusError, BusItem, StatusCell};
use tokio::sync::{Notify, mpsc};

use crate::cursor::Cursor;
use crate::endpoint::Endpoint;
use crate::options::RedisBusOptions;
use crate::publisher::baseline;
use crate::tail::{self, CHANNEL_CAPACITY, Tail};
use crate::to_bus_error;
use mcp_fleet_bus::shard::Routing;

/// The tailing side of a Redis bus.
pub(crate) type Tails = Shards<RedisReader>;

/// The shards of `options`, read through `endpoint`.
pub(crate) fn tails(endpoint: Arc<Endpoint>, options: &RedisBusOptions, counters: Arc<BusCounters>) -> Tails {
    let shards = (0..options.shards).map(|i| Arc::new(options.shard(i))).collect();
    let by_interest = options.routing == Routing::Interest;
    Shards::new(RedisReader { endpoint, shards, counters }, options.shards, by_interest, CHANNEL_CAPACITY)
}

/// Reads a shard's stream key on a tailing connection.
pub(crate) struct RedisReader {
    endpoint: Arc<Endpoint>,
    /// Each shard's options (its stream key).
    shards: Vec<Arc<RedisBusOptions>>,
    counters: Arc<BusCounters>,
}

impl RedisReader {
    /// The options of shard `index`.
    pub(crate) fn shard(&self, index: usize) -> &RedisBusOptions {
        &self.shards[index]
    }

    /// Open a tailing connection to `shard`, read where its stream stands, and spawn the task
    /// feeding `tx` from there.
    async fn start_tail(
        &self,
        shard: usize,
        tx: mpsc::Sender<BusItem>,
        stop: Arc<Notify>,
        status: StatusCell,
    ) -> Result<(), BusError> {
        let options = &self.shards[shard];
        let mut conn = tail::open_tail_connection(&self.endpoint, options).await?;
        let now = baseline(&mut conn, options).await.map_err(to_bus_error)?;
        let tail = Tail {
            endpoint: self.endpoint.clone(),
            options: options.clone(),
            cursor: Cursor::at(now),
            positioned: self.shards.len() == 1,
            tx,
            stop,
            counters: self.counters.clone(),
            status,
        };
        tokio::spawn(tail.run(conn));
        Ok(())
    }
}

impl ShardReader for RedisReader {
    fn start(
        &self,
        shard: usize,
        tx: mpsc::Sender<BusItem>,
        stop: Arc<Notify>,
        status: StatusCell,
    ) -> BoxFuture<'_, Result<(), BusError>> {
        Box::pin(self.start_tail(shard, tx, stop, status))
    }
}
