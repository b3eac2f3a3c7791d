//! [`NatsBus`]: one NATS connection per bus handle, publishing and starting consumers in the
//! configured [`NatsMode`].

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use async_nats::connection::State;
use async_nats::jetstream;
use mcp_fleet_bus::check_open;
use mcp_fleet_bus::shard::{Shards, shards_for};
use mcp_fleet_bus::{
    BoxFuture, BusCounters, BusError, BusStatus, BusStream, EventEnvelope, EventKind, Keyspace, Member, ServerEventBus,
    Subject,
};

use crate::connection::{self, ConnWatch};
use crate::keyspace::NatsKeyspace;
use crate::members::Members;
use crate::options::{NatsBusOptions, NatsMode};
use crate::{core, jetstream as js_mode, unavailable_when_down};

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
    /// JetStream mode's shards (one stream unless [`NatsBusOptions::shards`] says more): their
    /// publishers, and which each subscription reads. `None` in core mode.
    streams: Option<Shards<js_mode::NatsReader>>,
    /// Core mode's epoch, chosen by this process.
    core_epoch: u64,
    /// Core mode's node-local version counter.
    core_version: AtomicU64,
    /// Fleet membership, started at the first announcement (or query).
    members: tokio::sync::OnceCell<Members>,
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
        let streams = match options.mode {
            NatsMode::JetStream => Some(js_mode::connect(&js, &options, counters.clone()).await?),
            NatsMode::Core => None,
        };
        let (options, core_epoch) = (Arc::new(options), mcp_fleet_bus::new_epoch());
        let core_version = AtomicU64::new(1);
        let members = tokio::sync::OnceCell::new();
        let inner = Inner { client, js, options, counters, watch, streams, core_epoch, core_version, members };
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

    /// Start consuming after the event `(epoch, version)` instead of at the stream's end: a
    /// node that remembers the last event it handled resumes there, and gets a gap if
    /// retention discarded part of what it missed — or if that epoch is gone altogether, then
    /// everything the current stream holds. JetStream mode with one shard only (a sharded bus
    /// names no position).
    pub async fn subscribe_after(&self, epoch: u64, version: u64) -> Result<BusStream, BusError> {
        let Some(streams) = &self.inner.streams else {
            return Err(BusError::Config("core nats cannot replay; subscribe_after needs jetstream mode".into()));
        };
        if !streams.reader().positioned() {
            return Err(BusError::Config("a bus split into shards names no position to resume after".into()));
        }
        js_mode::subscribe(streams.reader().shared(0, streams.status_of(0)), Some((epoch, version))).await
    }

    /// The membership view, started on first use (with `ttl`, if this first use announces).
    async fn members_view(&self, ttl: Option<Duration>) -> Result<&Members, BusError> {
        let inner = &self.inner;
        inner
            .members
            .get_or_try_init(|| Members::start(inner.client.clone(), inner.js.clone(), inner.options.clone(), ttl))
            .await
    }

    async fn publish_envelope(&self, env: EventEnvelope) -> Result<EventEnvelope, BusError> {
        let inner = &self.inner;
        let result = match &inner.streams {
            Some(streams) => publish_to_shards(streams, env).await,
            None => core::publish(&inner.client, &inner.options, inner.core_epoch, &inner.core_version, env).await,
        };
        let env = result.map_err(|err| unavailable_when_down(&inner.client, err))?;
        BusCounters::bump(&inner.counters.published);
        Ok(env)
    }

    /// Open the keyspace `name` (see `crate::keyspace`): JetStream mode only.
    async fn open_keyspace(&self, name: String, ttl: Duration) -> Result<Arc<dyn Keyspace>, BusError> {
        check_open(&name, ttl)?;
        let inner = &self.inner;
        if inner.options.mode != NatsMode::JetStream {
            return Err(BusError::Config(format!(
                "keyspaces need JetStream (keyspace {name:?}): core NATS stores nothing; use mode=jetstream"
            )));
        }
        let keyspace = NatsKeyspace::open(inner.client.clone(), &inner.js, &inner.options, &name, ttl).await?;
        Ok(Arc::new(keyspace))
    }

    async fn start_consumer(&self) -> Result<BusStream, BusError> {
        let inner = &self.inner;
        match &inner.streams {
            Some(streams) => streams.subscribe().await,
            None => {
                let events = inner.watch.events.subscribe();
                core::subscribe(inner.client.clone(), inner.options.clone(), inner.counters.clone(), events).await
            }
        }
    }
}

/// Publish `env` to its shard — and, for a scoped session's (un)subscription, to its other one
/// (the same event id: consumers drop the second copy). Unpositioned on a sharded bus.
async fn publish_to_shards(
    streams: &Shards<js_mode::NatsReader>,
    env: EventEnvelope,
) -> Result<EventEnvelope, BusError> {
    let reader = streams.reader();
    let mut places = shards_for(&env, streams.count()).into_iter();
    let first = reader.publisher(places.next().unwrap_or(0));
    let mut sent = first.publish(env.clone()).await?;
    for shard in places {
        reader.publisher(shard).publish(env.clone()).await?;
    }
    if !reader.positioned() && sent.kind != EventKind::Occurred {
        sent.version = 0;
    }
    Ok(sent)
}

impl ServerEventBus for NatsBus {
    fn publish_event(&self, event: EventEnvelope) -> BoxFuture<'_, Result<EventEnvelope, BusError>> {
        Box::pin(self.publish_envelope(event))
    }

    fn subscribe(&self) -> BoxFuture<'_, Result<BusStream, BusError>> {
        Box::pin(self.start_consumer())
    }

    /// JetStream: the stream's epoch and its last sequence (an event's version is its stream
    /// sequence), read from the stream's state without creating it (`None` while it is
    /// missing). Core mode has no shared history: unknown.
    fn gain(&self, subjects: &[Subject]) -> BoxFuture<'_, Result<(), BusError>> {
        let subjects = subjects.to_vec();
        Box::pin(async move {
            match &self.inner.streams {
                Some(streams) => streams.gain(&subjects).await,
                None => Ok(()),
            }
        })
    }

    fn routes_by_interest(&self) -> bool {
        self.inner.streams.as_ref().is_some_and(Shards::by_interest)
    }

    fn lose(&self, subjects: &[Subject]) {
        if let Some(streams) = &self.inner.streams {
            streams.lose(subjects);
        }
    }

    fn position(&self) -> BoxFuture<'_, Result<Option<(u64, u64)>, BusError>> {
        Box::pin(async move {
            if !self.inner.streams.as_ref().is_some_and(|streams| streams.reader().positioned()) {
                return Ok(None);
            }
            let state = js_mode::current(&self.inner.js, &self.inner.options).await?;
            Ok(state.map(|state| (state.epoch, state.last_sequence)))
        })
    }

    fn occurrence_position(&self) -> BoxFuture<'_, Result<Option<(u64, u64)>, BusError>> {
        Box::pin(async move {
            let Some(streams) = &self.inner.streams else { return Ok(None) };
            let state = js_mode::current(&self.inner.js, streams.reader().shard_options(0)).await?;
            Ok(state.map(|state| (state.epoch, state.last_sequence)))
        })
    }

    fn status(&self) -> BusStatus {
        if self.inner.watch.closed.load(Ordering::SeqCst) {
            return BusStatus::Closed;
        }
        match (self.inner.client.connection_state(), &self.inner.streams) {
            (State::Connected, Some(streams)) => streams.status(),
            (State::Connected, None) => BusStatus::Connected,
            (state, _) => BusStatus::Reconnecting { last_error: format!("nats connection {state}") },
        }
    }

    fn announce(&self, payload: String, ttl: Duration) -> BoxFuture<'_, Result<(), BusError>> {
        Box::pin(async move { self.members_view(Some(ttl)).await?.announce(payload).await })
    }

    fn members(&self) -> BoxFuture<'_, Result<Vec<Member>, BusError>> {
        Box::pin(async move { Ok(self.members_view(None).await?.members()) })
    }

    fn leave(&self) -> BoxFuture<'_, Result<(), BusError>> {
        Box::pin(async move {
            match self.inner.members.get() {
                Some(members) => members.leave().await,
                None => Ok(()),
            }
        })
    }

    fn keyspace(&self, name: &str, ttl: Duration) -> BoxFuture<'_, Result<Arc<dyn Keyspace>, BusError>> {
        Box::pin(self.open_keyspace(name.to_owned(), ttl))
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
