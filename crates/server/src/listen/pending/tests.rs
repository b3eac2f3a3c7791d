//! Unit tests of the pending set, and a model-based property test: a plain map driven by the
//! same random offers and drains must agree with it on what coalesces and what is written.

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
    let keys = [(Some(ListKind::Tools), None), (Some(ListKind::Prompts), None), (None, Some("a")), (None, Some("b"))];
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

mod model {
    use std::collections::BTreeMap;

    use mcp_fleet_protocol::envelope::{FLEET_EVENT_KEY, SUBSCRIPTION_ID_KEY};
    use mcp_fleet_protocol::sse::{SseDecoder, SseEvent};
    use proptest::prelude::*;
    use serde_json::{Map, Value, json};

    use super::*;

    /// What one pending frame is for.
    #[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
    enum Key {
        List(usize),
        Uri(String),
        Task(String),
    }

    #[derive(Debug, Clone)]
    enum Op {
        /// Offer a frame for this key; a task frame with or without fleet event metadata
        /// (only frames with it are numbered on a scoped stream).
        Offer(Key, bool),
        Drain,
    }

    fn op() -> impl Strategy<Value = Op> {
        let name = prop::sample::select(vec!["a", "b", "c", "file:///x y", "\u{e9}"]).prop_map(str::to_owned);
        prop_oneof![
            3 => (0..4usize).prop_map(|i| Op::Offer(Key::List(i), true)),
            3 => name.clone().prop_map(|u| Op::Offer(Key::Uri(u), true)),
            2 => (name, any::<bool>()).prop_map(|(t, meta)| Op::Offer(Key::Task(t), meta)),
            1 => Just(Op::Drain),
        ]
    }

    /// The frame for `key` carrying `version` (in the fleet event metadata, or in the task's
    /// params when it has none), so a written frame says which offer it was.
    fn frame(key: &Key, version: u64, meta: bool) -> Arc<NotificationFrame> {
        let event = json!({"version": version});
        Arc::new(match key {
            Key::List(i) => NotificationFrame::new(&format!("list/{i}"), None, &event),
            Key::Uri(uri) => NotificationFrame::new("updated", Some(uri), &event),
            Key::Task(task) => {
                let params: Map<String, Value> =
                    [("taskId".to_owned(), json!(task)), ("v".to_owned(), json!(version))].into_iter().collect();
                NotificationFrame::with_params("task", &params, meta.then_some(&event))
            }
        })
    }

    /// A written frame: its key, its version and its sequence number (if numbered).
    fn read(message: &str) -> (Key, u64, Option<u64>) {
        let v: Value = serde_json::from_str(message).expect("a frame is one JSON object");
        assert_eq!(v["params"]["_meta"][SUBSCRIPTION_ID_KEY], json!(7), "stamped with the subscription id");
        let event = &v["params"]["_meta"][FLEET_EVENT_KEY];
        let method = v["method"].as_str().expect("a method");
        let key = match method.strip_prefix("list/") {
            Some(i) => Key::List(i.parse().expect("a slot")),
            None if method == "updated" => Key::Uri(v["params"]["uri"].as_str().expect("a uri").to_owned()),
            None => Key::Task(v["params"]["taskId"].as_str().expect("a task id").to_owned()),
        };
        let version = event["version"].as_u64().or(v["params"]["v"].as_u64()).expect("a version");
        (key, version, event["seq"].as_u64())
    }

    proptest! {
        #[test]
        fn the_pending_set_agrees_with_a_map_of_the_newest_offer_per_key(
            scoped in any::<bool>(),
            ops in prop::collection::vec(op(), 0..64),
        ) {
            let mut real = PendingSet::new(scoped);
            let mut model: BTreeMap<Key, (u64, bool)> = BTreeMap::new();
            let mut last_seq = 0;
            for (version, op) in ops.into_iter().chain([Op::Drain]).enumerate() {
                let version = version as u64;
                match op {
                    Op::Offer(key, meta) => {
                        let f = frame(&key, version, meta);
                        let coalesced = match &key {
                            Key::List(i) => real.offer_list(ListKind::ALL[*i], f),
                            Key::Uri(u) => real.offer_uri(u.as_str().into(), f),
                            Key::Task(t) => real.offer_task(t.as_str().into(), f),
                        };
                        prop_assert_eq!(coalesced, model.insert(key, (version, meta)).is_some());
                    }
                    Op::Drain => {
                        let mut buf = Vec::new();
                        let written = real.drain_into(&mut buf, b"7");
                        let mut events = Vec::new();
                        SseDecoder::new().feed(&buf, &mut events);
                        prop_assert_eq!(written, events.len());
                        let mut seen = BTreeMap::new();
                        for event in events {
                            let SseEvent::Message(message) = event else { panic!("only messages") };
                            let (key, version, seq) = read(&message);
                            let (_, meta) = model.get(&key).copied().unwrap_or_default();
                            if scoped && meta {
                                // Numbered 1, 2, 3… across drains, with no holes.
                                prop_assert_eq!(seq, Some(last_seq + 1));
                                last_seq += 1;
                            } else {
                                prop_assert_eq!(seq, None);
                            }
                            prop_assert!(seen.insert(key, version).is_none(), "one frame per key");
                        }
                        let expected: BTreeMap<Key, u64> = model.iter().map(|(k, (v, _))| (k.clone(), *v)).collect();
                        prop_assert_eq!(seen, expected, "the newest offer of each key, nothing else");
                        model.clear();
                        prop_assert!(real.is_empty());
                    }
                }
            }
        }
    }
}
