//! [`PendingSet`]: what one listen stream still has to write, coalesced.
//!
//! At most one pending notification per list type and per URI: a burst of changes to the same
//! thing collapses into one write (the newest event's frame), so a slow reader costs bounded
//! memory and never loses a change — the last notification it reads is newer than every change
//! it missed. A plain sync struct; the stream body drives it.
//!
//! On a stream of a scoped principal every frame written carries the stream's own sequence
//! number (`"seq"`: 1, 2, 3… with no holes) in place of the bus's position, which would count
//! other tenants' events (see `tenant`).

use std::collections::HashMap;
use std::sync::Arc;

use mcp_fleet_protocol::ListKind;
use mcp_fleet_protocol::sse::NotificationFrame;

/// Pending notifications of one subscription, plus its keepalive and closing flags.
#[derive(Debug, Default)]
pub(crate) struct PendingSet {
    /// Indexed by [`ListKind::index`]; the templates slot stays empty (their changes are
    /// announced as resource-list changes).
    lists: [Option<Arc<NotificationFrame>>; 4],
    uris: HashMap<Arc<str>, Arc<NotificationFrame>>,
    /// Pending task notifications, the newest per task id.
    tasks: HashMap<Arc<str>, Arc<NotificationFrame>>,
    /// A keepalive comment is due (written only if nothing else is).
    pub(crate) keepalive: bool,
    /// The server is closing this stream: write the completion result and end.
    pub(crate) closing: bool,
    /// The number of the last frame written, on a stream of a scoped principal (`None` on
    /// others: their frames carry the bus's position).
    seq: Option<u64>,
}

impl PendingSet {
    /// The pending set of a stream of a scoped principal (`scoped`), whose frames are numbered,
    /// or of an unscoped one.
    pub(crate) fn new(scoped: bool) -> Self {
        PendingSet { seq: scoped.then_some(0), ..PendingSet::default() }
    }

    /// Queue a list-change frame; returns `true` if it replaced (coalesced) a pending one.
    pub(crate) fn offer_list(&mut self, list: ListKind, frame: Arc<NotificationFrame>) -> bool {
        self.lists[list.index()].replace(frame).is_some()
    }

    /// Queue a resource-updated frame; returns `true` if it coalesced a pending one.
    pub(crate) fn offer_uri(&mut self, uri: Arc<str>, frame: Arc<NotificationFrame>) -> bool {
        self.uris.insert(uri, frame).is_some()
    }

    /// Queue a task notification; returns `true` if it coalesced a pending one (each carries
    /// the whole task, so the newest says everything).
    pub(crate) fn offer_task(&mut self, task: Arc<str>, frame: Arc<NotificationFrame>) -> bool {
        self.tasks.insert(task, frame).is_some()
    }

    /// Whether nothing is pending.
    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.lists.iter().all(Option::is_none) && self.uris.is_empty() && self.tasks.is_empty()
    }

    /// Write every pending frame, stamped with the subscription id, into one buffer (one write
    /// to the socket for all of them); returns how many frames were written.
    pub(crate) fn drain_into(&mut self, buf: &mut Vec<u8>, subscription_id_json: &[u8]) -> usize {
        let mut written = 0;
        for frame in self.lists.iter_mut().filter_map(Option::take) {
            stamp(&frame, buf, subscription_id_json, &mut self.seq);
            written += 1;
        }
        for (_, frame) in self.uris.drain().chain(self.tasks.drain()) {
            stamp(&frame, buf, subscription_id_json, &mut self.seq);
            written += 1;
        }
        written
    }
}

/// Write `frame` with the subscription id and, on a numbered stream, the next number.
fn stamp(frame: &NotificationFrame, buf: &mut Vec<u8>, subscription_id_json: &[u8], seq: &mut Option<u64>) {
    match seq {
        Some(last) => *last += u64::from(frame.write_numbered(buf, subscription_id_json, *last + 1)),
        None => frame.write(buf, subscription_id_json),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn frame(method: &str, uri: Option<&str>, version: u64) -> Arc<NotificationFrame> {
        Arc::new(NotificationFrame::new(method, uri, &json!({"version": version})))
    }

    #[test]
    fn coalesces_per_type_and_uri_keeping_the_newest() {
        let mut p = PendingSet::default();
        assert!(!p.offer_list(ListKind::Tools, frame("t", None, 1)));
        assert!(p.offer_list(ListKind::Tools, frame("t", None, 2)));
        assert!(!p.offer_uri("a".into(), frame("u", Some("a"), 3)));
        assert!(p.offer_uri("a".into(), frame("u", Some("a"), 4)));
        assert!(!p.offer_uri("b".into(), frame("u", Some("b"), 5)));
        let mut buf = Vec::new();
        assert_eq!(p.drain_into(&mut buf, b"1"), 3);
        let text = String::from_utf8(buf).unwrap();
        assert!(text.contains("\"version\":2") && text.contains("\"version\":4") && text.contains("\"version\":5"));
        assert!(!text.contains("\"version\":1") && !text.contains("\"version\":3"));
        assert!(p.is_empty());
    }

    #[test]
    fn a_scoped_stream_numbers_its_frames_without_holes() {
        let mut p = PendingSet::new(true);
        let mut buf = Vec::new();
        p.offer_list(ListKind::Tools, frame("t", None, 40));
        p.offer_list(ListKind::Tools, frame("t", None, 41)); // coalesced: one frame, one number
        p.offer_uri("a".into(), frame("u", Some("a"), 42));
        assert_eq!(p.drain_into(&mut buf, b"1"), 2);
        p.offer_list(ListKind::Prompts, frame("p", None, 45));
        assert_eq!(p.drain_into(&mut buf, b"1"), 1);
        let text = String::from_utf8(buf).unwrap();
        for n in 1..=3 {
            assert_eq!(text.matches(&format!("{{\"seq\":{n},")).count(), 1, "number {n} once: {text}");
        }
        let mut unscoped = PendingSet::new(false);
        unscoped.offer_list(ListKind::Tools, frame("t", None, 40));
        let mut buf = Vec::new();
        unscoped.drain_into(&mut buf, b"1");
        assert!(!String::from_utf8(buf).unwrap().contains("seq"));
    }

    #[test]
    fn any_offer_sequence_ends_with_the_newest_frame_of_each_key() {
        // Property: for every sequence of offers over 2 list slots and 2 URIs, draining once
        // yields exactly one frame per distinct key, carrying that key's last version.
        let keys =
            [(Some(ListKind::Tools), None), (Some(ListKind::Prompts), None), (None, Some("a")), (None, Some("b"))];
        for seq in 0..4u32.pow(5) {
            let mut p = PendingSet::default();
            let mut last = [None; 4];
            let mut s = seq;
            for version in 0..5u64 {
                let k = (s % 4) as usize;
                s /= 4;
                match keys[k] {
                    (Some(slot), _) => p.offer_list(slot, frame("l", None, version)),
                    (_, Some(uri)) => p.offer_uri(uri.into(), frame("u", Some(uri), version)),
                    _ => unreachable!(),
                };
                last[k] = Some(version);
            }
            let mut buf = Vec::new();
            let n = p.drain_into(&mut buf, b"1");
            assert_eq!(n, last.iter().flatten().count());
            let text = String::from_utf8(buf).unwrap();
            for v in last.iter().flatten() {
                assert!(text.contains(&format!("\"version\":{v}}}")), "seq {seq}: missing version {v}");
            }
        }
    }
}
