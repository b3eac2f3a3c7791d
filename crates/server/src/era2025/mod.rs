//! The 2025 era of MCP (revisions 2025-03-26, 2025-06-18 and 2025-11-25) beside the 2026-07-28
//! pipeline on the same endpoint, sharing its catalog and handlers: a handler written once
//! answers both eras. This module holds the era's state and streams; answering its HTTP
//! requests (POST, GET, DELETE) is `http::era2025`'s, a layer above the endpoint.
//!
//! What the era keeps, and where it lives:
//! - `session`: `initialize` mints an `Mcp-Session-Id`; the session record (negotiated version,
//!   client capabilities and info, log level, resource subscriptions, the principal) lives in a
//!   bus [`Keyspace`](mcp_fleet_bus::Keyspace), so any replica serves any request of any
//!   session, and DELETE ends it everywhere.
//! - `relay`: the answers to server-to-client requests, POSTed to any replica, come back to
//!   the call that asked through it; `calls` are the calls waiting here.
//! - `stream` (with `stream_pending`, what one stream still has to write, and `stream_body`,
//!   its SSE body or direct socket): the GET stream of a session, which hears the fleet's change events like a listen
//!   stream does (with SSE event ids, keepalives, the gap rule and the drain), and the session
//!   events that keep its resource subscriptions current wherever they were made; `history`
//!   the recent events a resume replays, `event_id` the ids it resumes from.

pub(crate) mod calls;
mod event_id;
mod history;
pub(crate) mod relay;
pub(crate) mod session;
mod session_cache;
pub(crate) mod stream;
mod stream_body;
mod stream_pending;

pub(crate) use relay::Relay;
pub(crate) use session::SessionStore;
pub(crate) use stream::SessionStreams;
pub(crate) use stream_body::SessionStreamBody;

use std::sync::Arc;
use std::time::Duration;

use mcp_fleet_bus::{BusError, ServerEventBus};

use crate::options::Era2025Options;

/// The 2025 era's shared state of one handler.
pub(crate) struct Era2025State {
    /// Session records in the fleet (`None` in stateless mode, or when the bus has no keyspace).
    pub(crate) sessions: Option<SessionStore>,
    /// This node's GET streams.
    pub(crate) streams: SessionStreams,
    /// Answers to server-to-client requests, from whichever replica they were POSTed to.
    pub(crate) relay: Option<Relay>,
}

impl Era2025State {
    /// Open the keyspaces the era needs on `bus`. A backend without keyspaces (NATS core)
    /// serves the era statelessly, with a warning: sessions would not survive a replica hop.
    pub(crate) async fn open(
        options: &Era2025Options,
        bus: &Arc<dyn ServerEventBus>,
        streams: SessionStreams,
    ) -> Result<Era2025State, BusError> {
        if !options.sessions {
            return Ok(Era2025State { sessions: None, streams, relay: None });
        }
        let sessions = match bus.keyspace("sessions", options.session_ttl).await {
            Ok(keys) => keys,
            Err(BusError::Config(why)) => {
                tracing::warn!(%why, "2025-era clients are served without sessions: the bus has no keyspace");
                return Ok(Era2025State { sessions: None, streams, relay: None });
            }
            Err(e) => return Err(e),
        };
        let counts = bus.keyspace("session-counts", options.session_ttl).await?;
        let replies = bus.keyspace("replies", options.server_request_timeout * 2).await?;
        let relay = Relay::new(replies, options.server_request_timeout, streams.wakeups().clone());
        Ok(Era2025State {
            sessions: Some(SessionStore::new(sessions, counts, streams.session_cache())),
            streams,
            relay: Some(relay),
        })
    }
}

/// The GET streams' upkeep until shutdown: a keepalive comment every keepalive interval (the
/// listen streams' setting), and every quarter of the session TTL a renewal of the sessions
/// whose streams are open here — a session with an open stream never expires, its streams'
/// subscriptions are refreshed from its record, and a stream whose session ended or expired
/// elsewhere closes.
pub(crate) fn maintain(
    state: &Era2025State,
    keepalive: Duration,
    session_ttl: Duration,
    mut stop: crate::shutdown::Shutdown,
) -> impl Future<Output = ()> + Send + 'static {
    let streams = state.streams.clone();
    let store = state.sessions.clone();
    let renew_every = session_ttl / 4;
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
