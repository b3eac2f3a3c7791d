//! One `events/stream` (push): one subscription's occurrences as notifications on the
//! request's own SSE response, until the client closes it or the node drains.
//!
//! The response opens with `notifications/events/active` (the cursor it starts from, and
//! `truncated` when the log did not reach back to the one given), then one
//! `notifications/events/event` per occurrence — the occurrence with the cursor just past it —
//! and a `notifications/events/heartbeat` with the current cursor whenever nothing was sent for
//! [`Events::heartbeat`](super::Events::heartbeat). A reader that fell behind the log's history
//! gets `active` again with `truncated: true`. Every notification carries the subscription's id
//! (the request's JSON-RPC id) in `_meta`. When the node drains the stream ends with its result
//! `{"_meta": {}}`; a client resumes anywhere with the last cursor it read.
//!
//! The notifications go through the call's bounded queue: a client that does not read holds
//! the stream's task, never the node's memory.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use mcp_fleet_protocol::types::PollEventsParams;
use serde_json::{Value, json};

use super::SUBSCRIPTION_META;
use super::poll::{EventsRuntime, Found};
use crate::context::{NotificationSender, RequestContext};
use crate::shutdown::Shutdown;

/// One open stream counted against [`Events::max_streams`](super::Events::max_streams).
#[derive(Debug)]
pub(crate) struct StreamSlot(Arc<AtomicUsize>);

impl StreamSlot {
    /// A slot, unless `open` streams already reach `max`.
    pub(crate) fn take(open: &Arc<AtomicUsize>, max: usize) -> Option<StreamSlot> {
        open.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| (n < max).then_some(n + 1))
            .ok()
            .map(|_| StreamSlot(open.clone()))
    }
}

impl Drop for StreamSlot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Everything one push stream needs.
pub(crate) struct Push {
    pub(crate) runtime: Arc<EventsRuntime>,
    pub(crate) ctx: RequestContext,
    pub(crate) params: PollEventsParams,
    /// The request's id: the subscription's.
    pub(crate) subscription: Value,
    pub(crate) tx: NotificationSender,
    pub(crate) shutdown: Shutdown,
}

/// The client is gone.
struct Gone;

impl Push {
    /// Run the stream; its result once the node drains (or the client left).
    pub(crate) async fn run(mut self) -> Value {
        let done = json!({"_meta": {}});
        let runtime = self.runtime.clone();
        let Some(event_type) = runtime.events.get(&self.params.name) else { return done };
        let tenant = self.ctx.principal.as_ref().and_then(|p| p.tenant.clone());
        let start = runtime.position_of(self.params.cursor.as_deref(), tenant.as_deref(), &self.params.name);
        let mut position = start.unwrap_or_else(|| runtime.log.after(None).head);
        let mut heartbeat = tokio::time::interval(runtime.events.heartbeat);
        heartbeat.tick().await;
        let mut first = true;
        loop {
            let arrived = runtime.log.arrived.notified();
            tokio::pin!(arrived);
            arrived.as_mut().enable();
            let found = runtime.read(&self.ctx, event_type, &self.params, Some(position), runtime.events.max_events);
            let sent = self.send_found(&found, first, tenant.as_deref()).await;
            if sent.is_err() {
                return done;
            }
            (position, first) = (found.cursor, false);
            if found.has_more {
                continue;
            }
            tokio::select! {
                () = &mut arrived => {}
                _ = heartbeat.tick() => {
                    let cursor = runtime.cursor(position, tenant.as_deref(), &self.params.name);
                    if self.notify("heartbeat", json!({"cursor": cursor})).await.is_err() {
                        return done;
                    }
                }
                () = self.shutdown.recv() => return done,
                () = self.tx.closed() => return done,
            }
        }
    }

    /// `active` first (and after a fall behind the history), then each occurrence found.
    async fn send_found(&self, found: &Found, first: bool, tenant: Option<&str>) -> Result<(), Gone> {
        let name = &self.params.name;
        if first || found.truncated {
            let cursor = self.runtime.cursor(found.from, tenant, name);
            self.notify("active", json!({"cursor": cursor, "truncated": found.truncated})).await?;
        }
        for (occurrence, position) in &found.events {
            let mut params = serde_json::to_value(occurrence).unwrap_or_default();
            params["cursor"] = json!(self.runtime.cursor(*position, tenant, name));
            self.notify("event", params).await?;
        }
        Ok(())
    }

    /// Send `notifications/events/<kind>` with `params` and the subscription's `_meta`.
    async fn notify(&self, kind: &str, mut params: Value) -> Result<(), Gone> {
        params["_meta"] = json!({SUBSCRIPTION_META: self.subscription});
        let message = json!({"jsonrpc": "2.0", "method": format!("notifications/events/{kind}"), "params": params});
        // A JSON value serializes.
        let bytes = serde_json::to_vec(&message).unwrap_or_default();
        self.tx.send(bytes).await.map_err(|_| Gone)
    }
}
