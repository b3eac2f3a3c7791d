//! The events extension's wire types: event descriptors (`events/list`), occurrences, and
//! `events/poll`'s params and result.
//!
//! The extension is experimental: these follow the working group's design sketch
//! (`modelcontextprotocol/experimental-ext-triggers-events`, `docs/design-sketch-proposal.md`,
//! the revision with one subscription per request, `arguments`, and the five general error
//! codes), and will move with it.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// How a client may receive an event type's occurrences.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DeliveryMode {
    /// `events/poll`.
    Poll,
    /// `events/stream`.
    Push,
    /// `events/subscribe` with a callback URL.
    Webhook,
}

/// One event type as `events/list` lists it.
///
/// ```
/// use mcp_fleet_protocol::types::{DeliveryMode, EventDescriptor};
/// let d = EventDescriptor::new("order.created", "An order was placed", serde_json::json!({"type": "object"}));
/// let wire = serde_json::to_value(&d).unwrap();
/// assert_eq!(wire["delivery"], serde_json::json!(["poll", "push"]));
/// assert_eq!(wire["inputSchema"], serde_json::json!({"type": "object"}));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EventDescriptor {
    /// The event type's name (unique on the server).
    pub name: String,
    /// What it announces.
    pub description: String,
    /// The delivery modes it offers (not empty).
    pub delivery: Vec<DeliveryMode>,
    /// JSON Schema of a subscription's `arguments`.
    pub input_schema: Value,
    /// JSON Schema of an occurrence's `data`.
    pub payload_schema: Value,
}

impl EventDescriptor {
    /// An event type delivered by poll and push whose subscriptions take any object.
    pub fn new(name: impl Into<String>, description: impl Into<String>, payload_schema: Value) -> Self {
        EventDescriptor {
            name: name.into(),
            description: description.into(),
            delivery: vec![DeliveryMode::Poll, DeliveryMode::Push],
            input_schema: serde_json::json!({"type": "object"}),
            payload_schema,
        }
    }
}

/// One occurrence of an event, as a client receives it.
///
/// ```
/// use mcp_fleet_protocol::types::EventOccurrence;
/// let o: EventOccurrence = serde_json::from_value(serde_json::json!({
///     "eventId": "e1", "name": "order.created", "timestamp": "2026-12-07T10:00:00Z", "data": {"id": 7}
/// })).unwrap();
/// assert_eq!((o.event_id.as_str(), o.cursor), ("e1", None));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EventOccurrence {
    /// The occurrence's id: the author's, or one the server generated. Receivers dedupe by it.
    pub event_id: String,
    /// The event type's name.
    pub name: String,
    /// When it happened (ISO 8601, UTC).
    pub timestamp: String,
    /// The payload, conforming to the type's `payloadSchema`.
    pub data: Value,
    /// Where a subscription stands after it (push and webhook; a poll carries it in its result).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
}

/// `events/poll`'s params, and `events/stream`'s (which ignores `maxEvents` and `timeoutMs`):
/// one subscription per request.
///
/// ```
/// use mcp_fleet_protocol::types::PollEventsParams;
/// let p: PollEventsParams = serde_json::from_value(serde_json::json!({"name": "n", "cursor": null})).unwrap();
/// assert!(p.arguments.is_empty() && p.cursor.is_none() && p.timeout_ms.is_none());
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PollEventsParams {
    /// The event type.
    pub name: String,
    /// The subscription's arguments (checked against the type's `inputSchema`).
    #[serde(default)]
    pub arguments: Map<String, Value>,
    /// Where the last poll left off; `null` starts from now.
    #[serde(default)]
    pub cursor: Option<String>,
    /// Replay nothing older than this many milliseconds.
    #[serde(default)]
    pub max_age_ms: Option<u64>,
    /// Most occurrences in the result.
    #[serde(default)]
    pub max_events: Option<usize>,
    /// Wait up to this long for an occurrence before answering with none (a long poll).
    #[serde(default)]
    pub timeout_ms: Option<u64>,
}

/// `events/poll`'s result.
///
/// ```
/// use mcp_fleet_protocol::types::PollEventsResult;
/// let r = PollEventsResult { events: vec![], cursor: Some("c".into()), truncated: false, has_more: false, next_poll_ms: 1000 };
/// assert_eq!(serde_json::to_value(&r).unwrap()["nextPollMs"], 1000);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PollEventsResult {
    /// The occurrences after the cursor, oldest first.
    pub events: Vec<EventOccurrence>,
    /// Where the next poll resumes.
    pub cursor: Option<String>,
    /// Occurrences between the given cursor and these may be missing (history did not reach
    /// back, or the cursor was not understood here).
    pub truncated: bool,
    /// More occurrences wait: poll again at once.
    pub has_more: bool,
    /// Otherwise, wait this long before the next poll.
    pub next_poll_ms: u64,
}
