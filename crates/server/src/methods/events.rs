//! `events/list`, `events/poll` and `events/stream` (the events extension, cargo feature
//! `events`): the params read and the stream's slots taken here, the answers left to the
//! node's [`EventsRuntime`](crate::events::poll::EventsRuntime).

use std::sync::Arc;

use mcp_fleet_protocol::types::{DeliveryMode, PollEventsParams};
use mcp_fleet_protocol::{ErrorCode, Method, RpcError};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::dispatch::{MethodRequest, Prepared};
use crate::events::hooks::StreamHold;
use crate::events::poll::EventsRuntime;
use crate::events::push::{Push, StreamSlot};

/// Notifications a push stream may queue before it waits for its client.
const PUSH_QUEUE: usize = 64;

/// Answer `events/list` at once; run `events/poll` (it may wait, a long poll); open
/// `events/stream`.
pub(crate) fn prepare(req: &MethodRequest<'_>, method: Method) -> Result<Prepared, RpcError> {
    // Dispatch sends these methods here only when the handler serves the extension.
    let Some(runtime) = req.shared.events.clone() else { return Err(RpcError::method_not_found(&req.method)) };
    match method {
        Method::EventsList => {
            let cursor = match req.params.get("cursor") {
                None | Some(Value::Null) => None,
                Some(Value::String(cursor)) => Some(cursor.as_str()),
                Some(_) => return Err(RpcError::invalid_params("cursor must be a string").in_band()),
            };
            runtime.list(cursor).map(Prepared::Immediate)
        }
        Method::EventsStream => stream(req, runtime),
        Method::EventsSubscribe | Method::EventsUnsubscribe => webhook(req, method, runtime),
        _ => {
            let params = subscription_params(req)?;
            let ctx = req.ctx.clone();
            Ok(Prepared::call(async move { runtime.poll(&ctx, params).await }, None))
        }
    }
}

/// `events/stream`: checked before anything is sent (an error is the whole answer), then a
/// node slot and the principal's stream slot, held as long as the stream is open.
fn stream(req: &MethodRequest<'_>, runtime: Arc<EventsRuntime>) -> Result<Prepared, RpcError> {
    let params = subscription_params(req)?;
    let event_type = runtime.subscribable(&params, DeliveryMode::Push)?;
    let hold = runtime.hooks.get().filter(|_| event_type.has_hooks()).and_then(|hooks| {
        let subscription =
            crate::events::Subscription::new(req.ctx.principal.as_ref(), &params.name, &params.arguments);
        StreamHold::start(hooks, event_type, subscription)
    });
    let max = runtime.events.max_streams;
    let Some(slot) = StreamSlot::take(&runtime.open_streams, max) else {
        let error = RpcError::new(ErrorCode::EventsResourceExhausted, "too many event streams are open on this node");
        return Err(error.with_data(json!({"limit": "streams", "max": max})).in_band());
    };
    let key = req.ctx.principal.as_ref().map(crate::context::Principal::limit_key);
    let permit = super::listen::stream_permit(req, key.as_deref())?;
    let (tx, rx) = mpsc::channel(PUSH_QUEUE);
    let subscription = serde_json::to_value(&req.id).unwrap_or(Value::Null);
    let shutdown = req.shared.shutdown.subscribe();
    let push = Push { runtime, ctx: req.ctx.clone(), params, subscription, tx, shutdown };
    let run = async move {
        let _held = (slot, permit, hold);
        Ok(push.run().await)
    };
    Ok(Prepared::call(run, Some(rx)))
}

/// `events/subscribe` and `events/unsubscribe`: run against the fleet's keyspace (and, for a
/// new subscription, its endpoint's verification).
fn webhook(req: &MethodRequest<'_>, method: Method, runtime: Arc<EventsRuntime>) -> Result<Prepared, RpcError> {
    // Dispatch sends these methods here only when the webhook mode is open.
    let Some(webhooks) = runtime.webhooks.get().cloned() else { return Err(RpcError::method_not_found(&req.method)) };
    let ctx = req.ctx.clone();
    let params = Value::Object(req.params.clone());
    let invalid =
        |e: serde_json::Error| RpcError::invalid_params(format!("invalid {} params: {e}", req.method)).in_band();
    if method == Method::EventsSubscribe {
        let params = serde_json::from_value(params).map_err(invalid)?;
        Ok(Prepared::call(async move { webhooks.subscribe(&runtime, &ctx, params).await }, None))
    } else {
        let params = serde_json::from_value(params).map_err(invalid)?;
        Ok(Prepared::call(async move { webhooks.unsubscribe(&runtime, &ctx, params).await }, None))
    }
}

/// One subscription's params (`events/poll`'s and `events/stream`'s).
fn subscription_params(req: &MethodRequest<'_>) -> Result<PollEventsParams, RpcError> {
    serde_json::from_value(Value::Object(req.params.clone()))
        .map_err(|e| RpcError::invalid_params(format!("invalid {} params: {e}", req.method)).in_band())
}
