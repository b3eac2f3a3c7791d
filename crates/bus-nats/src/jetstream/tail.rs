//! The JetStream consumer task: one per subscription, reading the stream through an ephemeral
//! pull consumer (no acks, idle heartbeats) that it re-creates whenever something is off.
//!
//! It tracks the epoch and the last stream sequence it delivered. Every consumer it (re)creates
//! starts at `last + 1`, so a reconnect, a server restart or a lost consumer loses nothing the
//! stream still holds. The stream holds only this bus's subjects, so its sequences are
//! contiguous; when a message arrives with a sequence above `last + 1`:
//! - the stream no longer holds `last + 1` (retention discarded it): a
//!   [`GapReason::HistoryTrimmed`], and delivery goes on;
//! - it still does (a message was lost in flight): the consumer is re-created from `last + 1`
//!   once; if the same happens again at the same place, it is reported as a gap.
//!
//! A sequence at or below `last` is a replay and is skipped.
//!
//! **The watch.** The server may restart, or the stream be deleted, without the consumer ever
//! saying so (an ephemeral consumer vanishes with a restart; a subscription can stay silent).
//! So whenever nothing arrived for [`NatsBusOptions::health_interval`], the task reads the
//! stream's state:
//! - the stream is missing: it is created again — a new epoch;
//! - the epoch (creation time) differs from the one being read: the history is gone. Report
//!   [`GapReason::EpochChanged`] and continue from the start of the new stream;
//! - the stream ends **before** `last` in the same epoch: it was rolled back — an R1 stream
//!   that lost its tail but kept its creation time (a host crash before fsync, a restored
//!   volume snapshot, `nats stream restore`). The sequences after its end will be reused by
//!   new events, which a consumer opened at `last + 1` would skip without a word. Report the
//!   gap ([`GapReason::EpochChanged`], as the Redis cursor does for a counter that went back)
//!   and rebase on the stream's end. The same check runs before every consumer is re-created
//!   and when a subscription resumes from a position. A rollback that this bus's publisher
//!   finds (see `publish`) is a gap too: a consumer that had not read past the restored end
//!   has no other sign that acknowledged events are gone;
//! - the stream holds messages past `last` but nothing arrived for two checks in a row: the
//!   consumer is stalled; re-create it from `last + 1` (counted as a consumer restart). A
//!   fresh consumer stalled at the same place means the server cannot deliver those messages
//!   (a damaged store): [`GapReason::Unreadable`], and reading goes on after them;
//! - the state cannot be read: the consumer is reported as reconnecting until it can.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use async_nats::header::NATS_MESSAGE_ID;
use async_nats::jetstream::consumer::pull::{Config as PullConfig, Stream as Messages};
use async_nats::jetstream::consumer::{AckPolicy, DeliverPolicy};
use async_nats::jetstream::{self, Context};
use futures_util::StreamExt;
use mcp_fleet_bus::{
    Backoff, BusCounters, BusError, BusItem, BusStream, EventEnvelope, EventKind, GapReason, StatusCell,
};
use tokio::sync::{Notify, mpsc};
use tokio_stream::wrappers::ReceiverStream;

use super::publish::Tip;
use super::rules::{Place, fetch_again, give_up_stall, place, rolled_back};
use super::stream::{StreamState, holds_another, relocate};
use crate::options::NatsBusOptions;

use crate::{CHANNEL_CAPACITY, backend_error, within};

/// How long an abandoned consumer lives on the server (the task deletes the ones it replaces;
/// this only cleans up after a node that vanished).
const INACTIVE_THRESHOLD: std::time::Duration = std::time::Duration::from_secs(30);

/// What a subscription shares with the bus that started it.
pub(crate) struct Shared {
    pub(crate) js: Context,
    pub(crate) options: Arc<NatsBusOptions>,
    pub(crate) counters: Arc<BusCounters>,
    /// The epoch this bus publishes under; the task updates it when it finds a new one.
    pub(crate) epoch: Arc<AtomicU64>,
    /// Rollbacks of the stream this bus's publisher found (see `publish`): each is a gap.
    pub(crate) rollbacks: Arc<AtomicU64>,
    /// The newest event acknowledged to this bus's publisher: a stream that ends before it
    /// lost it (see [`JetStreamTail::publisher_lost`]).
    pub(crate) acknowledged: Arc<Mutex<Tip>>,
    pub(crate) status: StatusCell,
    /// Whether delivered events keep their version (false on a bus split into shards: see
    /// [`NatsBusOptions::shards`]).
    pub(crate) positioned: bool,
}

/// Start a consumer after `(epoch, sequence)` — a gap first when that epoch is gone, then from
/// the start of the current stream — or at the stream's current end when `None`; once this
/// returns, the consumer exists and every later message will be delivered.
pub(crate) async fn subscribe(shared: Shared, after: Option<(u64, u64)>) -> Result<BusStream, BusError> {
    let (tx, rx) = mpsc::channel(CHANNEL_CAPACITY);
    start(shared, after, tx, Arc::new(Notify::new())).await?;
    Ok(Box::pin(ReceiverStream::new(rx)))
}

/// Start a consumer task feeding `tx` as [`subscribe`] does, until `stop` is notified or `tx`
/// closes. A gap for a position that is gone is sent only when `tx` has room (`subscribe`'s
/// own channel is new and empty; a shard's reader passes no position).
pub(crate) async fn start(
    shared: Shared,
    after: Option<(u64, u64)>,
    tx: mpsc::Sender<BusItem>,
    stop: Arc<Notify>,
) -> Result<(), BusError> {
    let (state, _) = relocate(&shared.js, &shared.options).await?;
    shared.epoch.store(state.epoch, Ordering::SeqCst);
    let last = match after {
        None => state.last_sequence,
        Some((epoch, sequence)) if epoch == state.epoch && !rolled_back(&state, sequence) => sequence,
        Some((epoch, _)) if epoch == state.epoch => {
            BusCounters::bump(&shared.counters.gaps);
            // As below: the channel is new and empty.
            let _ = tx.try_send(BusItem::Gap(GapReason::EpochChanged));
            state.last_sequence
        }
        Some(_) => {
            BusCounters::bump(&shared.counters.gaps);
            // The channel is new and empty, so this cannot fail for lack of room.
            let _ = tx.try_send(BusItem::Gap(GapReason::EpochChanged));
            state.first_sequence.saturating_sub(1)
        }
    };
    let consumer = open_consumer(&shared.js, &shared.options, last).await?;
    let rollbacks_seen = shared.rollbacks.load(Ordering::SeqCst);
    shared.status.set_connected();
    let tail = JetStreamTail {
        shared,
        epoch: state.epoch,
        last,
        last_id: None,
        rollbacks_seen,
        lost_reported: Tip::default(),
        tx,
        stop,
        idle_checks: 0,
        retried_at: None,
        stalled_at: None,
    };
    tokio::spawn(tail.run(consumer));
    Ok(())
}

/// A pull consumer and its message stream.
struct Consumer {
    name: String,
    messages: Messages,
}

/// An ephemeral pull consumer delivering from stream sequence `last + 1`.
async fn open_consumer(js: &Context, options: &NatsBusOptions, last: u64) -> Result<Consumer, BusError> {
    let open = async {
        let stream = js.get_stream_no_info(&options.stream_name).await.map_err(backend_error)?;
        let config = PullConfig {
            filter_subject: options.subject_filter(),
            deliver_policy: DeliverPolicy::ByStartSequence { start_sequence: last + 1 },
            ack_policy: AckPolicy::None,
            inactive_threshold: INACTIVE_THRESHOLD,
            memory_storage: true,
            num_replicas: 1,
            ..Default::default()
        };
        let consumer = stream.create_consumer(config).await.map_err(backend_error)?;
        let name = consumer.cached_info().name.clone();
        let messages = consumer
            .stream()
            .heartbeat(options.health_interval)
            .expires(options.health_interval * 5)
            .messages()
            .await
            .map_err(backend_error)?;
        Ok(Consumer { name, messages })
    };
    within(options.publish_timeout, open).await?
}

/// The consumer is gone; the task ends.
struct Closed;

/// What to do after looking at the stream.
enum Verdict {
    /// Carry on with the current consumer.
    Fine,
    /// Re-create the consumer from `last + 1`.
    Reopen,
}

/// One subscription's reading task.
struct JetStreamTail {
    shared: Shared,
    /// The epoch of the history being read.
    epoch: u64,
    /// Last stream sequence delivered (or skipped), or where the subscription began.
    last: u64,
    /// The `Nats-Msg-Id` (event id) of the message at `last`, when this task delivered it: a
    /// stream rolled back and refilled past `last` has another message there.
    last_id: Option<String>,
    /// The publisher's rollback count this task has reported.
    rollbacks_seen: u64,
    /// The last acknowledged event this task found lost (reported once).
    lost_reported: Tip,
    tx: mpsc::Sender<BusItem>,
    /// Fired when the task should end although its subscription lives on (its shard is no
    /// longer followed).
    stop: Arc<Notify>,
    /// Consecutive watch checks that found messages waiting while nothing arrived.
    idle_checks: u32,
    /// `last` when the consumer was last re-created for a message lost in flight.
    retried_at: Option<u64>,
    /// `last` when the consumer was last re-created because it stalled.
    stalled_at: Option<u64>,
}

impl JetStreamTail {
    async fn run(mut self, mut consumer: Consumer) {
        let mut watch = tokio::time::interval(self.shared.options.health_interval);
        watch.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        watch.tick().await;
        let stop = self.stop.clone();
        loop {
            let verdict = tokio::select! {
                _ = self.tx.closed() => break,
                () = stop.notified() => break,
                next = consumer.messages.next() => match next {
                    Some(Ok(message)) => {
                        watch.reset();
                        self.idle_checks = 0;
                        // A message arriving proves the consumer works, whatever an earlier
                        // failed check said (while messages flow, the watch does not run).
                        self.shared.status.set_connected();
                        self.deliver(&message).await
                    }
                    Some(Err(err)) => {
                        tracing::warn!(stream = %self.shared.options.stream_name, error = %err, "nats bus: consumer failed");
                        Ok(Verdict::Reopen)
                    }
                    None => Ok(Verdict::Reopen),
                },
                _ = watch.tick() => self.watch().await,
            };
            match verdict {
                Ok(Verdict::Fine) => {}
                Ok(Verdict::Reopen) => match self.reopen(&consumer.name).await {
                    Ok(fresh) => consumer = fresh,
                    Err(Closed) => break,
                },
                Err(Closed) => break,
            }
        }
        self.delete_consumer(&consumer.name).await;
    }

    async fn deliver(&mut self, message: &jetstream::Message) -> Result<Verdict, Closed> {
        self.publisher_found_rollback().await?;
        let sequence = match message.info() {
            Ok(info) => info.stream_sequence,
            // Not a stream message (nothing in the stream is skipped by ignoring it).
            Err(err) => return self.undecodable(&format!("no jetstream metadata: {err}")).map(|()| Verdict::Fine),
        };
        match place(self.last, sequence) {
            Place::Replay => return Ok(Verdict::Fine),
            Place::Next => {}
            Place::AfterMissing => {
                if self.skipped_in_flight().await? {
                    return Ok(Verdict::Reopen);
                }
            }
        }
        self.last = sequence;
        self.last_id = message.headers.as_ref().and_then(|h| h.get(NATS_MESSAGE_ID)).map(|id| id.as_str().to_owned());
        match EventEnvelope::decode(&message.payload) {
            Ok(mut env) => {
                env.epoch = self.epoch;
                // Occurrences all travel on stream 0: its sequences order them on a split bus too.
                env.version = if self.shared.positioned || env.kind == EventKind::Occurred { sequence } else { 0 };
                BusCounters::bump(&self.shared.counters.received);
                self.send(BusItem::Event(env)).await?;
            }
            Err(err) => self.undecodable(&err.to_string())?,
        }
        Ok(Verdict::Fine)
    }

    /// A message past `last + 1` arrived: `true` when the skipped ones are still in the stream
    /// and should be fetched again (once per place); otherwise the gap is reported here.
    async fn skipped_in_flight(&mut self) -> Result<bool, Closed> {
        let still_stored = match relocate(&self.shared.js, &self.shared.options).await {
            Ok((state, _)) => state.epoch == self.epoch && state.first_sequence <= self.last + 1,
            Err(_) => false,
        };
        if fetch_again(still_stored, self.retried_at, self.last) {
            tracing::warn!(stream = %self.shared.options.stream_name, after = self.last, "nats bus: messages skipped in flight, fetching them again");
            self.retried_at = Some(self.last);
            return Ok(true);
        }
        tracing::warn!(stream = %self.shared.options.stream_name, after = self.last, "nats bus: history discarded, reporting a gap");
        self.gap(GapReason::HistoryTrimmed).await?;
        Ok(false)
    }

    /// Nothing arrived for a while: read the stream's state and decide (see the module docs).
    async fn watch(&mut self) -> Result<Verdict, Closed> {
        let acknowledged = self.acknowledged();
        let state = match relocate(&self.shared.js, &self.shared.options).await {
            Ok((state, _)) => state,
            Err(err) => {
                self.shared.status.set_reconnecting(&err);
                return Ok(Verdict::Fine);
            }
        };
        if state.epoch != self.epoch {
            self.rebase(state).await?;
            return Ok(Verdict::Reopen);
        }
        if self.is_rolled_back(&state).await {
            self.rewind(state).await?;
            return Ok(Verdict::Reopen);
        }
        self.publisher_found_rollback().await?;
        self.publisher_lost(&state, acknowledged, false).await?;
        if state.last_sequence > self.last {
            self.idle_checks += 1;
            if self.idle_checks >= 2 {
                return self.stalled(state).await;
            }
        } else {
            self.idle_checks = 0;
        }
        self.shared.status.set_connected();
        Ok(Verdict::Fine)
    }

    /// Messages wait in the stream but none arrived for two checks. The first time at this
    /// place, re-create the consumer; if a fresh consumer stalls at the same place, the server
    /// cannot deliver them (a damaged store): report a gap and skip past them rather than wait
    /// silently forever.
    async fn stalled(&mut self, state: StreamState) -> Result<Verdict, Closed> {
        let (stream, after, waiting) = (&self.shared.options.stream_name, self.last, state.last_sequence - self.last);
        if !give_up_stall(self.stalled_at, self.last) {
            tracing::warn!(%stream, after, waiting, "nats bus: consumer stalled");
            self.stalled_at = Some(self.last);
            return Ok(Verdict::Reopen);
        }
        tracing::error!(%stream, after, waiting, "nats bus: the stream cannot deliver its messages, skipping them with a gap");
        self.last = state.last_sequence;
        self.last_id = None;
        self.stalled_at = None;
        self.gap(GapReason::Unreadable).await?;
        Ok(Verdict::Reopen)
    }

    /// The stream was replaced: report the gap and continue from its first message.
    async fn rebase(&mut self, state: StreamState) -> Result<(), Closed> {
        tracing::warn!(stream = %self.shared.options.stream_name, old = self.epoch, new = state.epoch, "nats bus: the stream was recreated, reporting a gap");
        self.epoch = state.epoch;
        self.shared.epoch.store(state.epoch, Ordering::SeqCst);
        self.last = state.first_sequence.saturating_sub(1);
        self.last_id = None;
        self.retried_at = None;
        self.stalled_at = None;
        self.gap(GapReason::EpochChanged).await
    }

    /// Whether the stream (of the epoch being read) lost the tail this task read: it ends
    /// before `last`, or — refilled past it since — holds another message at `last`.
    async fn is_rolled_back(&self, state: &StreamState) -> bool {
        if rolled_back(state, self.last) {
            return true;
        }
        let Some(id) = &self.last_id else { return false };
        self.holds_another(state, self.last, id).await
    }

    /// Whether the stream holds another event than `id` at `sequence` ([`holds_another`]);
    /// `false` without a read when `sequence` is outside it (trimmed away: the next message is
    /// after a hole, reported as such; or past its end, which [`rolled_back`] covers).
    async fn holds_another(&self, state: &StreamState, sequence: u64, id: &str) -> bool {
        let stored = (state.first_sequence..=state.last_sequence).contains(&sequence);
        stored && holds_another(&self.shared.js, &self.shared.options, sequence, id).await
    }

    /// This bus's publisher found the stream rolled back: acknowledged events are gone, maybe
    /// before this task read them. Report a gap (reading goes on where it is: what follows
    /// `last` is the stream's new history).
    async fn publisher_found_rollback(&mut self) -> Result<(), Closed> {
        let found = self.shared.rollbacks.load(Ordering::SeqCst);
        if found == self.rollbacks_seen {
            return Ok(());
        }
        self.rollbacks_seen = found;
        tracing::warn!(stream = %self.shared.options.stream_name, after = self.last, "nats bus: the publisher found the stream rolled back, reporting a gap");
        self.gap(GapReason::EpochChanged).await
    }

    /// The newest event acknowledged to this bus's publisher, read before the stream's state
    /// is: an ack comes after the stream stored the event, so a state read later that ends
    /// before it proves the event lost.
    fn acknowledged(&self) -> Tip {
        self.shared.acknowledged.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// The stream (of `acknowledged`'s epoch) ends before the newest event acknowledged to this
    /// bus's publisher, or — when `compare_id` — holds another event at its sequence: it was
    /// rolled back, maybe before this task read that far (a consumer still reconnecting after
    /// the restart that restored it), and the publisher would only find out at its next
    /// publish, which may never come. Report a gap, once per lost event; reading goes on where
    /// it is.
    async fn publisher_lost(&mut self, state: &StreamState, acknowledged: Tip, compare_id: bool) -> Result<(), Closed> {
        if acknowledged.epoch != state.epoch || acknowledged == self.lost_reported {
            return Ok(());
        }
        let lost = acknowledged.sequence > state.last_sequence
            || (compare_id && self.holds_another(state, acknowledged.sequence, &acknowledged.event_id).await);
        if !lost {
            return Ok(());
        }
        tracing::warn!(stream = %self.shared.options.stream_name, acknowledged = acknowledged.sequence, end = state.last_sequence, "nats bus: the stream lost an event acknowledged to this node, reporting a gap");
        self.lost_reported = acknowledged;
        self.gap(GapReason::EpochChanged).await
    }

    /// The stream went back behind `last` in the same epoch: report the gap and continue after
    /// its end (the sequences past it are new events; those already there are what the gap
    /// covers).
    async fn rewind(&mut self, state: StreamState) -> Result<(), Closed> {
        tracing::warn!(stream = %self.shared.options.stream_name, after = self.last, end = state.last_sequence, "nats bus: the stream was rolled back behind this consumer, reporting a gap");
        self.last = state.last_sequence;
        self.last_id = None;
        self.retried_at = None;
        self.stalled_at = None;
        // One gap covers this rollback, whoever found it first.
        self.rollbacks_seen = self.shared.rollbacks.load(Ordering::SeqCst);
        self.gap(GapReason::EpochChanged).await
    }

    /// Re-create the consumer from `last + 1` (first checking that the stream is the one being
    /// read), with exponential backoff, until it works or the subscriber is gone.
    async fn reopen(&mut self, old: &str) -> Result<Consumer, Closed> {
        self.shared.status.set_reconnecting("re-creating the jetstream consumer");
        self.delete_consumer(old).await;
        let mut backoff = Backoff::new(self.shared.options.reconnect_min, self.shared.options.reconnect_max);
        loop {
            match self.try_reopen().await? {
                Ok(consumer) => {
                    BusCounters::bump(&self.shared.counters.consumer_restarts);
                    self.idle_checks = 0;
                    self.shared.status.set_connected();
                    tracing::info!(stream = %self.shared.options.stream_name, after = self.last, "nats bus: consumer re-created");
                    return Ok(consumer);
                }
                Err(err) => {
                    tracing::warn!(error = %err, "nats bus: consumer re-creation failed");
                    self.shared.status.set_reconnecting(&err);
                }
            }
            tokio::select! {
                _ = self.tx.closed() => return Err(Closed),
                _ = tokio::time::sleep(backoff.next_delay()) => {}
            }
        }
    }

    /// One attempt: locate the stream (creating it if it is missing; a new epoch is a gap),
    /// then open a consumer after `last`.
    async fn try_reopen(&mut self) -> Result<Result<Consumer, BusError>, Closed> {
        let acknowledged = self.acknowledged();
        let state = match relocate(&self.shared.js, &self.shared.options).await {
            Ok((state, _)) => state,
            Err(err) => return Ok(Err(err)),
        };
        if state.epoch != self.epoch {
            self.rebase(state).await?;
        } else if self.is_rolled_back(&state).await {
            self.rewind(state).await?;
        } else {
            // A rollback needs a restart, and a restart re-creates the consumer: only here can
            // the stream have been refilled past the acknowledged event since (another node
            // published at the reused sequences), so only here is its id compared too.
            self.publisher_lost(&state, acknowledged, true).await?;
        }
        Ok(open_consumer(&self.shared.js, &self.shared.options, self.last).await)
    }

    async fn delete_consumer(&self, name: &str) {
        let js = &self.shared.js;
        let delete = js.delete_consumer_from_stream(name, &self.shared.options.stream_name);
        // Best effort: an ephemeral consumer left behind expires after INACTIVE_THRESHOLD.
        let _ = within(self.shared.options.publish_timeout, delete).await;
    }

    async fn gap(&self, reason: GapReason) -> Result<(), Closed> {
        BusCounters::bump(&self.shared.counters.gaps);
        self.send(BusItem::Gap(reason)).await
    }

    async fn send(&self, item: BusItem) -> Result<(), Closed> {
        self.tx.send(item).await.map_err(|_| Closed)
    }

    fn undecodable(&self, why: &str) -> Result<(), Closed> {
        BusCounters::bump(&self.shared.counters.undecodable);
        tracing::warn!(stream = %self.shared.options.stream_name, why, "nats bus: skipping undecodable message");
        Ok(())
    }
}
