//! [`Tails`]: which shards every subscription of this bus tails, and starting and stopping
//! those tailing tasks.
//!
//! Without interest routing every subscription tails every shard. With it
//! ([`Routing::Interest`]) a subscription tails shard 0 (the fleet-wide events) and each shard
//! some stream of this node follows a subject on: [`Tails::gain`] counts the subjects' shards,
//! starts the tails of those that were not followed — from where their streams stand now,
//! before it resolves — and [`Tails::lose`] stops the tails of shards nobody follows any more.
//! A stream is acknowledged only after its gain resolved, so an event published after its ack
//! is after the cursor of a running tail: never missed. Stopping a tail loses nothing anybody
//! follows.
//!
//! Subscribing and gaining take turns (an async mutex held while tails start), so a gain never
//! resolves while another subscription still lacks one of its shards.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use mcp_fleet_bus::{BusCounters, BusError, BusItem, BusStatus, BusStream, StatusCell, Subject};
use tokio::sync::{Notify, mpsc};
use tokio_stream::wrappers::ReceiverStream;

use crate::cursor::Cursor;
use crate::endpoint::Endpoint;
use crate::options::{RedisBusOptions, Routing};
use crate::publisher::baseline;
use crate::shard::shards_of;
use crate::tail::{self, CHANNEL_CAPACITY, Tail};
use crate::to_bus_error;

/// The tailing side of a bus.
pub(crate) struct Tails {
    endpoint: Arc<Endpoint>,
    /// Each shard's options (its stream key).
    shards: Vec<Arc<RedisBusOptions>>,
    counters: Arc<BusCounters>,
    /// The consumers' state, one cell per shard (a shard nobody tails counts as connected).
    status: Vec<StatusCell>,
    by_interest: bool,
    /// Held while tails start (see the module docs).
    starting: tokio::sync::Mutex<()>,
    following: Mutex<Following>,
}

#[derive(Default)]
struct Following {
    /// Per shard, how many gains are outstanding.
    wanted: Vec<usize>,
    subscriptions: Vec<Subscription>,
}

/// One subscription's channel, and a stop signal for each shard it tails.
struct Subscription {
    tx: mpsc::Sender<BusItem>,
    running: HashMap<usize, Arc<Notify>>,
}

impl Tails {
    pub(crate) fn new(endpoint: Arc<Endpoint>, options: &RedisBusOptions, counters: Arc<BusCounters>) -> Self {
        let shards: Vec<_> = (0..options.shards).map(|i| Arc::new(options.shard(i))).collect();
        let following = Following { wanted: vec![0; shards.len()], subscriptions: Vec::new() };
        Tails {
            endpoint,
            status: shards.iter().map(|_| StatusCell::connected()).collect(),
            shards,
            counters,
            by_interest: options.routing == Routing::Interest,
            starting: tokio::sync::Mutex::new(()),
            following: Mutex::new(following),
        }
    }

    /// The options of shard `index`.
    pub(crate) fn shard(&self, index: usize) -> &RedisBusOptions {
        &self.shards[index]
    }

    /// How many shards the bus has.
    pub(crate) fn count(&self) -> usize {
        self.shards.len()
    }

    /// The first shard whose tails are not connected, or connected.
    pub(crate) fn status(&self) -> BusStatus {
        let mut shards = self.status.iter().map(StatusCell::get);
        shards.find(|status| !status.is_connected()).unwrap_or(BusStatus::Connected)
    }

    /// A new subscription, tailing every shard it should from where each stands now.
    pub(crate) async fn subscribe(&self) -> Result<BusStream, BusError> {
        let _turn = self.starting.lock().await;
        let (tx, rx) = mpsc::channel::<BusItem>(CHANNEL_CAPACITY);
        let followed: Vec<usize> = {
            let following = self.lock();
            let wanted = |shard: &usize| !self.by_interest || *shard == 0 || following.wanted[*shard] > 0;
            (0..self.shards.len()).filter(wanted).collect()
        };
        let mut running = HashMap::new();
        for shard in followed {
            running.insert(shard, self.start(shard, &tx).await?);
        }
        let mut following = self.lock();
        following.subscriptions.retain(|s| !s.tx.is_closed());
        following.subscriptions.push(Subscription { tx, running });
        Ok(Box::pin(ReceiverStream::new(rx)) as BusStream)
    }

    /// Count a gain of `subjects`; start every subscription's tail of each shard that nobody
    /// followed, and resolve once they run. On failure the gain is undone.
    pub(crate) async fn gain(&self, subjects: &[Subject]) -> Result<(), BusError> {
        if !self.by_interest {
            return Ok(());
        }
        let _turn = self.starting.lock().await;
        let fresh: Vec<usize> = {
            let mut following = self.lock();
            let mut fresh = Vec::new();
            for shard in self.shards_of(subjects) {
                following.wanted[shard] += 1;
                if following.wanted[shard] == 1 && shard != 0 {
                    fresh.push(shard);
                }
            }
            fresh
        };
        for shard in fresh {
            if let Err(err) = self.start_everywhere(shard).await {
                self.lose(subjects);
                return Err(err);
            }
        }
        Ok(())
    }

    /// Undo one gain of `subjects`: the tails of shards nobody follows any more stop.
    pub(crate) fn lose(&self, subjects: &[Subject]) {
        if !self.by_interest {
            return;
        }
        let mut following = self.lock();
        for shard in self.shards_of(subjects) {
            let Some(left) = following.wanted[shard].checked_sub(1) else { continue };
            following.wanted[shard] = left;
            if left == 0 && shard != 0 {
                for subscription in &mut following.subscriptions {
                    if let Some(stop) = subscription.running.remove(&shard) {
                        stop.notify_one();
                    }
                }
                self.status[shard].set_connected();
            }
        }
    }

    /// Every shard `subjects` name, once per subject (a subject counts once per shard).
    fn shards_of(&self, subjects: &[Subject]) -> Vec<usize> {
        let mut shards: Vec<usize> = subjects.iter().flat_map(|s| shards_of(s, self.shards.len())).collect();
        shards.sort_unstable();
        shards.dedup();
        shards
    }

    /// Start `shard`'s tail in every live subscription that lacks it.
    async fn start_everywhere(&self, shard: usize) -> Result<(), BusError> {
        let lacking: Vec<mpsc::Sender<BusItem>> = {
            let mut following = self.lock();
            following.subscriptions.retain(|s| !s.tx.is_closed());
            following.subscriptions.iter().filter(|s| !s.running.contains_key(&shard)).map(|s| s.tx.clone()).collect()
        };
        for tx in lacking {
            let stop = self.start(shard, &tx).await?;
            let mut following = self.lock();
            match following.subscriptions.iter_mut().find(|s| s.tx.same_channel(&tx)) {
                Some(subscription) => _ = subscription.running.insert(shard, stop),
                None => stop.notify_one(),
            }
        }
        Ok(())
    }

    /// Open a tailing connection to `shard`, read where its stream stands, and spawn the task
    /// feeding `tx` from there; returns its stop signal.
    async fn start(&self, shard: usize, tx: &mpsc::Sender<BusItem>) -> Result<Arc<Notify>, BusError> {
        let options = &self.shards[shard];
        let mut conn = tail::open_tail_connection(&self.endpoint, options).await?;
        let now = baseline(&mut conn, options).await.map_err(to_bus_error)?;
        let stop = Arc::new(Notify::new());
        let tail = Tail {
            endpoint: self.endpoint.clone(),
            options: options.clone(),
            cursor: Cursor::at(now),
            positioned: self.shards.len() == 1,
            tx: tx.clone(),
            stop: stop.clone(),
            counters: self.counters.clone(),
            status: self.status[shard].clone(),
        };
        self.status[shard].set_connected();
        tokio::spawn(tail.run(conn));
        Ok(stop)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Following> {
        // Counts and maps are updated in place by short critical sections that do not panic.
        self.following.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
