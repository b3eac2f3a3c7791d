//! The change event that crosses the fleet: [`Change`] is what a publisher asks for,
//! [`EventEnvelope`] is what every node receives.
//!
//! The wire encoding is compact JSON with a `f` (format) field. A node decodes any format it
//! knows and ignores unknown fields, so replicas of different versions understand each other
//! during a rolling upgrade; an event it cannot decode is an error the consumer counts and
//! logs, never a crash.
//!
//! # Epochs and versions
//!
//! Every delivered event names its place in the bus's history as `(epoch, version)`. The
//! *epoch* names one unbroken history: it changes whenever the backend lost history (a Redis
//! restart without persistence or a failover to a replica that had not caught up, a JetStream
//! stream deleted and recreated). Within one epoch versions increase in delivery order; across
//! epochs they are not comparable, and a consumer that sees the epoch change reports a gap
//! first. Epochs are below 2<sup>53</sup> so they survive JSON numbers in any client.
//!
//! # Trace context
//!
//! An envelope may carry its publisher's W3C `traceparent` (`tp`), so a tracing backend can
//! link each node's delivery to the publish that caused it. The bus only carries the string:
//! producing and reading it is the server's job (its `otel` feature), and this crate stays free
//! of any tracing dependency. It is optional both ways: a node that predates it ignores the
//! unknown field, and an envelope without it decodes with `None`.

use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

/// The current wire format of [`EventEnvelope`].
pub const ENVELOPE_FORMAT: u32 = 1;

/// Epochs are below this bound (2<sup>53</sup>): exact as JSON numbers in every language.
pub const EPOCH_BOUND: u64 = 1 << 53;

/// What changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum EventKind {
    /// The tool list changed.
    #[serde(rename = "tools")]
    ToolsListChanged,
    /// The prompt list changed.
    #[serde(rename = "prompts")]
    PromptsListChanged,
    /// The resource list changed.
    #[serde(rename = "resources")]
    ResourcesListChanged,
    /// One resource's contents changed (the envelope carries its URI).
    #[serde(rename = "resource")]
    ResourceUpdated,
    /// A 2025-era session changed what its GET stream hears, wherever that stream is open (the
    /// envelope carries a [`SessionEvent`], and the URI for a (un)subscription). Not a catalog
    /// change: listen streams never see it, and [`EventKind::ALL`] does not list it.
    #[serde(rename = "session")]
    SessionChanged,
    /// A task of the tasks extension changed in the fleet's task store (the envelope's URI
    /// field carries the task id): nodes whose listen streams follow it read it and notify them;
    /// the node running it reads it too (an answer arrived, or it was cancelled). Not a catalog
    /// change: [`EventKind::ALL`] does not list it. Nodes that predate it count it undecodable.
    #[serde(rename = "task")]
    TaskChanged,
    /// An occurrence of a declared event type (the events extension): the envelope's
    /// [`payload`](EventEnvelope::payload) carries it. Not a catalog change: listen streams
    /// never see it, and [`EventKind::ALL`] does not list it. Nodes that predate it count it
    /// undecodable.
    #[serde(rename = "event")]
    Occurred,
}

/// What happened to a 2025-era session ([`EventKind::SessionChanged`]).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct SessionEvent {
    /// The session id.
    #[serde(rename = "id")]
    pub session: String,
    /// What changed.
    pub op: SessionOp,
}

/// A session change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SessionOp {
    /// `resources/subscribe` of the envelope's URI.
    Subscribe,
    /// `resources/unsubscribe` of the envelope's URI.
    Unsubscribe,
    /// The session ended (DELETE): its streams close.
    End,
    /// The client cancelled its request whose id (compact JSON) is the envelope's URI field:
    /// the node running it stops it.
    Cancel,
    /// The client answered the server-to-client request whose id is the envelope's URI field
    /// (the answer waits in the replies keyspace): the node whose call awaits it reads it now.
    Answered,
}

impl EventKind {
    /// The four catalog change kinds a publisher announces, in a fixed order.
    pub const ALL: [EventKind; 4] = [
        EventKind::ToolsListChanged,
        EventKind::PromptsListChanged,
        EventKind::ResourcesListChanged,
        EventKind::ResourceUpdated,
    ];

    /// Short stable name, used in subjects and metrics (`tools`, `prompts`, `resources`, `resource`).
    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::ToolsListChanged => "tools",
            EventKind::PromptsListChanged => "prompts",
            EventKind::ResourcesListChanged => "resources",
            EventKind::ResourceUpdated => "resource",
            EventKind::SessionChanged => "session",
            EventKind::TaskChanged => "task",
            EventKind::Occurred => "event",
        }
    }

    /// Parse the short name of a catalog change kind ([`EventKind::ALL`]).
    pub fn parse(s: &str) -> Option<EventKind> {
        EventKind::ALL.into_iter().find(|k| k.as_str() == s)
    }
}

/// A change a publisher asks the bus to spread.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Change {
    /// `None` reaches every stream; `Some(tenant)` only streams of that scope.
    pub scope: Option<String>,
    /// What changed.
    pub kind: EventKind,
    /// The resource URI, for [`EventKind::ResourceUpdated`] (and a session's (un)subscription).
    pub uri: Option<String>,
    /// The session change, for [`EventKind::SessionChanged`].
    pub session: Option<SessionEvent>,
}

impl Change {
    /// A list change in the global scope.
    pub fn list(kind: EventKind) -> Change {
        Change { scope: None, kind, uri: None, session: None }
    }

    /// A resource update in the global scope.
    pub fn resource(uri: impl Into<String>) -> Change {
        Change { scope: None, kind: EventKind::ResourceUpdated, uri: Some(uri.into()), session: None }
    }

    /// A change of the 2025-era session `session`: `op` of `uri`, or its end.
    pub fn session(session: impl Into<String>, op: SessionOp, uri: Option<String>) -> Change {
        let session = Some(SessionEvent { session: session.into(), op });
        Change { scope: None, kind: EventKind::SessionChanged, uri, session }
    }

    /// The record of task `task` changed (see [`EventKind::TaskChanged`]).
    pub fn task(task: impl Into<String>) -> Change {
        Change { scope: None, kind: EventKind::TaskChanged, uri: Some(task.into()), session: None }
    }

    /// The same change restricted to one scope.
    pub fn in_scope(mut self, scope: impl Into<String>) -> Change {
        self.scope = Some(scope.into());
        self
    }
}

/// A change as every node receives it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EventEnvelope {
    /// Wire format of this envelope.
    #[serde(rename = "f")]
    pub format: u32,
    /// Tenant scope; absent = global.
    #[serde(rename = "s", skip_serializing_if = "Option::is_none", default)]
    pub scope: Option<String>,
    /// What changed.
    #[serde(rename = "k")]
    pub kind: EventKind,
    /// The URI of an updated resource.
    #[serde(rename = "u", skip_serializing_if = "Option::is_none", default)]
    pub uri: Option<String>,
    /// The session change of a [`EventKind::SessionChanged`] event.
    #[serde(rename = "ss", skip_serializing_if = "Option::is_none", default)]
    pub session: Option<SessionEvent>,
    /// The history this event belongs to (assigned by the backend; see the module docs).
    #[serde(rename = "ep", default)]
    pub epoch: u64,
    /// Increasing within an epoch (assigned by the backend).
    #[serde(rename = "v", default)]
    pub version: u64,
    /// Unique id of this event (duplicates share it).
    #[serde(rename = "i")]
    pub event_id: String,
    /// The node that published it.
    #[serde(rename = "o")]
    pub origin: String,
    /// Publish time, milliseconds since the Unix epoch.
    #[serde(rename = "t")]
    pub published_at_ms: u64,
    /// The publisher's W3C trace context (`traceparent`, e.g.
    /// `00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01`), when it was tracing; absent
    /// otherwise and on envelopes from older nodes (see the module docs).
    #[serde(rename = "tp", skip_serializing_if = "Option::is_none", default)]
    pub trace_parent: Option<String>,
    /// What an [`EventKind::Occurred`] event carries (the occurrence, as JSON); absent on
    /// every other kind.
    #[serde(rename = "p", skip_serializing_if = "Option::is_none", default)]
    pub payload: Option<String>,
}

/// Why bytes from the broker are not an event this node understands.
#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    /// Not JSON of the envelope's shape (or an unknown kind).
    #[error("undecodable event envelope: {0}")]
    Malformed(#[from] serde_json::Error),
    /// A resource update (or a task change) without its URI (task id).
    #[error("resource update or task event without a uri")]
    MissingUri,
    /// A session event without its session change.
    #[error("session event without its session change")]
    MissingSession,
    /// An occurrence without its payload.
    #[error("event occurrence without its payload")]
    MissingPayload,
}

impl EventEnvelope {
    /// Stamp a change with its identity, origin and publish time (epoch and version 0 until the
    /// backend assigns them; no trace context until the publisher sets
    /// [`trace_parent`](EventEnvelope::trace_parent)).
    ///
    /// ```
    /// use mcp_fleet_bus::{Change, EventEnvelope, EventKind};
    /// let event = EventEnvelope::new(Change::list(EventKind::ToolsListChanged), "node-a");
    /// assert_eq!((event.origin.as_str(), event.version, event.trace_parent), ("node-a", 0, None));
    /// ```
    pub fn new(change: Change, origin: &str) -> EventEnvelope {
        EventEnvelope {
            format: ENVELOPE_FORMAT,
            scope: change.scope,
            kind: change.kind,
            uri: change.uri,
            session: change.session,
            epoch: 0,
            version: 0,
            event_id: new_event_id(),
            origin: origin.to_owned(),
            published_at_ms: now_ms(),
            trace_parent: None,
            payload: None,
        }
    }

    /// An occurrence of an event type (see [`EventKind::Occurred`]) carrying `payload`, in the
    /// global scope or `scope`'s, with `event_id` as its id (an occurrence's own, so a
    /// duplicate emit is dropped like any duplicate).
    ///
    /// ```
    /// use mcp_fleet_bus::{EventEnvelope, EventKind};
    /// let e = EventEnvelope::occurrence("e1", r#"{"name":"n"}"#.into(), Some("t1".into()), "node-a");
    /// assert_eq!((e.kind, e.event_id.as_str(), e.scope.as_deref()), (EventKind::Occurred, "e1", Some("t1")));
    /// assert_eq!(EventEnvelope::decode(&e.encode()).unwrap(), e);
    /// ```
    pub fn occurrence(event_id: &str, payload: String, scope: Option<String>, origin: &str) -> EventEnvelope {
        let change = Change { scope, kind: EventKind::Occurred, uri: None, session: None };
        EventEnvelope { event_id: event_id.to_owned(), payload: Some(payload), ..EventEnvelope::new(change, origin) }
    }

    /// Compact wire bytes.
    pub fn encode(&self) -> Vec<u8> {
        // Serializing this plain struct cannot fail.
        serde_json::to_vec(self).unwrap_or_default()
    }

    /// Decode wire bytes (any known format; unknown fields are ignored).
    pub fn decode(bytes: &[u8]) -> Result<EventEnvelope, DecodeError> {
        let env: EventEnvelope = serde_json::from_slice(bytes)?;
        if matches!(env.kind, EventKind::ResourceUpdated | EventKind::TaskChanged) && env.uri.is_none() {
            return Err(DecodeError::MissingUri);
        }
        if env.kind == EventKind::SessionChanged && env.session.is_none() {
            return Err(DecodeError::MissingSession);
        }
        if env.kind == EventKind::Occurred && env.payload.is_none() {
            return Err(DecodeError::MissingPayload);
        }
        Ok(env)
    }

    /// The change this envelope carries.
    pub fn change(&self) -> Change {
        Change { scope: self.scope.clone(), kind: self.kind, uri: self.uri.clone(), session: self.session.clone() }
    }
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}

/// A fresh random epoch in `1..EPOCH_BOUND`.
pub fn new_epoch() -> u64 {
    rand::random_range(1..EPOCH_BOUND)
}

/// A random 128-bit id in hex.
pub fn new_event_id() -> String {
    format!("{:032x}", rand::random::<u128>())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_compactly() {
        let mut e = EventEnvelope::new(Change::resource("a://b").in_scope("t1"), "node-1");
        e.version = 9;
        e.epoch = new_epoch();
        let bytes = e.encode();
        assert!(bytes.len() < 180, "{}", String::from_utf8_lossy(&bytes));
        assert_eq!(EventEnvelope::decode(&bytes).unwrap(), e);
    }

    #[test]
    fn newer_formats_with_extra_fields_still_decode() {
        let bytes = br#"{"f":2,"k":"tools","v":3,"i":"x","o":"n","t":1,"new_field":[1,2]}"#;
        let e = EventEnvelope::decode(bytes).unwrap();
        assert_eq!((e.kind, e.version, e.format), (EventKind::ToolsListChanged, 3, 2));
        assert_eq!(e.epoch, 0, "an envelope from a node that predates epochs decodes with epoch 0");
        assert_eq!(e.trace_parent, None, "an envelope from a node that predates tracing has no trace context");
    }

    #[test]
    fn trace_context_travels_only_when_set() {
        let mut e = EventEnvelope::new(Change::list(EventKind::ToolsListChanged), "node-1");
        let untraced = String::from_utf8(e.encode()).unwrap();
        assert!(!untraced.contains("\"tp\""), "no trace context, no field: {untraced}");
        e.trace_parent = Some("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01".into());
        let bytes = e.encode();
        assert!(bytes.len() < 220, "{}", String::from_utf8_lossy(&bytes));
        assert_eq!(EventEnvelope::decode(&bytes).unwrap(), e);
        // What a node that predates the field publishes: no `tp`, and it decodes without one.
        let mut old: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(old["tp"], "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
        old.as_object_mut().unwrap().remove("tp");
        let decoded = EventEnvelope::decode(old.to_string().as_bytes()).unwrap();
        assert_eq!(decoded.trace_parent, None);
        assert_eq!(decoded.event_id, e.event_id);
    }

    #[test]
    fn session_events_round_trip_and_need_their_change() {
        let e = EventEnvelope::new(Change::session("s1", SessionOp::Subscribe, Some("a://b".into())), "node-1");
        assert_eq!(EventEnvelope::decode(&e.encode()).unwrap(), e);
        assert!(matches!(
            EventEnvelope::decode(br#"{"f":1,"k":"session","i":"x","o":"n","t":1}"#),
            Err(DecodeError::MissingSession)
        ));
        assert_eq!(EventKind::parse("session"), None, "not a kind a publisher announces");
    }

    #[test]
    fn task_events_round_trip_and_need_their_task() {
        let e = EventEnvelope::new(Change::task("t1"), "node-1");
        assert_eq!(EventEnvelope::decode(&e.encode()).unwrap(), e);
        assert_eq!(e.uri.as_deref(), Some("t1"));
        assert!(matches!(
            EventEnvelope::decode(br#"{"f":1,"k":"task","i":"x","o":"n","t":1}"#),
            Err(DecodeError::MissingUri)
        ));
        assert_eq!(EventKind::parse("task"), None, "not a kind a publisher announces");
    }

    #[test]
    fn epochs_are_exact_json_numbers() {
        for _ in 0..1000 {
            let epoch = new_epoch();
            assert!((1..EPOCH_BOUND).contains(&epoch));
            assert_eq!(epoch as f64 as u64, epoch);
        }
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        assert!(EventEnvelope::decode(b"\xff\x00").is_err());
        assert!(EventEnvelope::decode(br#"{"f":1,"k":"weather","i":"x","o":"n","t":1}"#).is_err());
        assert!(matches!(
            EventEnvelope::decode(br#"{"f":1,"k":"resource","i":"x","o":"n","t":1}"#),
            Err(DecodeError::MissingUri)
        ));
    }
}
