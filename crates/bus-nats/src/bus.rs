//! [`NatsBus`]: one NATS connection per bus handle, publishing and starting consumers in the
//! configured [`NatsMode`].

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use async_nats::connection::State;
use async_nats::jetstream;
use mcp_fleet_bus::{BoxFuture, BusCounters, BusError, BusStatus, BusStream, Change, EventEnvelope, ServerEventBus};

use crate::connection::{self, ConnWatch};
use crate::options::{NatsBusOptions, NatsMode};
use crate::{core, jetstream as js_mode};

/// A [`ServerEventBus`] on NATS. Cheap to clone; clones share one connection.
///
/// Delivery depends on [`NatsMode`]: see the crate docs.
#[derive(Clone)]
pub struct NatsBus {
    inner: Arc<Inner>,
}

struct Inner {
    client: async_nats::Client,
    js: jetstream::Context,
    options: Arc<NatsBusOptions>,
    counters: Arc<BusCounters>,
    watch: Arc<ConnWatch>,
    /// Core mode's node-local version counter.
    core_version: AtomicU64,
}

impl NatsBus {
    /// Connect with `options` (and, in JetStream mode, create the stream if missing); fails
    /// with [`BusError::Unavailable`] if NATS cannot be reached within the connect timeout.
    pub async fn connect(options: NatsBusOptions) -> Result<NatsBus, BusError> {
        options.validate()?;
        let counters = Arc::<BusCounters>::default();
        let watch = ConnWatch::new(counters.clone());
        let client = connection::connect(&options, watch.clone()).await?;
        let js = jetstream::new(client.clone());
        if options.mode == NatsMode::JetStream {
            js_mode::ensure_stream(&js, &options).await?;
        }
        let inner = Inner { client, js, options: Arc::new(options), counters, watch, core_version: AtomicU64::new(1) };
        Ok(NatsBus { inner: Arc::new(inner) })
    }

    /// The options this bus runs with.
    pub fn options(&self) -> &NatsBusOptions {
        &self.inner.options
    }

    /// The underlying client (for diagnostics, or forcing a reconnect in tests).
    pub fn client(&self) -> &async_nats::Client {
        &self.inner.client
    }

    /// Start consuming after stream sequence `sequence` (an event's `version`) instead of at
    /// the stream's end: a node that remembers the last version it handled resumes there and
    /// gets a gap if retention discarded part of what it missed. JetStream mode only.
    pub async fn subscribe_after(&self, sequence: u64) -> Result<BusStream, BusError> {
        let inner = &self.inner;
        if inner.options.mode != NatsMode::JetStream {
            return Err(BusError::Config("core nats cannot replay; subscribe_after needs jetstream mode".into()));
        }
        js_mode::subscribe(inner.js.clone(), inner.options.clone(), inner.counters.clone(), Some(sequence)).await
    }

    async fn publish_change(&self, change: Change) -> Result<EventEnvelope, BusError> {
        let inner = &self.inner;
        let result = match inner.options.mode {
            NatsMode::JetStream => js_mode::publish(&inner.js, &inner.options, change).await,
            NatsMode::Core => core::publish(&inner.client, &inner.options, &inner.core_version, change).await,
        };
        match result {
            Ok(env) => {
                BusCounters::bump(&inner.counters.published);
                Ok(env)
            }
            Err(BusError::Backend(msg)) if inner.client.connection_state() != State::Connected => {
                Err(BusError::Unavailable(msg))
            }
            Err(err) => Err(err),
        }
    }

    async fn start_consumer(&self) -> Result<BusStream, BusError> {
        let inner = &self.inner;
        match inner.options.mode {
            NatsMode::JetStream => {
                js_mode::subscribe(inner.js.clone(), inner.options.clone(), inner.counters.clone(), None).await
            }
            NatsMode::Core => {
                let events = inner.watch.events.subscribe();
                core::subscribe(inner.client.clone(), inner.options.clone(), inner.counters.clone(), events).await
            }
        }
    }
}

impl ServerEventBus for NatsBus {
    fn publish(&self, change: Change) -> BoxFuture<'_, Result<EventEnvelope, BusError>> {
        Box::pin(self.publish_change(change))
    }

    fn subscribe(&self) -> BoxFuture<'_, Result<BusStream, BusError>> {
        Box::pin(self.start_consumer())
    }

    fn status(&self) -> BusStatus {
        if self.inner.watch.closed.load(Ordering::SeqCst) {
            return BusStatus::Closed;
        }
        match self.inner.client.connection_state() {
            State::Connected => BusStatus::Connected,
            state => BusStatus::Reconnecting { last_error: format!("nats connection {state}") },
        }
    }

    fn node_id(&self) -> &str {
        &self.inner.options.node_id
    }

    fn counters(&self) -> Arc<BusCounters> {
        self.inner.counters.clone()
    }

    fn backend(&self) -> &'static str {
        "nats"
    }
}
