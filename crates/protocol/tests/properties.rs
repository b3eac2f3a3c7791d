//! Property tests of the pure codecs (proptest's 256 cases each, so CI stays fast;
//! `PROPTEST_CASES` raises it, see `docs/fuzzing.md`): the listen filter parser, the request
//! parser and validation ladder, list cursors and the SSE codec never panic on arbitrary input,
//! round-trip what they produce, and keep their output bounded. More in `wire_properties.rs`.

use http::HeaderMap;
use mcp_fleet_protocol::cursor::Cursor;
use mcp_fleet_protocol::jsonrpc::{RequestId, encode_result, parse_message};
use mcp_fleet_protocol::sse::{SseDecoder, SseEvent, write_event};
use mcp_fleet_protocol::validate::validate_message;
use mcp_fleet_protocol::{SUPPORTED_VERSIONS, SubscriptionFilter};
use proptest::prelude::*;
use serde_json::{Map, Value, json};
use strategies::json_value;

mod strategies;

/// `params.notifications` with every key the parser reads, of any JSON type.
fn listen_params() -> impl Strategy<Value = Map<String, Value>> {
    let keys = ["toolsListChanged", "promptsListChanged", "resourcesListChanged", "resourceSubscriptions"];
    prop::collection::vec((prop::sample::select(keys.to_vec()), json_value()), 0..5).prop_map(|entries| {
        let notifications: Map<String, Value> = entries.into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
        let mut params = Map::new();
        params.insert("notifications".into(), Value::Object(notifications));
        params
    })
}

proptest! {
    #[test]
    fn the_filter_parser_never_panics_and_bounds_its_uris(params in listen_params(), max in 0usize..6) {
        if let Ok(filter) = SubscriptionFilter::from_params(&params, max) {
            prop_assert!(filter.resource_subscriptions.len() <= max);
            let mut seen = std::collections::HashSet::new();
            prop_assert!(filter.resource_subscriptions.iter().all(|u| seen.insert(u.clone())), "deduplicated");
        }
    }

    #[test]
    fn a_filter_round_trips_through_its_wire_form(
        flags in any::<(bool, bool, bool)>(),
        uris in prop::collection::vec("[a-z]{1,3}://[ -~]{0,8}", 0..6),
    ) {
        let notifications = json!({
            "toolsListChanged": flags.0, "promptsListChanged": flags.1, "resourcesListChanged": flags.2,
            "resourceSubscriptions": uris,
        });
        let params: Map<String, Value> = [("notifications".to_owned(), notifications)].into_iter().collect();
        let filter = SubscriptionFilter::from_params(&params, 10).expect("a well-formed filter");
        let wire: Map<String, Value> = [("notifications".to_owned(), filter.to_wire())].into_iter().collect();
        prop_assert_eq!(SubscriptionFilter::from_params(&wire, 10).expect("its own wire form"), filter);
    }

    #[test]
    fn the_request_parser_and_ladder_never_panic_on_bytes(body in prop::collection::vec(any::<u8>(), 0..256)) {
        let _ = parse_message(&body);
        let _ = validate_message(&HeaderMap::new(), &body, SUPPORTED_VERSIONS);
    }

    #[test]
    fn the_request_parser_never_panics_on_json_and_keeps_method_and_id(
        method in "[a-z/]{1,20}",
        id in any::<i64>(),
        params in json_value(),
    ) {
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let bytes = serde_json::to_vec(&body).expect("json");
        if let Ok(message) = parse_message(&bytes) {
            prop_assert_eq!(&message.method, &method);
            prop_assert_eq!(message.id, Some(RequestId::from(id)));
        }
        let mut headers = HeaderMap::new();
        headers.insert("mcp-protocol-version", http::HeaderValue::from_static("2026-07-28"));
        let _ = validate_message(&headers, &bytes, SUPPORTED_VERSIONS);
        let encoded = encode_result(&RequestId::from(id), &json!({"ok": true}));
        prop_assert!(serde_json::from_slice::<Value>(&encoded).is_ok());
    }

    #[test]
    fn cursors_round_trip_and_garbage_is_refused_without_panic(
        revision in any::<u64>(),
        offset in any::<usize>(),
        garbage in "[ -~]{0,64}",
    ) {
        let raw = Cursor { list: "tools", revision, offset }.encode();
        prop_assert_eq!(Cursor::decode_offset(&raw, "tools", revision).ok(), Some(offset));
        prop_assert!(Cursor::decode_offset(&raw, "prompts", revision).is_err(), "another list");
        prop_assert!(Cursor::decode_offset(&raw, "tools", revision.wrapping_add(1)).is_err(), "another revision");
        let _ = Cursor::decode_offset(&garbage, "tools", revision);
    }

    #[test]
    fn the_sse_decoder_never_panics_and_its_output_is_bounded(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        let mut events = Vec::new();
        SseDecoder::new().feed(&bytes, &mut events);
        // At most one event per line, and no more data than was fed.
        let lines = bytes.iter().filter(|b| **b == b'\n').count();
        prop_assert!(events.len() <= lines);
        let size: usize = events.iter().map(|e| match e { SseEvent::Message(m) | SseEvent::Comment(m) => m.len() }).sum();
        prop_assert!(size <= bytes.len() * 3, "lossy UTF-8 grows each byte to at most 3");
    }

    #[test]
    fn an_encoded_event_decodes_to_its_data_at_every_split(data in "[ -~]{0,40}", split in 0usize..64) {
        let json = serde_json::to_vec(&json!({"data": data})).expect("json");
        let mut wire = Vec::new();
        write_event(&mut wire, &json);
        let split = split.min(wire.len());
        let mut decoder = SseDecoder::new();
        let mut events = Vec::new();
        decoder.feed(&wire[..split], &mut events);
        decoder.feed(&wire[split..], &mut events);
        prop_assert_eq!(events, vec![SseEvent::Message(String::from_utf8(json).expect("utf-8"))]);
    }
}
