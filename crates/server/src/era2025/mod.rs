//! The 2025 era of MCP (revisions 2025-03-26, 2025-06-18 and 2025-11-25) beside the 2026-07-28
//! pipeline on the same endpoint, sharing its catalog and handlers: a handler written once
//! answers both eras.
//!
//! What the era adds, and where it lives:
//! - `session`: `initialize` mints an `Mcp-Session-Id`; the session record (negotiated version,
//!   client capabilities and info, log level, resource subscriptions, the principal) lives in a
//!   bus [`Keyspace`](mcp_fleet_bus::Keyspace), so any replica serves any request of any
//!   session, and DELETE ends it everywhere.
//! - `post`: the POST side — the handshake, notifications, the client's answers to our
//!   requests, requests (bridged to the 2026 methods, results made era-pure) and 2025-03-26
//!   batches (`batch`: what a batch costs against its size limit and the rate limit;
//!   `admission`: the bounds of what a caller may store — client capabilities, sessions per
//!   principal or address, subscriptions per session).
//! - `call`: a call whose handler asks for input (MRTR `input_required`) becomes real
//!   server-to-client requests on the call's SSE stream; the answers, POSTed to any replica,
//!   come back through `relay`.
//! - `stream` (with `stream_pending`, what one stream still has to write, and `stream_body`,
//!   its SSE body or direct socket): the GET stream of a session, which hears the fleet's change events like a listen
//!   stream does (with SSE event ids, keepalives, the gap rule and the drain), and the session
//!   events that keep its resource subscriptions current wherever they were made; `history`
//!   the recent events a resume replays, `event_id` the ids it resumes from.

mod admission;
mod batch;
mod call;
mod calls;
mod event_id;
mod history;
mod post;
mod relay;
mod session;
mod stream;
mod stream_body;
mod stream_pending;

pub(crate) use call::ChannelBody;
pub(crate) use relay::Relay;
pub(crate) use session::SessionStore;
pub(crate) use stream::SessionStreams;
pub(crate) use stream_body::SessionStreamBody;

use std::sync::Arc;

use mcp_fleet_bus::{BusError, ServerEventBus};

use crate::options::LegacyOptions;

/// The 2025 era's shared state of one handler.
pub(crate) struct Legacy {
    /// Session records in the fleet (`None` in stateless mode, or when the bus has no keyspace).
    pub(crate) sessions: Option<SessionStore>,
    /// This node's GET streams.
    pub(crate) streams: SessionStreams,
    /// Answers to server-to-client requests, from whichever replica they were POSTed to.
    pub(crate) relay: Option<Relay>,
}

impl Legacy {
    /// Open the keyspaces the era needs on `bus`. A backend without keyspaces (NATS core)
    /// serves the era statelessly, with a warning: sessions would not survive a replica hop.
    pub(crate) async fn open(
        options: &LegacyOptions,
        bus: &Arc<dyn ServerEventBus>,
        streams: SessionStreams,
    ) -> Result<Legacy, BusError> {
        if !options.sessions {
            return Ok(Legacy { sessions: None, streams, relay: None });
        }
        let sessions = match bus.keyspace("sessions", options.session_ttl).await {
            Ok(keys) => keys,
            Err(BusError::Config(why)) => {
                tracing::warn!(%why, "2025-era clients are served without sessions: the bus has no keyspace");
                return Ok(Legacy { sessions: None, streams, relay: None });
            }
            Err(e) => return Err(e),
        };
        let counts = bus.keyspace("session-counts", options.session_ttl).await?;
        let replies = bus.keyspace("replies", options.server_request_timeout * 2).await?;
        let relay = Relay::new(replies, options.server_request_timeout, streams.wakeups().clone());
        Ok(Legacy { sessions: Some(SessionStore::new(sessions, counts)), streams, relay: Some(relay) })
    }
}

/// The GET streams' upkeep until shutdown: a keepalive comment every keepalive interval (the
/// listen streams' setting), and every quarter of the session TTL a renewal of the sessions
/// whose streams are open here — a session with an open stream never expires, its streams'
/// subscriptions are refreshed from its record, and a stream whose session ended or expired
/// elsewhere closes.
pub(crate) fn maintain(
    shared: &Arc<crate::endpoint::HandlerShared>,
    mut stop: crate::shutdown::Shutdown,
) -> impl Future<Output = ()> + Send + 'static {
    let streams = shared.legacy.streams.clone();
    let store = shared.legacy.sessions.clone();
    let keepalive = shared.options.listen.keepalive;
    let renew_every = shared.options.legacy.session_ttl / 4;
    async move {
        let tick = if keepalive.is_zero() { renew_every } else { keepalive.min(renew_every) };
        let mut interval = tokio::time::interval(tick);
        interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        interval.tick().await;
        let mut last_renewal = tokio::time::Instant::now();
        loop {
            tokio::select! {
                _ = interval.tick() => {}
                _ = stop.recv() => return,
            }
            if !keepalive.is_zero() {
                streams.tick();
            }
            if let Some(store) = &store
                && last_renewal.elapsed() >= renew_every
            {
                last_renewal = tokio::time::Instant::now();
                renew(store, &streams).await;
            }
        }
    }
}

/// Renew the sessions of the open streams and refresh their subscriptions from the records
/// (one lost announcement must not cost a stream a subscription for its life); close the
/// streams of sessions that are gone.
async fn renew(store: &SessionStore, streams: &SessionStreams) {
    for session in streams.sessions() {
        streams.begin_refresh(&session);
        match store.load(&session).await {
            Ok(Some(record)) => streams.refresh_subscriptions(&session, Some(record.subscriptions)),
            Ok(None) => streams.close_session(&session),
            Err(e) => {
                streams.refresh_subscriptions(&session, None);
                tracing::warn!(error = %e, "renewing a session failed; retrying at the next renewal");
            }
        }
    }
}
