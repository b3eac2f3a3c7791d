//! [`Shards`]: which shards every subscription of a bus reads, and starting and stopping those
//! reading tasks through the backend's [`ShardReader`].
//!
//! Without interest routing every subscription reads every shard. With it a subscription reads
//! shard 0 (the fleet-wide events) and each shard some stream of this node follows a subject
//! on: [`Shards::gain`] counts the subjects' shards, starts the readers of those that were not
//! followed — from where their streams stand now, before it resolves — and [`Shards::lose`]
//! stops the readers of shards nobody follows any more. A stream is acknowledged only after its
//! gain resolved, so an event published after its ack is after the position of a running
//! reader: never missed. Stopping a reader loses nothing anybody follows.
//!
//! Subscribing and gaining take turns (an async mutex held while readers start), so a gain
//! never resolves while another subscription still lacks one of its shards.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::{Notify, mpsc};

use super::shards_of;
use crate::bus::{BoxFuture, BusError, BusItem, BusStatus, BusStream};
use crate::interest::Subject;
use crate::status::StatusCell;

/// How a backend reads one shard: the one thing [`Shards`] needs from it.
///
/// ```
/// use std::sync::Arc;
/// use mcp_fleet_bus::shard::ShardReader;
/// use mcp_fleet_bus::{BoxFuture, BusError, BusItem, StatusCell};
/// use tokio::sync::{Notify, mpsc};
///
/// /// A reader of shards that never hold anything: it runs until stopped.
/// struct Quiet;
///
/// impl ShardReader for Quiet {
///     fn start(&self, _shard: usize, tx: mpsc::Sender<BusItem>, stop: Arc<Notify>, _status: StatusCell)
///         -> BoxFuture<'_, Result<(), BusError>> {
///         tokio::spawn(async move { tokio::select! { () = stop.notified() => {}, () = tx.closed() => {} } });
///         Box::pin(async { Ok(()) })
///     }
/// }
/// ```
pub trait ShardReader: Send + Sync + 'static {
    /// Find where `shard`'s stream stands now and spawn a task feeding `tx` with every event
    /// stored there from then on (and the gaps, per the bus contract), until `stop` is notified
    /// or `tx` closes; `status` is the shard's consumer state, for the task to keep. Resolves
    /// once the task reads from that position.
    fn start(
        &self,
        shard: usize,
        tx: mpsc::Sender<BusItem>,
        stop: Arc<Notify>,
        status: StatusCell,
    ) -> BoxFuture<'_, Result<(), BusError>>;
}

/// The reading side of a sharded bus (see the module docs).
///
/// ```
/// # use std::sync::Arc;
/// # use mcp_fleet_bus::shard::{ShardReader, Shards};
/// # use mcp_fleet_bus::{BoxFuture, BusError, BusItem, StatusCell, Subject};
/// # use tokio::sync::{Notify, mpsc};
/// # struct Quiet;
/// # impl ShardReader for Quiet {
/// #     fn start(&self, _: usize, tx: mpsc::Sender<BusItem>, stop: Arc<Notify>, _: StatusCell)
/// #         -> BoxFuture<'_, Result<(), BusError>> {
/// #         tokio::spawn(async move { tokio::select! { () = stop.notified() => {}, () = tx.closed() => {} } });
/// #         Box::pin(async { Ok(()) })
/// #     }
/// # }
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let shards = Shards::new(Quiet, 8, true, 64);
/// let _events = shards.subscribe().await?;
/// let tenant = [Subject::Scope("t1".into())];
/// shards.gain(&tenant).await?; // now reading shard 0 and t1's
/// shards.lose(&tenant); // t1's reader stops
/// # Ok::<(), BusError>(()) });
/// ```
pub struct Shards<R> {
    reader: R,
    /// The consumers' state, one cell per shard (a shard nobody reads counts as connected).
    status: Vec<StatusCell>,
    by_interest: bool,
    /// Items buffered between a subscription's readers and its consumer.
    capacity: usize,
    /// Held while readers start (see the module docs).
    starting: tokio::sync::Mutex<()>,
    following: Mutex<Following>,
}

#[derive(Default)]
struct Following {
    /// Per shard, how many gains are outstanding.
    wanted: Vec<usize>,
    subscriptions: Vec<Subscription>,
}

/// One subscription's channel, and a stop signal for each shard it reads.
struct Subscription {
    tx: mpsc::Sender<BusItem>,
    running: HashMap<usize, Arc<Notify>>,
}

impl<R: ShardReader> Shards<R> {
    /// `count` shards (at least 1) read through `reader`; by interest or all of them; each
    /// subscription's channel holds `capacity` items.
    pub fn new(reader: R, count: usize, by_interest: bool, capacity: usize) -> Self {
        let count = count.max(1);
        let following = Following { wanted: vec![0; count], subscriptions: Vec::new() };
        Shards {
            reader,
            status: (0..count).map(|_| StatusCell::connected()).collect(),
            by_interest,
            capacity: capacity.max(1),
            starting: tokio::sync::Mutex::new(()),
            following: Mutex::new(following),
        }
    }

    /// The backend's reader.
    pub fn reader(&self) -> &R {
        &self.reader
    }

    /// How many shards the bus has.
    pub fn count(&self) -> usize {
        self.status.len()
    }

    /// Whether only shard 0 and the followed shards are read.
    pub fn by_interest(&self) -> bool {
        self.by_interest
    }

    /// The first shard whose readers are not connected, or connected.
    pub fn status(&self) -> BusStatus {
        let mut shards = self.status.iter().map(StatusCell::get);
        shards.find(|status| !status.is_connected()).unwrap_or(BusStatus::Connected)
    }

    /// Shard `index`'s consumer state, for a backend reading that shard outside a subscription
    /// of these (resuming one from a position, say).
    pub fn status_of(&self, index: usize) -> StatusCell {
        self.status[index].clone()
    }

    /// A new subscription, reading every shard it should from where each stands now.
    pub async fn subscribe(&self) -> Result<BusStream, BusError> {
        let _turn = self.starting.lock().await;
        let (tx, rx) = mpsc::channel::<BusItem>(self.capacity);
        let followed: Vec<usize> = {
            let following = self.lock();
            let wanted = |shard: &usize| !self.by_interest || *shard == 0 || following.wanted[*shard] > 0;
            (0..self.count()).filter(wanted).collect()
        };
        let mut running = HashMap::new();
        for shard in followed {
            running.insert(shard, self.start(shard, &tx).await?);
        }
        let mut following = self.lock();
        following.subscriptions.retain(|s| !s.tx.is_closed());
        following.subscriptions.push(Subscription { tx, running });
        Ok(Box::pin(receiver_stream(rx)) as BusStream)
    }

    /// Count a gain of `subjects`; start every subscription's reader of each shard that nobody
    /// followed, and resolve once they run. On failure the gain is undone.
    pub async fn gain(&self, subjects: &[Subject]) -> Result<(), BusError> {
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

    /// Undo one gain of `subjects`: the readers of shards nobody follows any more stop.
    pub fn lose(&self, subjects: &[Subject]) {
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
        let mut shards: Vec<usize> = subjects.iter().flat_map(|s| shards_of(s, self.count())).collect();
        shards.sort_unstable();
        shards.dedup();
        shards
    }

    /// Start `shard`'s reader in every live subscription that lacks it.
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

    /// Start `shard`'s reader feeding `tx`; returns its stop signal.
    async fn start(&self, shard: usize, tx: &mpsc::Sender<BusItem>) -> Result<Arc<Notify>, BusError> {
        let stop = Arc::new(Notify::new());
        self.status[shard].set_connected();
        self.reader.start(shard, tx.clone(), stop.clone(), self.status[shard].clone()).await?;
        Ok(stop)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Following> {
        // Counts and maps are updated in place by short critical sections that do not panic.
        self.following.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// `rx` as a stream of its items.
fn receiver_stream(mut rx: mpsc::Receiver<BusItem>) -> impl futures_core::Stream<Item = BusItem> + Send {
    futures_util::stream::poll_fn(move |cx| rx.poll_recv(cx))
}
