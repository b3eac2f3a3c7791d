//! [`NatsReader`]: JetStream mode's shards — each a stream with its own publisher and epoch —
//! and how one is read for the bus crate's [`Shards`], which decides which shards each
//! subscription reads (all of them, or by interest) and when.
//!
//! With one shard (the default) this is the one stream the crate docs describe.

use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use async_nats::jetstream::Context;
use mcp_fleet_bus::shard::{ShardReader, Shards};
use mcp_fleet_bus::{BoxFuture, BusCounters, BusError, BusItem, StatusCell};
use tokio::sync::{Notify, mpsc};

use super::publish::Publisher;
use super::stream::locate;
use super::tail::{self, Shared};
use crate::CHANNEL_CAPACITY;
use crate::options::NatsBusOptions;

/// One shard: its stream's options, the epoch its publisher and consumers share, its publisher.
struct ShardStream {
    options: Arc<NatsBusOptions>,
    epoch: Arc<AtomicU64>,
    publisher: Publisher,
}

/// Reads (and publishes to) the shards of a JetStream-mode bus.
pub(crate) struct NatsReader {
    js: Context,
    counters: Arc<BusCounters>,
    shards: Vec<ShardStream>,
}

/// The shards of `options`, each stream located (created when missing) before this resolves.
pub(crate) async fn connect(
    js: &Context,
    options: &NatsBusOptions,
    counters: Arc<BusCounters>,
) -> Result<Shards<NatsReader>, BusError> {
    let mut shards = Vec::with_capacity(options.shards);
    for index in 0..options.shards {
        let shard = Arc::new(options.shard(index));
        let epoch = Arc::new(AtomicU64::new(locate(js, &shard).await?.0.epoch));
        let publisher = Publisher::new(js.clone(), shard.clone(), epoch.clone());
        shards.push(ShardStream { options: shard, epoch, publisher });
    }
    let by_interest = options.routing == mcp_fleet_bus::shard::Routing::Interest;
    let reader = NatsReader { js: js.clone(), counters, shards };
    Ok(Shards::new(reader, options.shards, by_interest, CHANNEL_CAPACITY))
}

impl NatsReader {
    /// Shard `index`'s publisher.
    pub(crate) fn publisher(&self, index: usize) -> &Publisher {
        &self.shards[index].publisher
    }

    /// Shard `index`'s options (its stream's name).
    pub(crate) fn shard_options(&self, index: usize) -> &NatsBusOptions {
        &self.shards[index].options
    }

    /// Whether events keep their stream sequence as their version (one shard only).
    pub(crate) fn positioned(&self) -> bool {
        self.shards.len() == 1
    }

    /// What a consumer task of shard `index` shares with its publisher, keeping `status`.
    pub(crate) fn shared(&self, index: usize, status: StatusCell) -> Shared {
        let shard = &self.shards[index];
        Shared {
            js: self.js.clone(),
            options: shard.options.clone(),
            counters: self.counters.clone(),
            epoch: shard.epoch.clone(),
            rollbacks: shard.publisher.rollbacks(),
            acknowledged: shard.publisher.tip(),
            status,
            positioned: self.positioned(),
        }
    }
}

impl ShardReader for NatsReader {
    fn start(
        &self,
        shard: usize,
        tx: mpsc::Sender<BusItem>,
        stop: Arc<Notify>,
        status: StatusCell,
    ) -> BoxFuture<'_, Result<(), BusError>> {
        Box::pin(tail::start(self.shared(shard, status), None, tx, stop))
    }
}
