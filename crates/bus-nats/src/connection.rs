//! The NATS connection: connecting with the configured credentials, and turning the client's
//! event callback into [`ConnEvent`]s that consumers turn into gaps (core mode) and into the
//! `reconnects` counter.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use async_nats::{ConnectOptions, Event};
use mcp_fleet_bus::{BusCounters, BusError};
use tokio::sync::broadcast;

use crate::options::{NatsAuth, NatsBusOptions};

/// Connection events buffered per consumer. A consumer that falls behind on them gets a
/// conservative gap (see `core`), so a small buffer is enough.
pub(crate) const EVENT_CAPACITY: usize = 16;

/// What a consumer must know about the shared connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ConnEvent {
    /// The connection came back after a loss; core subscriptions may have missed messages.
    Reconnected,
    /// The client dropped messages for a slow subscription.
    SlowConsumer,
}

/// Connection facts shared with the event callback.
#[derive(Debug)]
pub(crate) struct ConnWatch {
    pub(crate) events: broadcast::Sender<ConnEvent>,
    pub(crate) closed: AtomicBool,
    disconnected: AtomicBool,
    counters: Arc<BusCounters>,
}

impl ConnWatch {
    pub(crate) fn new(counters: Arc<BusCounters>) -> Arc<Self> {
        let (events, _) = broadcast::channel(EVENT_CAPACITY);
        Arc::new(ConnWatch { events, closed: AtomicBool::new(false), disconnected: AtomicBool::new(false), counters })
    }

    fn on_event(&self, event: Event) {
        match event {
            Event::Disconnected => {
                tracing::warn!("nats bus: disconnected");
                self.disconnected.store(true, Ordering::SeqCst);
            }
            Event::Connected if self.disconnected.swap(false, Ordering::SeqCst) => {
                tracing::info!("nats bus: reconnected");
                BusCounters::bump(&self.counters.reconnects);
                let _ = self.events.send(ConnEvent::Reconnected); // no consumer: nobody to tell
            }
            Event::SlowConsumer(sid) => {
                tracing::warn!(sid, "nats bus: slow consumer, messages dropped");
                let _ = self.events.send(ConnEvent::SlowConsumer);
            }
            Event::Closed => self.closed.store(true, Ordering::SeqCst),
            other => tracing::debug!(event = %other, "nats bus: connection event"),
        }
    }
}

/// Connect per `options` (to any of its servers; the client fails over between them and
/// reconnects forever, backing off from `reconnect_min` to `reconnect_max`), reporting
/// connection events to `watch`.
pub(crate) async fn connect(options: &NatsBusOptions, watch: Arc<ConnWatch>) -> Result<async_nats::Client, BusError> {
    let servers = options.server_addrs()?;
    let (min, max) = (options.reconnect_min, options.reconnect_max);
    let connect_options = with_auth(ConnectOptions::new(), &options.auth)
        .await?
        .name(&options.node_id)
        .connection_timeout(options.connect_timeout)
        .max_reconnects(None)
        .reconnect_delay_callback(move |attempts| min.saturating_mul(1 << attempts.min(16)).min(max))
        .event_callback(move |event| {
            let watch = watch.clone();
            async move { watch.on_event(event) }
        });
    let timeout = options.connect_timeout;
    tokio::time::timeout(timeout, connect_options.connect(servers))
        .await
        .map_err(|_| BusError::Unavailable(format!("nats connect timed out after {timeout:?}")))?
        .map_err(|e| match e.kind() {
            async_nats::ConnectErrorKind::ServerParse => BusError::Config(e.to_string()),
            _ => BusError::Unavailable(e.to_string()),
        })
}

async fn with_auth(options: ConnectOptions, auth: &NatsAuth) -> Result<ConnectOptions, BusError> {
    Ok(match auth {
        NatsAuth::None => options,
        NatsAuth::UserPassword { user, password } => options.user_and_password(user.clone(), password.clone()),
        NatsAuth::Token(token) => options.token(token.clone()),
        NatsAuth::CredentialsFile(path) => options
            .credentials_file(path)
            .await
            .map_err(|e| BusError::Config(format!("nats credentials file {}: {e}", path.display())))?,
    })
}
