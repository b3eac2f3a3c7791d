//! `events/subscribe` and `events/unsubscribe`: a webhook subscription created, refreshed or
//! removed in the fleet's keyspace, by its key `(principal, url, name, arguments)`.
//!
//! A new subscription takes a slot of its principal's quota, proves its endpoint wants
//! deliveries (a signed `verification` challenge the endpoint echoes, once per principal and
//! URL, unless the URL is trusted), enters the fleet's index and starts from now — or from the
//! cursor given, replaying what this node's log holds after it. A refresh re-grants the TTL,
//! replaces the secret (the old one still signs for a grace period), reactivates suspended
//! deliveries and reports how they went.

use std::sync::Arc;

use mcp_fleet_bus::now_ms;
use mcp_fleet_protocol::tasks::iso8601;
use mcp_fleet_protocol::types::{
    DeliveryMode, DeliveryStatus, PollEventsParams, SubscribeEventsParams, SubscribeEventsResult,
    UnsubscribeEventsParams,
};
use mcp_fleet_protocol::{ErrorCode, RpcError};
use serde_json::{Value, json};

use super::WebhookRuntime;
use super::send::{Failure, Headers, Outcome};
use super::sign::Secret;
use super::store::{StoredPrincipal, SubscriptionRecord, subscription_id};
use crate::context::{Principal, RequestContext};
use crate::events::poll::EventsRuntime;

impl WebhookRuntime {
    /// `events/subscribe` for the caller `ctx`.
    pub(crate) async fn subscribe(
        self: &Arc<Self>,
        events: &EventsRuntime,
        ctx: &RequestContext,
        params: SubscribeEventsParams,
    ) -> Result<Value, RpcError> {
        let principal = authenticated(ctx)?;
        if params.delivery.mode.is_some_and(|mode| mode != DeliveryMode::Webhook) {
            return Err(invalid("events/subscribe delivers by webhook only: delivery.mode must be \"webhook\""));
        }
        let as_poll = PollEventsParams {
            name: params.name.clone(),
            arguments: params.arguments.clone(),
            cursor: params.cursor.clone(),
            max_age_ms: params.max_age_ms,
            max_events: None,
            timeout_ms: None,
        };
        let event_type = events.subscribable(&as_poll, DeliveryMode::Webhook)?;
        let url = self.callback_url(&params.delivery.url)?;
        let secret_text = params.delivery.secret.clone().ok_or_else(|| invalid("delivery.secret is required"))?;
        let secret = Secret::parse(&secret_text).map_err(|why| invalid(&format!("delivery.secret: {why}")))?;
        let id = subscription_id(principal, url.as_str(), &params.name, &params.arguments);
        let ttl = self.config.grant(params.ttl_ms);
        let expires_at_ms = now_ms() + ttl.as_millis() as u64;
        let refreshed = match self.store.get(&id).await.map_err(unavailable)? {
            Some((record, _)) => Some(self.refresh(&record, secret_text.clone(), expires_at_ms, ttl).await?),
            None => None,
        };
        let tenant = principal.tenant.as_deref();
        let (cursor, truncated, delivery_status) = match refreshed {
            Some(status) => (self.watermark(&id, tenant, &params.name), false, Some(status)),
            None => {
                let record = SubscriptionRecord {
                    id: id.clone(),
                    principal: StoredPrincipal::from(principal),
                    url: url.to_string(),
                    name: params.name.clone(),
                    arguments: params.arguments.clone(),
                    secret: secret_text,
                    previous_secret: None,
                    expires_at_ms,
                    active: true,
                    last_delivery_ms: None,
                    last_error: None,
                    failed_since_ms: None,
                };
                self.create(principal, &record, &secret, ttl).await?;
                let sub = self.registry.insert(&record);
                let truncated = self.replay(events, event_type, &sub, &as_poll);
                (self.watermark(&id, tenant, &params.name), truncated, None)
            }
        };
        let hold = (params.name.as_str(), &params.arguments);
        events.hold(event_type, ctx, hold, &id, ttl).await;
        let result = SubscribeEventsResult {
            id,
            refresh_before: Some(iso8601(expires_at_ms)),
            cursor: Some(cursor),
            truncated,
            delivery_status,
        };
        Ok(serde_json::to_value(result).unwrap_or_default())
    }

    /// `events/unsubscribe` for the caller `ctx`.
    pub(crate) async fn unsubscribe(
        &self,
        events: &EventsRuntime,
        ctx: &RequestContext,
        params: UnsubscribeEventsParams,
    ) -> Result<Value, RpcError> {
        let principal = authenticated(ctx)?;
        let url = self.callback_url(&params.delivery.url)?;
        let id = subscription_id(principal, url.as_str(), &params.name, &params.arguments);
        if !self.store.remove(&id, principal).await.map_err(unavailable)? {
            let error = RpcError::new(ErrorCode::EventsNotFound, "no such webhook subscription");
            return Err(error.with_data(json!({"kind": "subscription"})).in_band());
        }
        self.registry.remove(&id);
        if let Some(hooks) = events.hooks.get() {
            let key = crate::events::Subscription::new(Some(principal), &params.name, &params.arguments).key;
            hooks.release(&key, &id).await;
        }
        Ok(json!({}))
    }

    /// A live subscription refreshed: TTL re-granted, secret replaced, deliveries reactivated;
    /// its delivery status as it was.
    async fn refresh(
        &self,
        record: &SubscriptionRecord,
        secret: String,
        expires_at_ms: u64,
        ttl: std::time::Duration,
    ) -> Result<DeliveryStatus, RpcError> {
        let status = DeliveryStatus {
            active: record.active,
            last_delivery_at: record.last_delivery_ms.map(iso8601),
            last_error: record.last_error.clone(),
            failed_since: record.failed_since_ms.map(iso8601),
        };
        let grace_until = now_ms() + self.config.rotation_grace.as_millis() as u64;
        let updated = self
            .store
            .update(&record.id, |r| {
                if r.secret != secret {
                    r.previous_secret = Some((std::mem::replace(&mut r.secret, secret.clone()), grace_until));
                }
                r.expires_at_ms = expires_at_ms;
                if !r.active {
                    (r.active, r.failed_since_ms) = (true, None);
                }
            })
            .await
            .map_err(unavailable)?;
        let principal = Principal::from(&record.principal);
        self.store.hold_quota(&principal, &record.id, ttl, usize::MAX).await.map_err(unavailable)?;
        self.store.index(&record.id, expires_at_ms, usize::MAX).await.map_err(unavailable)?;
        if !updated {
            return Err(RpcError::new(ErrorCode::InternalError, "the subscription expired while it was refreshed"));
        }
        self.registry.renew(&record.id, expires_at_ms);
        Ok(status)
    }

    /// A new subscription: quota, verification, index, record — undone where a step refuses.
    async fn create(
        &self,
        principal: &Principal,
        record: &SubscriptionRecord,
        secret: &Secret,
        ttl: std::time::Duration,
    ) -> Result<(), RpcError> {
        let max = self.config.max_per_principal;
        if !self.store.hold_quota(principal, &record.id, ttl, max).await.map_err(unavailable)? {
            return Err(exhausted("subscriptions", max));
        }
        let admitted = self.admit(principal, record, secret).await;
        let admitted = match admitted {
            Ok(()) => match self.store.index(&record.id, record.expires_at_ms, self.config.max_subscriptions).await {
                Ok(true) => self.store.put(record).await.map_err(unavailable),
                Ok(false) => Err(exhausted("fleet_subscriptions", self.config.max_subscriptions)),
                Err(error) => Err(unavailable(error)),
            },
            Err(error) => Err(error),
        };
        if admitted.is_err() {
            let _ = self.store.remove(&record.id, principal).await;
        }
        admitted
    }

    /// The endpoint proves it wants deliveries, unless it is trusted or already did.
    async fn admit(&self, principal: &Principal, record: &SubscriptionRecord, secret: &Secret) -> Result<(), RpcError> {
        if self.config.trusted(&record.url) || self.store.verified(principal, &record.url).await.map_err(unavailable)? {
            return Ok(());
        }
        let url = self.callback_url(&record.url)?;
        let challenge = random_hex(16);
        let msg_id = format!("msg_verification_{}", random_hex(8));
        let body = serde_json::to_vec(&json!({"type": "verification", "challenge": challenge})).unwrap_or_default();
        let headers = Headers { msg_id: &msg_id, subscription_id: &record.id, signature_secrets: &[secret] };
        match self.sender.post(&url, &headers, body.into()).await {
            Outcome::Delivered { body } => {
                let echoed = serde_json::from_slice::<Value>(&body).ok();
                let echoed = echoed.as_ref().and_then(|b| b.get("challenge")).and_then(Value::as_str).unwrap_or("");
                if !same(echoed.as_bytes(), challenge.as_bytes()) {
                    return Err(callback_error("challenge_failed"));
                }
                self.store.mark_verified(principal, &record.url).await.map_err(unavailable)
            }
            Outcome::Failed(failure) => {
                self.note_refusal(&failure);
                match failure {
                    Failure::Refused(refusal) => {
                        Err(invalid(&format!("the callback's address is not allowed ({})", refusal.label())))
                    }
                    failure => Err(callback_error(failure.category())),
                }
            }
        }
    }

    /// Replay, for a new subscription with a cursor, what this node's log holds after it;
    /// whether the log did not reach back that far.
    fn replay(
        self: &Arc<Self>,
        events: &EventsRuntime,
        event_type: &crate::events::EventType,
        sub: &Arc<super::Subscriber>,
        params: &PollEventsParams,
    ) -> bool {
        let tenant = sub.ctx.principal.as_ref().and_then(|p| p.tenant.as_deref());
        let Some(position) = events.position_of(params.cursor.as_deref(), tenant, &params.name) else { return false };
        let found = events.read(&sub.ctx, event_type, params, Some(position), usize::MAX);
        for (occurrence, at) in found.events {
            self.start_following(sub.clone(), Arc::new(occurrence), at, now_ms());
        }
        found.truncated
    }

    /// Parse and check a callback URL: `https` (or `http` when allowed), with a host.
    pub(crate) fn callback_url(&self, url: &str) -> Result<reqwest::Url, RpcError> {
        let parsed = reqwest::Url::parse(url).map_err(|e| invalid(&format!("delivery.url is not a URL: {e}")))?;
        let scheme_ok = parsed.scheme() == "https" || (self.config.allow_http && parsed.scheme() == "http");
        if !scheme_ok {
            return Err(invalid("delivery.url must be https"));
        }
        if parsed.host_str().is_none_or(str::is_empty) || !parsed.username().is_empty() || parsed.password().is_some() {
            return Err(invalid("delivery.url needs a host and no credentials"));
        }
        Ok(parsed)
    }
}

/// The caller's principal; webhooks need one (`-32012` otherwise).
fn authenticated(ctx: &RequestContext) -> Result<&Principal, RpcError> {
    ctx.principal.as_ref().ok_or_else(|| {
        let error = RpcError::new(ErrorCode::EventsForbidden, "webhook subscriptions need an authenticated caller");
        error.with_data(json!({"reason": "unauthenticated"})).in_band()
    })
}

fn invalid(message: &str) -> RpcError {
    RpcError::invalid_params(message).in_band()
}

fn exhausted(limit: &str, max: usize) -> RpcError {
    let error = RpcError::new(ErrorCode::EventsResourceExhausted, format!("too many webhook {limit}"));
    error.with_data(json!({"limit": limit, "max": max})).in_band()
}

fn callback_error(reason: &str) -> RpcError {
    let error = RpcError::new(ErrorCode::EventsCallbackEndpointError, "the callback endpoint failed its verification");
    error.with_data(json!({"reason": reason})).in_band()
}

/// The keyspace did not answer: the call may be retried.
pub(super) fn unavailable(error: mcp_fleet_bus::BusError) -> RpcError {
    tracing::warn!(%error, "webhook subscriptions unavailable");
    RpcError::new(ErrorCode::InternalError, "webhook subscriptions are unavailable; retry").in_band()
}

/// Equal, in time independent of where they differ.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn random_hex(bytes: usize) -> String {
    (0..bytes).map(|_| format!("{:02x}", rand::random::<u8>())).collect()
}
