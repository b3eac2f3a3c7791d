//! [`EventsRuntime`]: what a handler keeps for the events extension — the declared types, the
//! log the bus consumer fills, the cursors — with `events/list`, `events/poll`, and the reads
//! `events/stream` makes too (`push`).
//!
//! A poll reads the log after the cursor's position and keeps what the caller may see: its
//! tenant's occurrences and the unscoped ones, of the type asked for, no older than `maxAgeMs`,
//! that the type's `match` hook accepts (then `transform`ed). It returns at most `maxEvents`
//! (bounded by [`Events::max_events`](super::Events::max_events)) with `hasMore` when more
//! wait, and a cursor past everything it looked at — filtered-out occurrences included, so the
//! next poll does not read them again. With nothing to return and `timeoutMs`, it waits for
//! the next occurrence (bounded by [`Events::max_poll_wait`](super::Events::max_poll_wait)).

use std::sync::Arc;
use std::time::Duration;

use mcp_fleet_bus::{EventEnvelope, now_ms};
use mcp_fleet_protocol::state::StateSigner;
use mcp_fleet_protocol::types::{DeliveryMode, EventOccurrence, PollEventsParams, PollEventsResult};
use mcp_fleet_protocol::{ErrorCode, RpcError};
use serde_json::{Value, json};

use super::cursor::Cursors;
use super::hooks::{Hooks, Subscription};
use super::log::{Entry, OccurrenceLog, Position};
use super::webhook::WebhookRuntime;
use super::{EventType, Events};
use crate::context::RequestContext;

/// Event types per `events/list` page.
const LIST_PAGE: usize = 100;

/// The extension's state on one node.
#[derive(Debug)]
pub(crate) struct EventsRuntime {
    pub(crate) events: Arc<Events>,
    pub(crate) log: OccurrenceLog,
    cursors: Cursors,
    /// Push streams open on this node (see [`StreamSlot`](super::push::StreamSlot)).
    pub(crate) open_streams: Arc<std::sync::atomic::AtomicUsize>,
    /// The webhook mode, once opened ([`EventsRuntime::open_shared`]).
    pub(crate) webhooks: std::sync::OnceLock<Arc<WebhookRuntime>>,
    /// The lifecycle hooks' state, once opened, when a type has hooks.
    pub(crate) hooks: std::sync::OnceLock<Arc<Hooks>>,
}

impl EventsRuntime {
    /// The runtime of `events`, sealing cursors with `ring`.
    pub(crate) fn new(mut events: Events, ring: StateSigner) -> Self {
        let log = OccurrenceLog::new(events.history);
        if events.webhooks.is_some() {
            for event_type in events.types.values_mut() {
                if !event_type.descriptor.delivery.contains(&DeliveryMode::Webhook) {
                    event_type.descriptor.delivery.push(DeliveryMode::Webhook);
                }
            }
        }
        let cursors = Cursors::new(ring);
        EventsRuntime {
            events: Arc::new(events),
            log,
            cursors,
            open_streams: Arc::default(),
            webhooks: Default::default(),
            hooks: Default::default(),
        }
    }

    /// Open what lives in `bus`'s keyspace: the webhook mode when the events declare it, the
    /// lifecycle hooks' state when a type has hooks.
    pub(crate) async fn open_shared(
        &self,
        bus: &Arc<dyn mcp_fleet_bus::ServerEventBus>,
        metrics: crate::metrics::WebhookMetrics,
    ) -> Result<(), mcp_fleet_bus::BusError> {
        let events = &self.events;
        if events.types.values().any(EventType::has_hooks) {
            let longest = events.webhooks.as_ref().map_or(events.poll_lease, |w| w.max_ttl.max(events.poll_lease));
            let _ = self.hooks.set(Arc::new(Hooks::open(bus, longest, events.hooks_every).await?));
        }
        let Some(config) = events.webhooks.clone() else { return Ok(()) };
        let runtime = WebhookRuntime::open(config, bus, self.cursors.clone(), metrics).await?;
        let _ = self.webhooks.set(Arc::new(runtime));
        Ok(())
    }

    /// `ctx`'s subscription to `params`' key holds it for the hooks as `member` for `ttl`.
    pub(crate) async fn hold(
        &self,
        event_type: &EventType,
        ctx: &RequestContext,
        params: (&str, &serde_json::Map<String, Value>),
        member: &str,
        ttl: Duration,
    ) {
        if let Some(hooks) = self.hooks.get().filter(|_| event_type.has_hooks()) {
            let subscription = Subscription::new(ctx.principal.as_ref(), params.0, params.1);
            hooks.hold(event_type, subscription, member, ttl).await;
        }
    }

    /// `events/list`: one page of descriptors, by name, after `cursor` (the last name of the
    /// page before).
    pub(crate) fn list(&self, cursor: Option<&str>) -> Result<Value, RpcError> {
        let types = &self.events.types;
        let start = match cursor {
            None => 0,
            Some(after) => match types.keys().position(|name| name == after) {
                Some(i) => i + 1,
                None => return Err(RpcError::invalid_params("invalid cursor for events/list").in_band()),
            },
        };
        let page: Vec<&EventType> = types.values().skip(start).take(LIST_PAGE).collect();
        let mut result = json!({"events": page.iter().map(|t| t.descriptor()).collect::<Vec<_>>()});
        if start + page.len() < types.len()
            && let Some(last) = page.last()
        {
            result["nextCursor"] = json!(last.descriptor().name);
        }
        Ok(result)
    }

    /// `events/poll` for the caller `ctx`.
    pub(crate) async fn poll(&self, ctx: &RequestContext, params: PollEventsParams) -> Result<Value, RpcError> {
        let event_type = self.subscribable(&params, DeliveryMode::Poll)?;
        self.hold(event_type, ctx, (&params.name, &params.arguments), "poll", self.events.poll_lease).await;
        let tenant = ctx.principal.as_ref().and_then(|p| p.tenant.as_deref());
        let position = self.position_of(params.cursor.as_deref(), tenant, &params.name);
        let max = params.max_events.unwrap_or(self.events.max_events).clamp(1, self.events.max_events);
        let wait = Duration::from_millis(params.timeout_ms.unwrap_or(0)).min(self.events.max_poll_wait);
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            let arrived = self.log.arrived.notified();
            tokio::pin!(arrived);
            arrived.as_mut().enable();
            let found = self.read(ctx, event_type, &params, position, max);
            let done = position.is_none() || !found.events.is_empty() || found.truncated;
            if done || tokio::time::timeout_at(deadline, arrived).await.is_err() {
                return Ok(self.answer(found, tenant, &params.name));
            }
        }
    }

    /// Where `cursor` points for `tenant`'s subscriptions to `name`: `None` for none (from now
    /// on); `(0, 0)` — below every log's floor, so read truncated — for one this fleet did not
    /// write for them.
    pub(crate) fn position_of(&self, cursor: Option<&str>, tenant: Option<&str>, name: &str) -> Option<Position> {
        cursor.map(|cursor| self.cursors.read(cursor, tenant, name).unwrap_or((0, 0)))
    }

    /// `position` as a cursor for `tenant`'s subscriptions to `name`.
    pub(crate) fn cursor(&self, position: Position, tenant: Option<&str>, name: &str) -> String {
        self.cursors.write(position, tenant, name)
    }

    /// The declared type `params` names, if it may be delivered by `mode` with these arguments.
    pub(crate) fn subscribable(&self, params: &PollEventsParams, mode: DeliveryMode) -> Result<&EventType, RpcError> {
        let Some(event_type) = self.events.get(&params.name) else {
            let error = RpcError::new(ErrorCode::EventsNotFound, format!("no event type {:?}", params.name));
            return Err(error.with_data(json!({"kind": "event"})).in_band());
        };
        if !event_type.descriptor().delivery.contains(&mode) {
            let error = RpcError::new(ErrorCode::EventsUnsupported, "this event type is not delivered that way");
            return Err(error.with_data(json!({"feature": "deliveryMode", "value": mode})).in_band());
        }
        event_type.check(&params.arguments).map_err(|why| {
            RpcError::invalid_params(format!("invalid arguments for {:?}: {why}", params.name)).in_band()
        })?;
        Ok(event_type)
    }

    /// What the log holds for this subscription after `position` (at most `max`).
    pub(crate) fn read(
        &self,
        ctx: &RequestContext,
        event_type: &EventType,
        params: &PollEventsParams,
        position: Option<Position>,
        max: usize,
    ) -> Found {
        let after = self.log.after(position);
        let tenant = ctx.principal.as_ref().and_then(|p| p.tenant.as_deref());
        let oldest = params.max_age_ms.map(|age| now_ms().saturating_sub(age));
        let visible = |e: &&Entry| {
            e.occurrence.name == params.name
                && (e.scope.is_none() || e.scope.as_deref() == tenant)
                && oldest.is_none_or(|oldest| e.emitted_at_ms >= oldest)
        };
        let from = after.from;
        let mut found =
            Found { events: Vec::new(), from, cursor: after.head, truncated: after.truncated, has_more: false };
        for entry in after.entries.iter().filter(visible) {
            let Some(delivered) = event_type.deliver(ctx, &entry.occurrence, &params.arguments) else { continue };
            if found.events.len() == max {
                found.has_more = true;
                break;
            }
            found.cursor = entry.position;
            found.events.push((delivered, entry.position));
        }
        if !found.has_more {
            found.cursor = after.head;
        }
        found
    }

    /// The poll's result, its cursor sealed for the caller.
    fn answer(&self, found: Found, tenant: Option<&str>, name: &str) -> Value {
        let result = PollEventsResult {
            events: found.events.into_iter().map(|(occurrence, _)| occurrence).collect(),
            cursor: Some(self.cursors.write(found.cursor, tenant, name)),
            truncated: found.truncated,
            has_more: found.has_more,
            next_poll_ms: self.events.next_poll.as_millis() as u64,
        };
        // A struct of strings, numbers and JSON values serializes.
        serde_json::to_value(result).unwrap_or_default()
    }
}

/// What one read of the log found for a subscription.
pub(crate) struct Found {
    /// The occurrences as the subscription receives them, each with its position.
    pub(crate) events: Vec<(EventOccurrence, Position)>,
    /// Where the read started: the position asked for, or (truncated) the log's floor.
    pub(crate) from: Position,
    /// Past everything looked at.
    pub(crate) cursor: Position,
    pub(crate) truncated: bool,
    pub(crate) has_more: bool,
}

impl crate::listen::OccurrenceEvents for EventsRuntime {
    fn record(&self, event: &EventEnvelope) {
        let decoded = event.payload.as_deref().map(serde_json::from_str::<EventOccurrence>);
        match decoded {
            Some(Ok(occurrence)) => self.log.record(event, occurrence),
            Some(Err(error)) => tracing::warn!(%error, event = %event.event_id, "undecodable event occurrence"),
            None => {}
        }
    }

    fn gap(&self) {
        self.log.gap();
    }

    fn started_at(&self, position: (u64, u64)) {
        self.log.started_at(position);
    }
}
