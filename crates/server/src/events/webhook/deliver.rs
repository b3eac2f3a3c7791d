//! Delivering: the dispatcher that reads this node's occurrence log and starts following each
//! `(subscription, occurrence)` the subscription receives (its tenant's or unscoped, accepted
//! by the type's `match` hook, shaped by `transform`); the follow loop of one delivery — claim
//! it or watch the replica that did, POST, retry with backoff under a renewed lease, finish —
//! and the reload of the fleet's subscriptions.

use std::sync::{Arc, PoisonError};
use std::time::Duration;

use mcp_fleet_bus::now_ms;
use mcp_fleet_protocol::types::{DeliveryMode, EventOccurrence};

use super::send::{Headers, Outcome};
use super::sign::Secret;
use super::store::{Claim, SubscriptionRecord, delivery_key};
use super::{Subscriber, WebhookRuntime};
use crate::events::log::Position;
use crate::events::poll::EventsRuntime;
use crate::shutdown::Shutdown;

/// One delivery this node follows.
struct Delivery {
    subscriber: Arc<Subscriber>,
    occurrence: Arc<EventOccurrence>,
    position: Position,
    key: String,
    /// When the occurrence reached this node's log (ms), for giving up.
    heard_at_ms: u64,
}

/// How an owned delivery ended.
enum Owned {
    Finished,
    /// Another replica holds it now.
    Lost,
}

impl WebhookRuntime {
    /// Run the dispatcher until the node drains.
    pub(crate) async fn dispatch(self: Arc<Self>, events: Arc<EventsRuntime>, mut stop: Shutdown) {
        let _ = self.stop.set(stop.clone());
        let mut position = events.log.after(None).head;
        *self.head.lock().unwrap_or_else(PoisonError::into_inner) = position;
        loop {
            let arrived = events.log.arrived.notified();
            tokio::pin!(arrived);
            arrived.as_mut().enable();
            let after = events.log.after(Some(position));
            if after.truncated {
                tracing::warn!(
                    "webhook dispatcher fell behind the occurrence log: the other replicas deliver the rest"
                );
            }
            for entry in &after.entries {
                self.dispatch_one(&events, entry);
            }
            position = after.head;
            *self.head.lock().unwrap_or_else(PoisonError::into_inner) = position;
            tokio::select! {
                () = &mut arrived => {}
                () = stop.recv() => return,
            }
        }
    }

    /// Start following `entry` for every subscription that receives it.
    fn dispatch_one(self: &Arc<Self>, events: &EventsRuntime, entry: &crate::events::log::Entry) {
        let name = &entry.occurrence.name;
        let Some(event_type) = events.events.get(name) else { return };
        if !event_type.descriptor().delivery.contains(&DeliveryMode::Webhook) {
            return;
        }
        let now = now_ms();
        for subscriber in self.registry.to(name, now) {
            if entry.scope.is_some() && entry.scope.as_deref() != subscriber.tenant() {
                continue;
            }
            if let Some(shaped) = event_type.deliver(&subscriber.ctx, &entry.occurrence, &subscriber.arguments) {
                self.start_following(subscriber, Arc::new(shaped), entry.position, now);
            }
        }
    }

    /// Follow the delivery of `occurrence` (at `position`) to `subscriber`, unless this node
    /// already does or follows too many.
    pub(super) fn start_following(
        self: &Arc<Self>,
        subscriber: Arc<Subscriber>,
        occurrence: Arc<EventOccurrence>,
        position: Position,
        heard_at_ms: u64,
    ) {
        let key = delivery_key(&subscriber.id, &occurrence.event_id);
        {
            let mut following = self.following.lock().unwrap_or_else(PoisonError::into_inner);
            if following.len() >= self.config.max_following {
                self.metrics.abandoned("node_full");
                return;
            }
            if !following.insert(key.clone()) {
                return;
            }
        }
        let mut pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
        pending.entry(subscriber.id.clone()).or_default().insert(position);
        drop(pending);
        self.metrics.following().inc();
        let delivery = Delivery { subscriber, occurrence, position, key, heard_at_ms };
        tokio::spawn(self.clone().follow(delivery));
    }

    /// Follow `delivery` until it is finished or the node drains (a draining replica stops
    /// where it is, as a killed one would: its lease lapses and another takes over).
    async fn follow(self: Arc<Self>, delivery: Delivery) {
        let mut stop = self.stop.get().cloned();
        let run = self.claim_or_watch(&delivery);
        match stop.as_mut() {
            Some(stop) => tokio::select! {
                () = run => {}
                () = stop.recv() => {}
            },
            None => run.await,
        }
        self.unfollow(&delivery);
    }

    /// Claim the delivery, or watch whoever holds it until it is finished or free to claim.
    async fn claim_or_watch(&self, delivery: &Delivery) {
        let mut watched = false;
        loop {
            match self.store.claim(&delivery.key, &self.node).await {
                Ok(Ok(revision)) => {
                    if watched {
                        self.metrics.taken_over();
                    }
                    match self.own(delivery, revision).await {
                        Owned::Finished => break,
                        Owned::Lost => watched = true,
                    }
                }
                Ok(Err(Claim::Finished)) => break,
                Ok(Err(Claim::Held)) => watched = true,
                Err(error) => tracing::debug!(%error, "webhook claim unavailable; retrying"),
            }
            tokio::time::sleep(self.config.lease).await;
        }
    }

    fn unfollow(&self, delivery: &Delivery) {
        self.following.lock().unwrap_or_else(PoisonError::into_inner).remove(&delivery.key);
        let mut pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(positions) = pending.get_mut(&delivery.subscriber.id) {
            positions.remove(&delivery.position);
            if positions.is_empty() {
                pending.remove(&delivery.subscriber.id);
            }
        }
        self.metrics.following().dec();
    }

    /// POST the delivery until it is accepted, given up, or the lease is lost.
    async fn own(&self, delivery: &Delivery, mut revision: u64) -> Owned {
        let mut backoff = self.config.retry.0;
        loop {
            let record = match self.store.get(&delivery.subscriber.id).await {
                Ok(Some((record, _))) => record,
                Ok(None) => return self.give_up(delivery, revision, "unsubscribed").await,
                Err(_) => match self.hold_for(delivery, revision, self.config.lease / 3).await {
                    Some(renewed) => {
                        revision = renewed;
                        continue;
                    }
                    None => return Owned::Lost,
                },
            };
            if now_ms().saturating_sub(delivery.heard_at_ms) > self.config.give_up_after.as_millis() as u64 {
                return self.give_up(delivery, revision, "expired").await;
            }
            let wait = if record.active {
                match self.attempt(delivery, &record, &mut revision).await {
                    Some(Ok(())) => {
                        self.finish(delivery, revision).await;
                        return Owned::Finished;
                    }
                    Some(Err(false)) => return self.give_up(delivery, revision, "not_retryable").await,
                    Some(Err(true)) => {
                        let wait = backoff;
                        backoff = (backoff * 2).min(self.config.retry.1);
                        wait
                    }
                    None => return Owned::Lost,
                }
            } else {
                self.config.lease / 3
            };
            match self.hold_for(delivery, revision, wait).await {
                Some(renewed) => revision = renewed,
                None => return Owned::Lost,
            }
        }
    }

    /// One POST under the lease (renewed while it runs): `Ok` delivered, `Err(retryable)`
    /// failed, `None` the lease was lost.
    async fn attempt(
        &self,
        delivery: &Delivery,
        record: &SubscriptionRecord,
        revision: &mut u64,
    ) -> Option<Result<(), bool>> {
        // The URL was checked when the subscription was made.
        let Ok(url) = reqwest::Url::parse(&record.url) else { return Some(Err(false)) };
        let _permit = self.under_lease(delivery, revision, self.in_flight.acquire()).await?.ok()?;
        let body = self.body(delivery);
        let secrets = signing_secrets(record);
        let secrets: Vec<&Secret> = secrets.iter().collect();
        let headers =
            Headers { msg_id: &delivery.occurrence.event_id, subscription_id: &record.id, signature_secrets: &secrets };
        let outcome = self.under_lease(delivery, revision, self.sender.post(&url, &headers, body.into())).await?;
        Some(match outcome {
            Outcome::Delivered { .. } => {
                self.metrics.attempt("delivered");
                self.note(record, None).await;
                Ok(())
            }
            Outcome::Failed(failure) => {
                self.metrics.attempt(failure.label());
                self.note_refusal(&failure);
                self.note(record, Some(failure.category())).await;
                Err(failure.retryable())
            }
        })
    }

    /// Run `work` while renewing the delivery's lease; `None` when the lease was lost.
    async fn under_lease<T>(
        &self,
        delivery: &Delivery,
        revision: &mut u64,
        work: impl Future<Output = T>,
    ) -> Option<T> {
        tokio::pin!(work);
        let mut renewed_at = tokio::time::Instant::now();
        loop {
            tokio::select! {
                done = &mut work => return Some(done),
                () = tokio::time::sleep(self.config.lease / 3) => {
                    if !self.renew(delivery, revision, &mut renewed_at).await {
                        return None;
                    }
                }
            }
        }
    }

    /// The body of a delivery: the occurrence with the subscription's watermark.
    fn body(&self, delivery: &Delivery) -> Vec<u8> {
        let sub = &delivery.subscriber;
        let mut occurrence = (*delivery.occurrence).clone();
        occurrence.cursor = Some(self.watermark(&sub.id, sub.tenant(), &sub.name));
        serde_json::to_vec(&occurrence).unwrap_or_default()
    }

    /// Record an attempt's outcome in the subscription's status (a success only when it
    /// changes something or a second passed); suspend it after failing too long.
    async fn note(&self, record: &SubscriptionRecord, error: Option<&'static str>) {
        let now = now_ms();
        let quiet = record.last_error.is_none() && record.last_delivery_ms.is_some_and(|at| now < at + 1000);
        if error.is_none() && quiet {
            return;
        }
        let suspend_after = self.config.suspend_after.as_millis() as u64;
        let noted = self
            .store
            .update(&record.id, |r| match error {
                None => (r.last_delivery_ms, r.last_error, r.failed_since_ms) = (Some(now), None, None),
                Some(category) => {
                    r.last_error = Some(category.to_owned());
                    let since = *r.failed_since_ms.get_or_insert(now);
                    if now.saturating_sub(since) > suspend_after {
                        r.active = false;
                    }
                }
            })
            .await;
        if let Err(error) = noted {
            tracing::debug!(%error, "webhook status not recorded");
        }
    }

    /// Count a failure that refused the callback before (or instead of) delivering.
    pub(super) fn note_refusal(&self, failure: &super::send::Failure) {
        match failure {
            super::send::Failure::Refused(refusal) => self.metrics.refused(refusal.label()),
            super::send::Failure::Redirect(_) => self.metrics.refused("redirect"),
            _ => {}
        }
    }

    /// Give the delivery up (counted), marking it finished.
    async fn give_up(&self, delivery: &Delivery, revision: u64, reason: &'static str) -> Owned {
        self.metrics.abandoned(reason);
        self.finish(delivery, revision).await;
        Owned::Finished
    }

    /// Renew the delivery's lease; `false` once it is lost — taken by another replica, or not
    /// renewed for a whole lease (a keyspace that fails to answer is not yet a lost lease).
    async fn renew(&self, delivery: &Delivery, revision: &mut u64, renewed_at: &mut tokio::time::Instant) -> bool {
        match self.store.renew(&delivery.key, *revision, &self.node).await {
            Ok(Some(renewed)) => {
                (*revision, *renewed_at) = (renewed, tokio::time::Instant::now());
                true
            }
            Ok(None) => false,
            Err(error) => {
                tracing::debug!(%error, "webhook lease not renewed; retrying while it holds");
                renewed_at.elapsed() < self.config.lease
            }
        }
    }

    /// Mark the delivery finished, retrying a keyspace that fails to answer while the lease
    /// holds (a mark lost would let another replica send it again).
    async fn finish(&self, delivery: &Delivery, revision: u64) {
        for _ in 0..3 {
            match self.store.finish(&delivery.key, revision).await {
                Ok(_) => return,
                Err(error) => tracing::debug!(%error, "webhook delivery not marked finished; retrying"),
            }
            tokio::time::sleep(self.config.lease / 6).await;
        }
    }

    /// Wait `wait`, renewing the lease; its last revision, or `None` when it was lost.
    async fn hold_for(&self, delivery: &Delivery, mut revision: u64, wait: Duration) -> Option<u64> {
        let deadline = tokio::time::Instant::now() + wait;
        let mut renewed_at = tokio::time::Instant::now();
        loop {
            let step = (self.config.lease / 3).min(deadline.saturating_duration_since(tokio::time::Instant::now()));
            tokio::time::sleep(step).await;
            if !self.renew(delivery, &mut revision, &mut renewed_at).await {
                return None;
            }
            if tokio::time::Instant::now() >= deadline {
                return Some(revision);
            }
        }
    }

    /// Reload the fleet's subscriptions every [`Webhooks::refresh_every`](super::Webhooks::refresh_every)
    /// until the node drains.
    pub(crate) async fn reload(self: Arc<Self>, mut stop: Shutdown) {
        loop {
            if let Err(error) = self.reload_once().await {
                tracing::debug!(%error, "webhook subscriptions not reloaded");
            }
            tokio::select! {
                () = tokio::time::sleep(self.config.refresh_every) => {}
                () = stop.recv() => return,
            }
        }
    }

    async fn reload_once(&self) -> Result<(), mcp_fleet_bus::BusError> {
        let live = self.store.ids().await?;
        let known = self.registry.ids();
        for gone in known.iter().filter(|id| !live.contains_key(*id)) {
            self.registry.remove(gone);
        }
        for (id, expires_at_ms) in &live {
            if known.contains(id) {
                self.registry.renew(id, *expires_at_ms);
            } else if let Some((record, _)) = self.store.get(id).await? {
                self.registry.insert(&record);
            }
        }
        Ok(())
    }
}

/// The secrets a delivery is signed with: the subscription's, and the one it replaced while
/// its grace lasts.
fn signing_secrets(record: &SubscriptionRecord) -> Vec<Secret> {
    let now = now_ms();
    let previous = record.previous_secret.as_ref().filter(|(_, until)| *until > now).map(|(s, _)| s.as_str());
    std::iter::once(record.secret.as_str()).chain(previous).filter_map(|s| Secret::parse(s).ok()).collect()
}
