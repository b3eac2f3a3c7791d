//! The SSE frame codec: encoding frames the server writes and decoding them for clients
//! (the load tester and tests).
//!
//! Every message is one event, `event: message\ndata: <one-line JSON>\n\n`, never split over
//! several `data:` lines and never with `id:`/`retry:` (HTTP-12). Change notifications are
//! serialized once per event as a [`NotificationFrame`]: everything but the listen stream's
//! subscription id, which each stream splices in when it writes — and, on a stream of a scoped
//! principal, the stream's own sequence number ([`NotificationFrame::write_numbered`]).

use std::io::Write as _;

use serde_json::{Map, Value, json};

use crate::envelope::{FLEET_EVENT_KEY, SERVER_INFO_KEY, SUBSCRIPTION_ID_KEY};
use crate::jsonrpc::{RequestId, value_bytes};

/// The keep-alive comment written on idle streams (HTTP-11).
pub const KEEPALIVE: &[u8] = b": keepalive\n\n";
const EVENT_PREFIX: &[u8] = b"event: message\ndata: ";
const EVENT_SUFFIX: &[u8] = b"\n\n";

/// Append one SSE message event carrying `json` (which must be one line).
pub fn write_event(buf: &mut Vec<u8>, json: &[u8]) {
    buf.reserve(EVENT_PREFIX.len() + json.len() + EVENT_SUFFIX.len());
    buf.extend_from_slice(EVENT_PREFIX);
    buf.extend_from_slice(json);
    buf.extend_from_slice(EVENT_SUFFIX);
}

/// Append one SSE message event carrying `json`, with an event id (`id: …`) a client can
/// resume from with `Last-Event-ID` — the 2025 era's streams only: 2026-07-28 streams carry
/// no ids (HTTP-12). `id` must be one line without NUL.
pub fn write_event_with_id(buf: &mut Vec<u8>, id: &str, json: &[u8]) {
    buf.extend_from_slice(b"id: ");
    buf.extend_from_slice(id.as_bytes());
    buf.push(b'\n');
    write_event(buf, json);
}

/// A change notification serialized once per event, waiting for a subscription id.
///
/// `head` ends right where the subscription id goes; `tail` closes the JSON and the event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotificationFrame {
    head: Box<[u8]>,
    tail: Box<[u8]>,
    /// Where in `tail` a stream's sequence number goes: right inside the fleet event object
    /// (`None`: the frame has none).
    seq_at: Option<usize>,
}

impl NotificationFrame {
    /// Build the frame for `method`, with `uri` for `resources/updated`, and the fleet event
    /// metadata (version, publish time) under the project `_meta` key.
    pub fn new(method: &str, uri: Option<&str>, event_meta: &Value) -> NotificationFrame {
        let mut params = Map::new();
        if let Some(uri) = uri {
            params.insert("uri".into(), json!(uri));
        }
        NotificationFrame::with_params(method, &params, Some(event_meta))
    }

    /// Build the frame for `method` with these `params` members (a `_meta` among them is
    /// left out: the frame's own `_meta` carries the subscription id, and the fleet event
    /// metadata when given) — `notifications/tasks`, whose params are the whole task.
    pub fn with_params(method: &str, params: &Map<String, Value>, event_meta: Option<&Value>) -> NotificationFrame {
        let mut head = Vec::with_capacity(128);
        head.extend_from_slice(EVENT_PREFIX);
        head.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"method\":");
        push_json(&mut head, &json!(method));
        head.extend_from_slice(b",\"params\":{");
        for (key, value) in params.iter().filter(|(k, _)| k.as_str() != "_meta") {
            push_json(&mut head, &json!(key));
            head.push(b':');
            push_json(&mut head, value);
            head.push(b',');
        }
        head.extend_from_slice(b"\"_meta\":{");
        push_json(&mut head, &json!(SUBSCRIPTION_ID_KEY));
        head.push(b':');
        let mut tail = Vec::with_capacity(64);
        if let Some(event_meta) = event_meta {
            tail.push(b',');
            push_json(&mut tail, &json!(FLEET_EVENT_KEY));
            tail.push(b':');
            push_json(&mut tail, event_meta);
        }
        tail.extend_from_slice(b"}}}");
        tail.extend_from_slice(EVENT_SUFFIX);
        NotificationFrame { seq_at: seq_slot(&tail), head: head.into(), tail: tail.into() }
    }

    /// Append the frame stamped with one stream's subscription id (compact JSON of the id).
    pub fn write(&self, buf: &mut Vec<u8>, subscription_id_json: &[u8]) {
        buf.reserve(self.head.len() + subscription_id_json.len() + self.tail.len());
        buf.extend_from_slice(&self.head);
        buf.extend_from_slice(subscription_id_json);
        buf.extend_from_slice(&self.tail);
    }

    /// Append the frame stamped with one stream's subscription id and its sequence number
    /// `seq` as the first member of the fleet event metadata (`{"seq": 7, …}`): the per-stream
    /// counter streams of a scoped principal carry instead of the bus's position. A frame
    /// without fleet event metadata is written as by [`write`](Self::write); answers whether
    /// `seq` was written.
    pub fn write_numbered(&self, buf: &mut Vec<u8>, subscription_id_json: &[u8], seq: u64) -> bool {
        let Some(at) = self.seq_at else {
            self.write(buf, subscription_id_json);
            return false;
        };
        let (open, rest) = self.tail.split_at(at);
        buf.reserve(self.head.len() + subscription_id_json.len() + self.tail.len() + 28);
        buf.extend_from_slice(&self.head);
        buf.extend_from_slice(subscription_id_json);
        buf.extend_from_slice(open);
        // Writing into a Vec cannot fail.
        let _ = write!(buf, "\"seq\":{seq}");
        if rest.first() != Some(&b'}') {
            buf.push(b',');
        }
        buf.extend_from_slice(rest);
        true
    }
}

/// Where a stream's sequence number goes in a frame's `tail`: after the `{` that opens the
/// fleet event object, when the tail starts with one.
fn seq_slot(tail: &[u8]) -> Option<usize> {
    let mut open = vec![b','];
    push_json(&mut open, &json!(FLEET_EVENT_KEY));
    open.extend_from_slice(b":{");
    tail.starts_with(&open).then_some(open.len())
}

fn push_json(buf: &mut Vec<u8>, v: &Value) {
    // Writing a Value into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *buf, v);
}

/// The acknowledgement event: the first message of every listen stream (LSTN-3, LSTN-4).
pub fn ack_event(buf: &mut Vec<u8>, subscription_id: &RequestId, honoured: &Value) {
    let msg = json!({
        "jsonrpc": "2.0",
        "method": "notifications/subscriptions/acknowledged",
        "params": {"notifications": honoured, "_meta": {SUBSCRIPTION_ID_KEY: subscription_id}}
    });
    write_event(buf, &value_bytes(&msg));
}

/// The graceful-close event: the listen request's own `complete` result (LSTN-13).
pub fn close_event(buf: &mut Vec<u8>, subscription_id: &RequestId, server_info: &Value) {
    let msg = json!({
        "jsonrpc": "2.0",
        "id": subscription_id,
        "result": {"resultType": "complete", "_meta": {SUBSCRIPTION_ID_KEY: subscription_id, SERVER_INFO_KEY: server_info}}
    });
    write_event(buf, &value_bytes(&msg));
}

/// One decoded SSE event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SseEvent {
    /// An event with its `data` (multiple `data:` lines joined by `\n`).
    Message(String),
    /// A comment line (e.g. keep-alive).
    Comment(String),
}

/// An incremental SSE decoder: feed it bytes as they arrive, in any split.
#[derive(Debug, Default)]
pub struct SseDecoder {
    line: Vec<u8>,
    data: Option<String>,
    /// SSE's "last event ID buffer": the newest `id:` field read.
    last_id: Option<String>,
}

impl SseDecoder {
    /// A fresh decoder.
    pub fn new() -> Self {
        Self::default()
    }

    /// The newest event id read (`id:`), kept across events as SSE's last event ID buffer is:
    /// what a client resuming now sends as `Last-Event-ID`. It covers every byte fed so far,
    /// including events not yet taken from `out`.
    pub fn last_event_id(&self) -> Option<&str> {
        self.last_id.as_deref()
    }

    /// Feed bytes; complete events are appended to `out`.
    pub fn feed(&mut self, bytes: &[u8], out: &mut Vec<SseEvent>) {
        for &b in bytes {
            if b == b'\n' {
                let line = std::mem::take(&mut self.line);
                self.finish_line(line, out);
            } else {
                self.line.push(b);
            }
        }
    }

    fn finish_line(&mut self, mut line: Vec<u8>, out: &mut Vec<SseEvent>) {
        if line.last() == Some(&b'\r') {
            line.pop();
        }
        if line.is_empty() {
            if let Some(data) = self.data.take() {
                out.push(SseEvent::Message(data));
            }
            return;
        }
        let text = String::from_utf8_lossy(&line);
        if let Some(comment) = text.strip_prefix(':') {
            out.push(SseEvent::Comment(comment.trim_start().to_owned()));
        } else if let Some(value) = text.strip_prefix("data:") {
            let value = value.strip_prefix(' ').unwrap_or(value);
            match &mut self.data {
                Some(d) => {
                    d.push('\n');
                    d.push_str(value);
                }
                None => self.data = Some(value.to_owned()),
            }
        } else if let Some(value) = text.strip_prefix("id:") {
            // An id containing NUL is ignored (the SSE processing model).
            let value = value.strip_prefix(' ').unwrap_or(value);
            if !value.contains('\0') {
                self.last_id = Some(value.to_owned());
            }
        }
        // `event:`, `retry:` and unknown fields carry nothing we need.
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notification_frame_splices_the_subscription_id() {
        let frame = NotificationFrame::new("notifications/resources/updated", Some("a://b"), &json!({"version": 7}));
        let mut buf = Vec::new();
        frame.write(&mut buf, b"42");
        let text = String::from_utf8(buf).unwrap();
        let data = text.strip_prefix("event: message\ndata: ").unwrap().strip_suffix("\n\n").unwrap();
        let v: Value = serde_json::from_str(data).unwrap();
        assert_eq!(v["params"]["uri"], "a://b");
        assert_eq!(v["params"]["_meta"][SUBSCRIPTION_ID_KEY], 42);
        assert_eq!(v["params"]["_meta"][FLEET_EVENT_KEY]["version"], 7);
    }

    #[test]
    fn a_frame_with_params_carries_them_and_its_own_meta_only() {
        let params = json!({"taskId": "t1", "status": "completed", "result": {"content": []}, "_meta": {"x": 1}});
        let frame = NotificationFrame::with_params("notifications/tasks", params.as_object().unwrap(), None);
        let mut buf = Vec::new();
        frame.write(&mut buf, b"\"s\"");
        let text = String::from_utf8(buf).unwrap();
        let data = text.strip_prefix("event: message\ndata: ").unwrap().strip_suffix("\n\n").unwrap();
        let v: Value = serde_json::from_str(data).unwrap();
        assert_eq!(v["method"], "notifications/tasks");
        assert_eq!(v["params"]["taskId"], "t1");
        assert_eq!(v["params"]["result"], json!({"content": []}));
        assert_eq!(v["params"]["_meta"], json!({SUBSCRIPTION_ID_KEY: "s"}));
    }

    #[test]
    fn a_numbered_frame_carries_the_streams_sequence_number_first() {
        let frame = NotificationFrame::new("notifications/tools/list_changed", None, &json!({"publishedAtMs": 5}));
        let mut buf = Vec::new();
        assert!(frame.write_numbered(&mut buf, b"\"s\"", 12));
        let text = String::from_utf8(buf).unwrap();
        assert!(text.ends_with("\"dev.mcp-fleet/event\":{\"seq\":12,\"publishedAtMs\":5}}}}\n\n"), "{text}");
        let mut plain = Vec::new();
        frame.write(&mut plain, b"1");
        assert!(String::from_utf8(plain).unwrap().contains(r#"{"publishedAtMs":5}"#), "write leaves it out");

        let empty = NotificationFrame::new("notifications/tools/list_changed", None, &json!({}));
        let mut buf = Vec::new();
        assert!(empty.write_numbered(&mut buf, b"1", 1));
        let text = String::from_utf8(buf).unwrap();
        let v: Value = serde_json::from_str(text.strip_prefix("event: message\ndata: ").unwrap().trim_end()).unwrap();
        assert_eq!(v["params"]["_meta"][FLEET_EVENT_KEY], json!({"seq": 1}));

        let bare = NotificationFrame::with_params("notifications/tasks", &Map::new(), None);
        assert!(!bare.write_numbered(&mut Vec::new(), b"1", 3), "a frame without fleet metadata gets no number");
    }

    #[test]
    fn decoder_keeps_the_last_event_id_across_events() {
        let mut dec = SseDecoder::new();
        let mut out = Vec::new();
        assert_eq!(dec.last_event_id(), None);
        dec.feed(b"id: 7-1\ndata: \n\n", &mut out);
        assert_eq!(dec.last_event_id(), Some("7-1"));
        dec.feed(b"data: x\n\nid: a\0b\ndata: y\n\n", &mut out);
        assert_eq!(dec.last_event_id(), Some("7-1"), "kept across an event without id; NUL ignored");
        dec.feed(b"id:7-2\ndata: z\n\n", &mut out);
        assert_eq!(dec.last_event_id(), Some("7-2"));
        assert_eq!(out.len(), 4);
    }

    #[test]
    fn decoder_handles_every_byte_split() {
        let mut wire = Vec::new();
        ack_event(&mut wire, &RequestId::from("s1"), &json!({"toolsListChanged": true}));
        wire.extend_from_slice(KEEPALIVE);
        NotificationFrame::new("notifications/tools/list_changed", None, &json!({})).write(&mut wire, b"\"s1\"");
        wire.extend_from_slice(b"data: a\r\ndata: b\r\n\r\n");
        for split in 0..=wire.len() {
            let mut dec = SseDecoder::new();
            let mut out = Vec::new();
            dec.feed(&wire[..split], &mut out);
            dec.feed(&wire[split..], &mut out);
            assert_eq!(out.len(), 4, "split at {split}");
            assert_eq!(out[1], SseEvent::Comment("keepalive".into()));
            assert_eq!(out[3], SseEvent::Message("a\nb".into()));
            let SseEvent::Message(first) = &out[0] else { panic!("expected message") };
            let v: Value = serde_json::from_str(first).unwrap();
            assert_eq!(v["method"], "notifications/subscriptions/acknowledged");
        }
    }
}
