//! [`ListenMessage`]: what one message on a `subscriptions/listen` stream means — the
//! acknowledgement, a change notification with the fleet's event stamp, the server's
//! completion result (graceful close), or an error.
//!
//! Notifications carry `params._meta["dev.mcp-fleet/event"]`: `{"epoch", "version",
//! "publishedAtMs"}` for a change (versions are monotonic within an epoch; `epoch` names the
//! bus history and may be absent on older nodes), or `{"gap": true, "epoch", "lastVersion"}`
//! after a conservative invalidation (which covers every change before it). Parsing borrows
//! from the frame and skips everything else, so it stays cheap at many thousand frames per
//! second.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

use crate::error::ClientError;
use crate::list::ListKind;

/// One message of a listen stream.
#[derive(Debug, Clone, PartialEq)]
pub enum ListenMessage {
    /// `notifications/subscriptions/acknowledged`, with the honoured filter (LSTN-3, LSTN-4).
    Acknowledged {
        /// The filter the server honours.
        honoured: Value,
    },
    /// A change notification.
    Changed(Notification),
    /// The listen request's own `complete` result: the server ended the stream gracefully
    /// (shutdown, drain, max lifetime) and the client should reconnect (LSTN-13).
    Completed,
    /// A JSON-RPC error answering the listen request.
    Error {
        /// The error code.
        code: i64,
        /// The error message.
        message: String,
    },
    /// Any other message (ignored by this client).
    Other,
}

/// A change notification.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notification {
    /// What changed.
    pub target: Target,
    /// The fleet's event stamp.
    pub stamp: EventStamp,
}

/// What a notification is about.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Target {
    /// A `list_changed` for this list (`Resources` also invalidates templates).
    List(ListKind),
    /// `notifications/resources/updated` for this URI.
    Resource(String),
}

/// The fleet's stamp on a notification (`_meta["dev.mcp-fleet/event"]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventStamp {
    /// A change event.
    Change {
        /// The bus history the version belongs to (absent on nodes that predate epochs).
        epoch: Option<u64>,
        /// The event's version, monotonic within its epoch.
        version: u64,
        /// When the origin node published it, in milliseconds since the Unix epoch.
        published_at_ms: Option<u64>,
    },
    /// A conservative invalidation after a bus gap: covers every change before it.
    Gap {
        /// The epoch after the gap, when the node says.
        epoch: Option<u64>,
        /// The last version the node knew before the gap, when it says.
        last_version: Option<u64>,
    },
    /// No bus position: a server other than mcp-fleet, or a stream of a scoped principal
    /// (mcp-fleet numbers a tenant's notifications per stream, `seq`, instead of showing the
    /// bus's version, which counts every tenant's events).
    Unstamped,
}

#[derive(Deserialize)]
struct WireMessage<'a> {
    #[serde(borrow)]
    method: Option<Cow<'a, str>>,
    #[serde(borrow)]
    params: Option<WireParams<'a>>,
    #[serde(borrow)]
    result: Option<&'a RawValue>,
    error: Option<WireError>,
}

#[derive(Deserialize)]
struct WireParams<'a> {
    #[serde(borrow)]
    uri: Option<Cow<'a, str>>,
    notifications: Option<Value>,
    #[serde(rename = "_meta")]
    meta: Option<WireMeta>,
}

/// `_meta` of a notification; serde needs the key as a literal, a test keeps it equal to
/// `mcp_fleet_protocol::envelope::FLEET_EVENT_KEY`.
#[derive(Deserialize)]
struct WireMeta {
    #[serde(rename = "dev.mcp-fleet/event")]
    event: Option<WireEvent>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireEvent {
    epoch: Option<u64>,
    version: Option<u64>,
    published_at_ms: Option<u64>,
    #[serde(default)]
    gap: bool,
    last_version: Option<u64>,
}

#[derive(Deserialize)]
struct WireError {
    code: i64,
    #[serde(default)]
    message: String,
}

impl ListenMessage {
    /// Parse one SSE message's data.
    ///
    /// ```
    /// use mcp_fleet_client::{EventStamp, ListKind, ListenMessage, Target};
    /// let data = r#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{
    ///   "io.modelcontextprotocol/subscriptionId":1,"dev.mcp-fleet/event":{"epoch":3,"version":42,"publishedAtMs":1}}}}"#;
    /// let ListenMessage::Changed(n) = ListenMessage::parse(data).unwrap() else { panic!() };
    /// assert_eq!(n.target, Target::List(ListKind::Tools));
    /// assert_eq!(n.stamp, EventStamp::Change { epoch: Some(3), version: 42, published_at_ms: Some(1) });
    /// ```
    pub fn parse(data: &str) -> Result<ListenMessage, ClientError> {
        let wire: WireMessage<'_> = serde_json::from_str(data)
            .map_err(|e| ClientError::Protocol(format!("listen message is not JSON-RPC: {e}")))?;
        if let Some(error) = wire.error {
            return Ok(ListenMessage::Error { code: error.code, message: error.message });
        }
        if wire.result.is_some() {
            return Ok(ListenMessage::Completed);
        }
        let Some(method) = wire.method else { return Ok(ListenMessage::Other) };
        let params = wire.params;
        if method == "notifications/subscriptions/acknowledged" {
            let honoured = params.and_then(|p| p.notifications).unwrap_or(Value::Null);
            return Ok(ListenMessage::Acknowledged { honoured });
        }
        let (uri, stamp) = match params {
            Some(p) => (p.uri, stamp_of(p.meta.and_then(|m| m.event))),
            None => (None, EventStamp::Unstamped),
        };
        let target = match (crate::list::notified_list(&method), uri) {
            (Some(kind), _) => Target::List(kind),
            (None, Some(uri)) if method == mcp_fleet_protocol::methods::RESOURCE_UPDATED => {
                Target::Resource(uri.into_owned())
            }
            _ => return Ok(ListenMessage::Other),
        };
        Ok(ListenMessage::Changed(Notification { target, stamp }))
    }
}

fn stamp_of(event: Option<WireEvent>) -> EventStamp {
    match event {
        None => EventStamp::Unstamped,
        Some(e) if e.gap => EventStamp::Gap { epoch: e.epoch, last_version: e.last_version },
        Some(WireEvent { epoch, version: Some(version), published_at_ms, .. }) => {
            EventStamp::Change { epoch, version, published_at_ms }
        }
        Some(_) => EventStamp::Unstamped,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_fleet_protocol::sse::{NotificationFrame, SseDecoder, SseEvent, ack_event, close_event};
    use serde_json::json;

    fn data_of(wire: &[u8]) -> String {
        let mut events = Vec::new();
        SseDecoder::new().feed(wire, &mut events);
        let [SseEvent::Message(m)] = events.as_slice() else { panic!("one message expected: {events:?}") };
        m.clone()
    }

    #[test]
    fn parses_the_servers_own_frames() {
        let mut wire = Vec::new();
        ack_event(&mut wire, &"s1".into(), &json!({"toolsListChanged": true}));
        assert_eq!(
            ListenMessage::parse(&data_of(&wire)).unwrap(),
            ListenMessage::Acknowledged { honoured: json!({"toolsListChanged": true}) }
        );
        let mut wire = Vec::new();
        NotificationFrame::new(
            "notifications/resources/updated",
            Some("a://b"),
            &json!({"version": 9, "publishedAtMs": 5}),
        )
        .write(&mut wire, b"\"s1\"");
        let ListenMessage::Changed(n) = ListenMessage::parse(&data_of(&wire)).unwrap() else { panic!() };
        assert_eq!(n.target, Target::Resource("a://b".into()));
        assert_eq!(n.stamp, EventStamp::Change { epoch: None, version: 9, published_at_ms: Some(5) });
        let mut wire = Vec::new();
        close_event(&mut wire, &"s1".into(), &json!({"name": "n", "version": "1"}));
        assert_eq!(ListenMessage::parse(&data_of(&wire)).unwrap(), ListenMessage::Completed);
    }

    #[test]
    fn the_event_key_is_the_protocols() {
        assert_eq!(mcp_fleet_protocol::envelope::FLEET_EVENT_KEY, "dev.mcp-fleet/event");
    }

    #[test]
    fn gap_frames_old_and_new_shapes() {
        let old = r#"{"jsonrpc":"2.0","method":"notifications/prompts/list_changed","params":{"_meta":{"dev.mcp-fleet/event":{"gap":true}}}}"#;
        let ListenMessage::Changed(n) = ListenMessage::parse(old).unwrap() else { panic!() };
        assert_eq!(n.stamp, EventStamp::Gap { epoch: None, last_version: None });
        let new = r#"{"jsonrpc":"2.0","method":"notifications/prompts/list_changed","params":{"_meta":{"dev.mcp-fleet/event":{"gap":true,"epoch":2,"lastVersion":17}}}}"#;
        let ListenMessage::Changed(n) = ListenMessage::parse(new).unwrap() else { panic!() };
        assert_eq!(n.stamp, EventStamp::Gap { epoch: Some(2), last_version: Some(17) });
        let tenant = r#"{"jsonrpc":"2.0","method":"notifications/prompts/list_changed","params":{"_meta":{"dev.mcp-fleet/event":{"seq":3,"gap":true}}}}"#;
        let ListenMessage::Changed(n) = ListenMessage::parse(tenant).unwrap() else { panic!() };
        assert_eq!(n.stamp, EventStamp::Gap { epoch: None, last_version: None }, "a tenant's gap frame");
    }

    #[test]
    fn errors_unknown_methods_and_garbage() {
        let refused = r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"Subscription limit reached"}}"#;
        assert!(matches!(ListenMessage::parse(refused).unwrap(), ListenMessage::Error { code: -32603, .. }));
        let other = r#"{"jsonrpc":"2.0","method":"notifications/message","params":{}}"#;
        assert_eq!(ListenMessage::parse(other).unwrap(), ListenMessage::Other);
        let unstamped = r#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{}}"#;
        let ListenMessage::Changed(n) = ListenMessage::parse(unstamped).unwrap() else { panic!() };
        assert_eq!(n.stamp, EventStamp::Unstamped);
        let tenant = r#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"dev.mcp-fleet/event":{"seq":1,"publishedAtMs":5}}}}"#;
        let ListenMessage::Changed(n) = ListenMessage::parse(tenant).unwrap() else { panic!() };
        assert_eq!(n.stamp, EventStamp::Unstamped, "a tenant's stream shows no bus position");
        assert!(ListenMessage::parse("not json").is_err());
    }
}
