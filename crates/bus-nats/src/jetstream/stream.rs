//! The JetStream stream as the bus sees it: found (or created, with the configured retention
//! and replicas) by name, and summarised as a [`StreamState`].
//!
//! The **epoch** is the stream's creation time in microseconds: every node reads the same
//! value, and a stream deleted and recreated (by an operator, by a lost single-replica volume,
//! by whichever node noticed first) gets a new one, so consumers can tell that the history they
//! were reading is gone. Microseconds stay below 2<sup>53</sup> until the year 2255.

use async_nats::header::NATS_MESSAGE_ID;
use async_nats::jetstream::{self, Context};
use mcp_fleet_bus::BusError;

use crate::options::NatsBusOptions;
use crate::{backend_error, within};

/// What a consumer needs to know about the stream right now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct StreamState {
    /// The stream's creation time (µs since the Unix epoch): its epoch.
    pub(crate) epoch: u64,
    /// The lowest sequence still stored (`last + 1` when empty).
    pub(crate) first_sequence: u64,
    /// The last sequence assigned.
    pub(crate) last_sequence: u64,
}

impl StreamState {
    fn of(info: &jetstream::stream::Info) -> StreamState {
        let micros = info.created.unix_timestamp_nanos() / 1_000;
        let last_sequence = info.state.last_sequence;
        // An empty stream reports first = 0; nothing below last + 1 is stored then.
        let first_sequence = if info.state.messages == 0 { last_sequence + 1 } else { info.state.first_sequence };
        StreamState { epoch: u64::try_from(micros).unwrap_or(1).max(1), first_sequence, last_sequence }
    }
}

/// The stream's configuration from `options`.
fn config(options: &NatsBusOptions) -> jetstream::stream::Config {
    jetstream::stream::Config {
        name: options.stream_name.clone(),
        subjects: vec![options.subject_filter()],
        max_messages: options.max_messages,
        max_age: options.max_age,
        num_replicas: options.replicas,
        ..Default::default()
    }
}

/// How long a node waits before re-creating a stream that vanished while in use. nats-server
/// 2.9 finishes removing a deleted stream's files after acknowledging the deletion; a stream of
/// the same name created meanwhile loses its message blocks (it acknowledges publishes it then
/// cannot deliver: "error opening msg block file"). Seen in the fault suite; the pause avoids it.
const RECREATE_SETTLE: std::time::Duration = std::time::Duration::from_secs(1);

/// The stream's current state, creating the stream first if it does not exist yet (any node
/// may: creation with the same configuration is idempotent on the server). `Ok((state,
/// created))`. For the first look at the stream, when the bus connects.
pub(crate) async fn locate(js: &Context, options: &NatsBusOptions) -> Result<(StreamState, bool), BusError> {
    find_or_create(js, options, None).await
}

/// The stream's current state, read only (`None` when it does not exist): never creates it,
/// so asking where the history stands cannot stand in for the consumers' own detection of a
/// deleted stream. Bounded by the publish timeout.
pub(crate) async fn current(js: &Context, options: &NatsBusOptions) -> Result<Option<StreamState>, BusError> {
    match within(options.publish_timeout, js.get_stream(&options.stream_name)).await? {
        Ok(stream) => Ok(Some(StreamState::of(stream.cached_info()))),
        Err(err) if is_stream_not_found(&err) => Ok(None),
        Err(err) => Err(backend_error(err)),
    }
}

/// Whether the stream holds another event than `event_id` at `sequence`, by its
/// `Nats-Msg-Id`: the sign of a rollback refilled past an event. `false` when it cannot tell
/// (the message is gone or unreadable right now): that proves nothing, and the next check
/// reads again.
pub(crate) async fn holds_another(js: &Context, options: &NatsBusOptions, sequence: u64, event_id: &str) -> bool {
    let read = async {
        let stream = js.get_stream_no_info(&options.stream_name).await.ok()?;
        let message = stream.get_raw_message(sequence).await.ok()?;
        Some(message.headers.get(NATS_MESSAGE_ID).map(|h| h.as_str().to_owned()))
    };
    matches!(within(options.publish_timeout, read).await, Ok(Some(found)) if found.as_deref() != Some(event_id))
}

/// [`locate`] for a stream this bus has been using: when it is missing it was deleted, so the
/// new one is created only after [`RECREATE_SETTLE`].
pub(crate) async fn relocate(js: &Context, options: &NatsBusOptions) -> Result<(StreamState, bool), BusError> {
    find_or_create(js, options, Some(RECREATE_SETTLE)).await
}

async fn find_or_create(
    js: &Context,
    options: &NatsBusOptions,
    settle: Option<std::time::Duration>,
) -> Result<(StreamState, bool), BusError> {
    let found = within(options.publish_timeout, js.get_stream(&options.stream_name)).await?;
    match found {
        Ok(stream) => Ok((StreamState::of(stream.cached_info()), false)),
        Err(err) if is_stream_not_found(&err) => {
            if let Some(settle) = settle {
                tokio::time::sleep(settle).await;
            }
            let mut stream = within(options.connect_timeout, js.get_or_create_stream(config(options)))
                .await?
                .map_err(backend_error)?;
            let info = within(options.publish_timeout, stream.info()).await?.map_err(backend_error)?;
            tracing::warn!(stream = %options.stream_name, "nats bus: the jetstream stream was missing and is created");
            Ok((StreamState::of(info), true))
        }
        Err(err) => Err(backend_error(err)),
    }
}

fn is_stream_not_found(err: &jetstream::context::GetStreamError) -> bool {
    matches!(err.kind(), jetstream::context::GetStreamErrorKind::JetStream(e)
        if e.error_code() == jetstream::ErrorCode::STREAM_NOT_FOUND)
}
