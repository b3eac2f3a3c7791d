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

/// Where and how a webhook subscription is delivered (`events/subscribe`'s `delivery`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WebhookTarget {
    /// `"webhook"`, the only mode `events/subscribe` takes (absent: webhook).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<DeliveryMode>,
    /// The callback URL (`https`).
    pub url: String,
    /// The Standard Webhooks signing secret, `whsec_` and base64 of 24 to 64 bytes (required
    /// on subscribe, absent on unsubscribe).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
}

/// `events/subscribe`'s params: one webhook subscription, created or refreshed.
///
/// ```
/// use mcp_fleet_protocol::types::SubscribeEventsParams;
/// let p: SubscribeEventsParams = serde_json::from_value(serde_json::json!({
///     "name": "n", "delivery": {"mode": "webhook", "url": "https://h.example/x", "secret": "whsec_x"},
///     "ttlMs": null
/// })).unwrap();
/// assert_eq!(p.ttl_ms, Some(None), "an explicit null asks for no expiry");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubscribeEventsParams {
    /// The event type.
    pub name: String,
    /// The subscription's arguments (checked against the type's `inputSchema`).
    #[serde(default)]
    pub arguments: Map<String, Value>,
    /// The callback.
    pub delivery: WebhookTarget,
    /// The client's last persisted cursor; `null` starts from now.
    #[serde(default)]
    pub cursor: Option<String>,
    /// Replay nothing older than this many milliseconds.
    #[serde(default)]
    pub max_age_ms: Option<u64>,
    /// The suggested lifetime: absent for the server's default, `null` for no expiry.
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<Option<u64>>,
}

/// A field that is present (even as `null`) is `Some`.
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Option<u64>>, D::Error> {
    Option::<u64>::deserialize(d).map(Some)
}

/// `events/unsubscribe`'s params: the subscription's key, less the principal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UnsubscribeEventsParams {
    /// The event type.
    pub name: String,
    /// The subscription's arguments, as subscribed.
    #[serde(default)]
    pub arguments: Map<String, Value>,
    /// The callback (its `url`).
    pub delivery: WebhookTarget,
}

/// How a webhook subscription's deliveries are going (`events/subscribe`'s `deliveryStatus`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeliveryStatus {
    /// Whether deliveries run (`false`: suspended after repeated failures; the refresh that
    /// reports it reactivates them).
    pub active: bool,
    /// When the endpoint last accepted a delivery (ISO 8601).
    pub last_delivery_at: Option<String>,
    /// The last failure's category (`connection_refused`, `timeout`, `tls_error`, `http_4xx`,
    /// `http_5xx`, `challenge_failed`), cleared by a success.
    pub last_error: Option<String>,
    /// Since when deliveries have failed without a success (ISO 8601).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed_since: Option<String>,
}

/// `events/subscribe`'s result.
///
/// ```
/// use mcp_fleet_protocol::types::SubscribeEventsResult;
/// let r = SubscribeEventsResult { id: "sub_1".into(), refresh_before: None, cursor: None, truncated: false, delivery_status: None };
/// assert_eq!(serde_json::to_value(&r).unwrap(), serde_json::json!({"id": "sub_1", "refreshBefore": null, "cursor": null, "truncated": false}));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubscribeEventsResult {
    /// The server-derived id of the subscription (the `X-MCP-Subscription-Id` of deliveries).
    pub id: String,
    /// Refresh before this (ISO 8601); `null`: no expiry.
    pub refresh_before: Option<String>,
    /// A safe-to-persist watermark: everything at or before it was delivered or given up.
    pub cursor: Option<String>,
    /// Delivery starts later than the cursor given: occurrences in between may be missing.
    pub truncated: bool,
    /// How deliveries are going (on a refresh).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivery_status: Option<DeliveryStatus>,
}
