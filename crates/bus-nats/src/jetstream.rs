//! JetStream mode: publishing with an acknowledged stream sequence as the version, and the
//! per-subscription task that reads the stream through an ordered consumer.
//!
//! The task tracks the last stream sequence it delivered. Every consumer it (re)creates
//! starts at `last + 1`, so a reconnect or a failed consumer loses nothing the stream still
//! holds. The stream holds only this bus's subjects, so its sequences are contiguous: a first
//! message with sequence above `last + 1` means retention discarded the ones between, which
//! is reported as [`GapReason::HistoryTrimmed`]. A sequence at or below `last` is a replay
//! and is skipped.

use std::sync::Arc;

use async_nats::jetstream::consumer::DeliverPolicy;
use async_nats::jetstream::consumer::pull::{Ordered, OrderedConfig};
use async_nats::jetstream::{self, Context};
use futures_util::StreamExt;
use mcp_fleet_bus::{BusCounters, BusError, BusItem, BusStream, Change, EventEnvelope, GapReason};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;

use crate::options::NatsBusOptions;
use crate::subject::subject_for;
use crate::{CHANNEL_CAPACITY, backend_error, within};

/// Make sure the stream exists (created with the configured retention if missing).
pub(crate) async fn ensure_stream(js: &Context, options: &NatsBusOptions) -> Result<(), BusError> {
    let config = jetstream::stream::Config {
        name: options.stream_name.clone(),
        subjects: vec![options.subject_filter()],
        max_messages: options.max_messages,
        max_age: options.max_age,
        ..Default::default()
    };
    within(options.connect_timeout, js.get_or_create_stream(config)).await?.map_err(backend_error)?;
    Ok(())
}

/// Publish and wait for the stream's ack; the version is the assigned stream sequence.
pub(crate) async fn publish(js: &Context, options: &NatsBusOptions, change: Change) -> Result<EventEnvelope, BusError> {
    let subject = subject_for(&options.subject_prefix, &change);
    let mut env = EventEnvelope::new(change, &options.node_id);
    let publish = async {
        let ack_future = js.publish(subject, env.encode().into()).await.map_err(backend_error)?;
        ack_future.await.map_err(backend_error)
    };
    let ack = within(options.publish_timeout, publish).await??;
    env.version = ack.sequence;
    Ok(env)
}

/// Start a consumer after stream sequence `after`, or at the stream's current end when
/// `None`; once this returns, the consumer exists and every later message will be delivered.
pub(crate) async fn subscribe(
    js: Context,
    options: Arc<NatsBusOptions>,
    counters: Arc<BusCounters>,
    after: Option<u64>,
) -> Result<BusStream, BusError> {
    let last = match after {
        Some(sequence) => sequence,
        None => stream_end(&js, &options).await?,
    };
    let messages = open_consumer(&js, &options, last).await?;
    let (tx, rx) = mpsc::channel(CHANNEL_CAPACITY);
    let tail = JetStreamTail { js, options, last, tx, counters };
    tokio::spawn(tail.run(messages));
    Ok(Box::pin(ReceiverStream::new(rx)))
}

/// The stream's last sequence.
async fn stream_end(js: &Context, options: &NatsBusOptions) -> Result<u64, BusError> {
    let stream = within(options.publish_timeout, js.get_stream(&options.stream_name)).await?.map_err(backend_error)?;
    Ok(stream.cached_info().state.last_sequence)
}

/// An ordered consumer delivering from stream sequence `last + 1`.
async fn open_consumer(js: &Context, options: &NatsBusOptions, last: u64) -> Result<Ordered, BusError> {
    let open = async {
        let stream = js.get_stream_no_info(&options.stream_name).await.map_err(backend_error)?;
        let config = OrderedConfig {
            filter_subject: options.subject_filter(),
            deliver_policy: DeliverPolicy::ByStartSequence { start_sequence: last + 1 },
            ..Default::default()
        };
        let consumer = stream.create_consumer(config).await.map_err(backend_error)?;
        consumer.messages().await.map_err(backend_error)
    };
    within(options.publish_timeout, open).await?
}

/// The consumer is gone; the task ends.
struct Closed;

/// One subscription's reading task.
struct JetStreamTail {
    js: Context,
    options: Arc<NatsBusOptions>,
    /// Last stream sequence delivered (or the stream's end when the subscription began).
    last: u64,
    tx: mpsc::Sender<BusItem>,
    counters: Arc<BusCounters>,
}

impl JetStreamTail {
    async fn run(mut self, mut messages: Ordered) {
        loop {
            let next = tokio::select! {
                _ = self.tx.closed() => return,
                next = messages.next() => next,
            };
            let outcome = match next {
                Some(Ok(message)) => self.deliver(&message).await,
                Some(Err(err)) => self.reopen(&err.to_string()).await.map(|fresh| messages = fresh),
                None => self.reopen("consumer stream ended").await.map(|fresh| messages = fresh),
            };
            if outcome.is_err() {
                return;
            }
        }
    }

    async fn deliver(&mut self, message: &jetstream::Message) -> Result<(), Closed> {
        let sequence = match message.info() {
            Ok(info) => info.stream_sequence,
            Err(err) => return self.undecodable(&format!("no jetstream metadata: {err}")),
        };
        if sequence <= self.last {
            return Ok(()); // a replay after the consumer was recreated
        }
        if sequence > self.last + 1 {
            tracing::warn!(stream = %self.options.stream_name, after = self.last, sequence, "nats bus: history discarded, reporting a gap");
            BusCounters::bump(&self.counters.gaps);
            self.tx.send(BusItem::Gap(GapReason::HistoryTrimmed)).await.map_err(|_| Closed)?;
        }
        self.last = sequence;
        match EventEnvelope::decode(&message.payload) {
            Ok(mut env) => {
                env.version = sequence;
                BusCounters::bump(&self.counters.received);
                self.tx.send(BusItem::Event(env)).await.map_err(|_| Closed)
            }
            Err(err) => self.undecodable(&err.to_string()),
        }
    }

    fn undecodable(&self, why: &str) -> Result<(), Closed> {
        BusCounters::bump(&self.counters.undecodable);
        tracing::warn!(stream = %self.options.stream_name, why, "nats bus: skipping undecodable message");
        Ok(())
    }

    /// Recreate the consumer from `last + 1`, with exponential backoff, until it works or the
    /// subscriber is gone.
    async fn reopen(&self, why: &str) -> Result<Ordered, Closed> {
        tracing::warn!(stream = %self.options.stream_name, why, after = self.last, "nats bus: recreating consumer");
        let mut delay = self.options.reconnect_min;
        loop {
            tokio::select! {
                _ = self.tx.closed() => return Err(Closed),
                _ = tokio::time::sleep(delay) => {}
            }
            match open_consumer(&self.js, &self.options, self.last).await {
                Ok(messages) => return Ok(messages),
                Err(err) => tracing::warn!(error = %err, "nats bus: consumer recreation failed"),
            }
            delay = (delay * 2).min(self.options.reconnect_max);
        }
    }
}
