//! The node's bus consumer, supervised.
//!
//! One bus subscription per node feeds the [`EventIntake`]. The consumer runs in a task of its own;
//! the supervisor awaits it. If the bus stream ends or the task dies (a panic while
//! delivering), the supervisor marks the node deaf, subscribes again with backoff, reports a
//! [`GapReason::ConsumerRestarted`] (whatever was published meanwhile may be lost: invalidate
//! conservatively) and starts a new consumer. The health monitor (`monitor`) watches the rest.

use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use mcp_fleet_bus::{Backoff, BusItem, BusStream, GapReason, ServerEventBus};

use super::health::BusHealth;
use super::intake::EventIntake;
use crate::metrics::Metrics;
use crate::shutdown::Shutdown;

/// First delay before subscribing again after the consumer stopped (doubles up to the max).
const RESUBSCRIBE_MIN: Duration = Duration::from_millis(100);
/// Longest delay between subscription attempts.
const RESUBSCRIBE_MAX: Duration = Duration::from_secs(5);

/// What the consumer and its supervisor need.
#[derive(Clone)]
pub(crate) struct ConsumerParts {
    pub(crate) bus: Arc<dyn ServerEventBus>,
    pub(crate) intake: Arc<EventIntake>,
    pub(crate) health: Arc<BusHealth>,
    pub(crate) metrics: Metrics,
    pub(crate) stop: Shutdown,
}

/// Supervise the consumer, starting with the already subscribed `events`, until shutdown.
pub(crate) async fn run(mut parts: ConsumerParts, events: BusStream) {
    let mut events = Some(events);
    loop {
        let stream = match events.take() {
            Some(stream) => stream,
            None => match resubscribe(&mut parts).await {
                Some(stream) => {
                    parts.intake.gap(&GapReason::ConsumerRestarted);
                    stream
                }
                None => return,
            },
        };
        // Asked after subscribing: every event after this position will be heard. In the
        // background, so a bus slow to answer (a failover in progress) never holds back the
        // consumer or its health; a node that heard an event first ignores the answer.
        tokio::spawn(learn_position(parts.bus.clone(), parts.intake.clone()));
        parts.health.set_supervised(true);
        let consumer = tokio::spawn(consume(stream, parts.intake.clone()));
        let abort = consumer.abort_handle();
        let ended = tokio::select! {
            ended = consumer => ended,
            _ = parts.stop.recv() => {
                abort.abort();
                return;
            }
        };
        parts.health.set_supervised(false);
        parts.metrics.consumer_restarts.inc();
        match ended {
            Ok(()) => tracing::error!("event bus stream ended; subscribing again"),
            Err(err) => tracing::error!(error = %err, "event bus consumer died; subscribing again"),
        }
    }
}

/// Subscribe again with backoff until it works (`Some`) or the handler shuts down.
async fn resubscribe(parts: &mut ConsumerParts) -> Option<BusStream> {
    let mut backoff = Backoff::new(RESUBSCRIBE_MIN, RESUBSCRIBE_MAX);
    loop {
        let delay = backoff.next_delay();
        tokio::select! {
            _ = tokio::time::sleep(delay) => {}
            _ = parts.stop.recv() => return None,
        }
        match parts.bus.subscribe().await {
            Ok(stream) => {
                tracing::info!("event bus consumer subscribed again");
                return Some(stream);
            }
            Err(err) => tracing::warn!(error = %err, retry_in = ?backoff.peek(), "event bus subscription failed"),
        }
    }
}

/// Feed the bus stream to the intake until it ends.
async fn consume(mut events: BusStream, intake: Arc<EventIntake>) {
    while let Some(item) = events.next().await {
        match item {
            BusItem::Event(event) => intake.deliver(&event),
            BusItem::Gap(reason) => intake.gap(&reason),
        }
    }
}

/// Tell the intake where the bus's history stands, when the bus can say.
async fn learn_position(bus: Arc<dyn ServerEventBus>, intake: Arc<EventIntake>) {
    match bus.position().await {
        Ok(Some(position)) => intake.started_at(position),
        // A split bus names no position, but its occurrences (all on one shard) have one.
        Ok(None) => match bus.occurrence_position().await {
            Ok(Some(position)) => intake.occurrences_started_at(position),
            Ok(None) => {}
            Err(e) => tracing::debug!(error = %e, "the occurrences' position is unknown"),
        },
        Err(e) => tracing::debug!(error = %e, "the bus's position is unknown; resumes wait for its first event"),
    }
}
