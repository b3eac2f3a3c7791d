//! Property tests of what `properties.rs` leaves out (issue 33, "make the next ones
//! findable"): arbitrary bytes or JSON get a typed error, never a panic, and valid values
//! round-trip — JSON-RPC messages, SSE notification frames and event ids, listen filters'
//! honoured subsets, cursors, sealed ids and 2025-03-26 batches. proptest's 256 cases each;
//! `PROPTEST_CASES` raises it (see `docs/fuzzing.md`).

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use mcp_fleet_protocol::cursor::Cursor;
use mcp_fleet_protocol::envelope::{FLEET_EVENT_KEY, SUBSCRIPTION_ID_KEY};
use mcp_fleet_protocol::jsonrpc::{encode_error, message_from_value, parse_message};
use mcp_fleet_protocol::legacy::{LEGACY_VERSIONS, LegacyBody, LegacyMessage, parse_body};
use mcp_fleet_protocol::sse::{NotificationFrame, SseDecoder, SseEvent, write_event, write_event_with_id};
use mcp_fleet_protocol::state::{StateKey, StateSigner};
use mcp_fleet_protocol::{ErrorCode, ListenSupport, RequestId, SubscriptionFilter};
use proptest::prelude::*;
use serde_json::{Map, Value, json};
use strategies::{any_json, json_value};

mod strategies;

fn request_id() -> impl Strategy<Value = RequestId> {
    prop_oneof![
        any::<i64>().prop_map(RequestId::from),
        any::<u64>().prop_map(|n| RequestId::Number(n.into())),
        ".{0,12}".prop_map(RequestId::String),
    ]
}

fn object() -> impl Strategy<Value = Map<String, Value>> {
    prop::collection::btree_map(".{0,8}", any_json(), 0..4).prop_map(|m| m.into_iter().collect())
}

/// A JSON object with the members a JSON-RPC parser reads, each of any JSON type or absent.
fn message_like() -> impl Strategy<Value = Value> {
    let member = prop_oneof![1 => Just(None), 3 => any_json().prop_map(Some)];
    let keys = ["jsonrpc", "id", "method", "params", "result", "error"];
    (prop::collection::vec(member, keys.len()), any::<bool>()).prop_map(move |(values, good_version)| {
        let mut obj: Map<String, Value> =
            keys.iter().zip(values).filter_map(|(k, v)| Some(((*k).to_owned(), v?))).collect();
        if good_version {
            obj.insert("jsonrpc".into(), json!("2.0"));
        }
        Value::Object(obj)
    })
}

/// Decode `wire` fed in three pieces, split at `a` and `b`.
fn decode_split(wire: &[u8], a: usize, b: usize) -> (Vec<SseEvent>, SseDecoder) {
    let (a, b) = (a.min(wire.len()), b.min(wire.len()));
    let (a, b) = (a.min(b), a.max(b));
    let mut decoder = SseDecoder::new();
    let mut events = Vec::new();
    for piece in [&wire[..a], &wire[a..b], &wire[b..]] {
        decoder.feed(piece, &mut events);
    }
    (events, decoder)
}

fn one_message(events: Vec<SseEvent>) -> Result<Value, TestCaseError> {
    prop_assert_eq!(events.len(), 1, "one event: {:?}", events);
    let SseEvent::Message(data) = &events[0] else { return Err(TestCaseError::fail("not a message")) };
    serde_json::from_str(data).map_err(|e| TestCaseError::fail(format!("not JSON ({e}): {data}")))
}

fn legacy_message() -> impl Strategy<Value = LegacyMessage> {
    let method = "[a-z/_]{1,16}".prop_filter("initialize may not be batched", |m| m != "initialize");
    prop_oneof![
        (request_id(), method.clone(), object()).prop_map(|(id, method, params)| LegacyMessage::Request {
            id,
            method,
            params
        }),
        (method, object()).prop_map(|(method, params)| LegacyMessage::Notification { method, params }),
        (request_id(), any_json()).prop_map(|(id, r)| LegacyMessage::Response { id, outcome: Ok(r) }),
        (request_id(), object()).prop_map(|(id, e)| LegacyMessage::Response { id, outcome: Err(Value::Object(e)) }),
    ]
}

/// A legacy message as a 2025 client writes it.
fn legacy_wire(message: &LegacyMessage) -> Value {
    match message {
        LegacyMessage::Request { id, method, params } => {
            json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
        }
        LegacyMessage::Notification { method, params } => json!({"jsonrpc": "2.0", "method": method, "params": params}),
        LegacyMessage::Response { id, outcome: Ok(result) } => json!({"jsonrpc": "2.0", "id": id, "result": result}),
        LegacyMessage::Response { id, outcome: Err(error) } => json!({"jsonrpc": "2.0", "id": id, "error": error}),
    }
}

proptest! {
    // --- JSON-RPC bodies -----------------------------------------------------------------

    #[test]
    fn a_valid_message_round_trips(id in prop::option::of(request_id()), method in ".{0,16}", params in prop::option::of(object())) {
        let mut body = json!({"jsonrpc": "2.0", "method": method});
        if let Some(id) = &id {
            body["id"] = id.to_value();
        }
        if let Some(params) = &params {
            body["params"] = Value::Object(params.clone());
        }
        let message = parse_message(&serde_json::to_vec(&body).expect("json")).expect("a valid message");
        prop_assert_eq!(message.id, id);
        prop_assert_eq!(message.method, method);
        prop_assert_eq!(message.params, params.unwrap_or_default());
    }

    #[test]
    fn any_json_is_a_message_or_an_invalid_request(value in prop_oneof![message_like(), any_json()]) {
        let bytes = serde_json::to_vec(&value).expect("json");
        for result in [message_from_value(value), parse_message(&bytes)] {
            if let Err(rejection) = result {
                prop_assert_eq!(rejection.error.code, ErrorCode::InvalidRequest, "{}", rejection.error.message);
                let answer: Value = serde_json::from_slice(&encode_error(rejection.id.as_ref(), &rejection.error)).expect("json");
                prop_assert_eq!(&answer["error"]["code"], &json!(-32600));
            }
        }
    }

    #[test]
    fn a_damaged_body_gets_a_typed_error(
        id in request_id(),
        at in any::<prop::sample::Index>(),
        byte in any::<u8>(),
        how in 0..3u8,
    ) {
        let mut bytes = serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/list", "params": {}})).expect("json");
        let at = at.index(bytes.len());
        match how {
            0 => bytes.truncate(at),
            1 => bytes[at] = byte,
            _ => bytes.insert(at, byte),
        }
        if let Err(rejection) = parse_message(&bytes) {
            prop_assert!(matches!(rejection.error.code, ErrorCode::ParseError | ErrorCode::InvalidRequest), "{:?}", rejection);
        }
    }

    // --- SSE ---------------------------------------------------------------------------

    #[test]
    fn a_notification_frame_decodes_to_its_parts_at_any_split(
        method in ".{0,16}",
        uri in prop::option::of(".{0,16}"),
        event_meta in object(),
        subscription_id in request_id(),
        seq in prop::option::of(any::<u64>()),
        crlf in any::<bool>(),
        (a, b) in (0usize..400, 0usize..400),
    ) {
        let mut event_meta = event_meta;
        event_meta.remove("seq");
        let frame = NotificationFrame::new(&method, uri.as_deref(), &Value::Object(event_meta.clone()));
        let mut wire = Vec::new();
        let id_json = subscription_id.to_json();
        match seq {
            Some(seq) => prop_assert!(frame.write_numbered(&mut wire, id_json.as_bytes(), seq)),
            None => frame.write(&mut wire, id_json.as_bytes()),
        }
        if crlf {
            wire = String::from_utf8(wire).expect("utf-8").replace('\n', "\r\n").into_bytes();
        }
        let message = one_message(decode_split(&wire, a, b).0)?;
        prop_assert_eq!(&message["method"], &json!(method));
        prop_assert_eq!(message["params"].get("uri").cloned(), uri.map(Value::String));
        prop_assert_eq!(&message["params"]["_meta"][SUBSCRIPTION_ID_KEY], &subscription_id.to_value());
        let mut expected_meta = event_meta;
        if let Some(seq) = seq {
            expected_meta.insert("seq".into(), json!(seq));
        }
        prop_assert_eq!(&message["params"]["_meta"][FLEET_EVENT_KEY], &Value::Object(expected_meta));
    }

    #[test]
    fn a_frame_with_params_keeps_them_all_but_their_meta(method in ".{0,16}", params in object(), with_meta in any::<bool>()) {
        let mut params = params;
        params.remove("_meta");
        let mut given = params.clone();
        given.insert("_meta".into(), json!({"dropped": true}));
        let meta = json!({"version": 1});
        let frame = NotificationFrame::with_params(&method, &given, with_meta.then_some(&meta));
        let mut wire = Vec::new();
        frame.write(&mut wire, b"1");
        let message = one_message(decode_split(&wire, 0, 0).0)?;
        let mut got = message["params"].as_object().cloned().unwrap_or_default();
        let got_meta = got.remove("_meta").unwrap_or_default();
        prop_assert_eq!(got, params);
        prop_assert_eq!(got_meta.get(FLEET_EVENT_KEY), with_meta.then_some(&meta));
        prop_assert_eq!(got_meta.get("dropped"), None);
    }

    #[test]
    fn an_event_id_is_what_a_resuming_client_sends_back(
        id in "[^\r\n\x00]{0,24}",
        data in any_json(),
        (a, b) in (0usize..200, 0usize..200),
    ) {
        let json = serde_json::to_vec(&data).expect("json");
        let mut wire = Vec::new();
        write_event_with_id(&mut wire, &id, &json);
        write_event(&mut wire, b"{}");
        let (events, decoder) = decode_split(&wire, a, b);
        prop_assert_eq!(decoder.last_event_id(), Some(id.as_str()));
        prop_assert_eq!(events, vec![SseEvent::Message(String::from_utf8(json).expect("utf-8")), SseEvent::Message("{}".into())]);
    }

    // --- Listen filters ----------------------------------------------------------------

    #[test]
    fn any_params_get_a_filter_or_invalid_params(params in object(), notifications in any_json(), max in 0usize..4) {
        let mut params = params;
        params.insert("notifications".into(), notifications);
        if let Err(error) = SubscriptionFilter::from_params(&params, max) {
            prop_assert_eq!(error.code, ErrorCode::InvalidParams);
        }
    }

    #[test]
    fn the_honoured_subset_is_asked_for_and_supported(
        flags in any::<[bool; 3]>(),
        uris in prop::collection::vec(".{0,6}", 0..4),
        tasks in prop::collection::vec(".{0,6}", 0..4),
        support in any::<[bool; 5]>(),
    ) {
        let notifications = json!({
            "toolsListChanged": flags[0], "promptsListChanged": flags[1], "resourcesListChanged": flags[2],
            "resourceSubscriptions": uris, "taskIds": tasks,
        });
        let params: Map<String, Value> = [("notifications".to_owned(), notifications)].into_iter().collect();
        let filter = SubscriptionFilter::from_params(&params, 8).expect("a well-formed filter");
        let wire: Map<String, Value> = [("notifications".to_owned(), filter.to_wire())].into_iter().collect();
        prop_assert_eq!(&SubscriptionFilter::from_params(&wire, 8).expect("its own wire form"), &filter);
        let support = ListenSupport {
            tools_list_changed: support[0], prompts_list_changed: support[1], resources_list_changed: support[2],
            resource_subscribe: support[3], tasks: support[4],
        };
        let honoured = filter.honoured(support);
        prop_assert_eq!(honoured.tools_list_changed, flags[0] && support.tools_list_changed);
        prop_assert_eq!(honoured.prompts_list_changed, flags[1] && support.prompts_list_changed);
        prop_assert_eq!(honoured.resources_list_changed, flags[2] && support.resources_list_changed);
        prop_assert!(honoured.resource_subscriptions.is_empty() || honoured.resource_subscriptions == filter.resource_subscriptions);
        prop_assert!(honoured.task_ids.is_empty() || honoured.task_ids == filter.task_ids);
        prop_assert_eq!(honoured.honoured(support), honoured.clone(), "honouring twice changes nothing");
    }

    // --- Cursors -----------------------------------------------------------------------

    #[test]
    fn any_cursor_text_is_an_offset_or_invalid_params(
        text in prop_oneof![".{0,40}".boxed(), prop::collection::vec(any::<u8>(), 0..40).prop_map(|b| URL_SAFE_NO_PAD.encode(b)).boxed()],
        list in prop::sample::select(vec!["tools", "prompts", "tools:x", ""]),
        revision in any::<u64>(),
        rev in prop_oneof![Just(None), ".{0,6}".prop_map(Some)],
        offset in prop_oneof!["[0-9]{1,22}", ".{0,6}"],
    ) {
        if let Err(error) = Cursor::decode_offset(&text, "tools", revision) {
            prop_assert_eq!(error.code, ErrorCode::InvalidParams);
        }
        let rev = rev.unwrap_or_else(|| format!("{revision:x}"));
        let shaped = URL_SAFE_NO_PAD.encode(format!("v1:{list}:{rev}:{offset}"));
        match Cursor::decode_offset(&shaped, "tools", revision) {
            Ok(at) => {
                prop_assert_eq!(list, "tools");
                prop_assert_eq!(u64::from_str_radix(&rev, 16).ok(), Some(revision));
                prop_assert_eq!(offset.parse::<usize>().ok(), Some(at));
            }
            Err(error) => prop_assert_eq!(error.code, ErrorCode::InvalidParams),
        }
    }

    // --- Sealed ids --------------------------------------------------------------------

    #[test]
    fn a_sealed_value_opens_only_for_its_binding_and_ring(
        key in prop::collection::vec(any::<u8>(), 32..48),
        other in prop::collection::vec(any::<u8>(), 32..48),
        plain in prop::collection::vec(any::<u8>(), 0..80),
        binding in ".{0,12}",
        nonce in any::<[u8; 16]>(),
    ) {
        prop_assume!(key != other);
        let ring = StateSigner::new(&key).expect("a long enough key");
        let sealed = ring.seal(&plain, &binding, nonce);
        prop_assert_eq!(ring.open(&sealed, &binding), Some(plain.clone()));
        prop_assert_eq!(ring.open(&sealed, &format!("{binding}x")), None);
        let (old, new) = (StateKey::new(&key).expect("key"), StateKey::new(&other).expect("key"));
        let rotated = StateSigner::with_keys(vec![new.clone(), old]).expect("a ring");
        prop_assert_eq!(rotated.open(&sealed, &binding), Some(plain), "every key of a ring opens");
        let without = StateSigner::with_keys(vec![new]).expect("a ring");
        prop_assert_eq!(without.open(&sealed, &binding), None, "a ring without the key does not");
    }

    #[test]
    fn a_changed_or_made_up_sealed_value_never_opens(
        plain in prop::collection::vec(any::<u8>(), 0..40),
        at in any::<prop::sample::Index>(),
        bit in 0..8u8,
        cut in any::<prop::sample::Index>(),
        made_up in prop_oneof![".{0,80}".boxed(), prop::collection::vec(any::<u8>(), 0..80).prop_map(|b| URL_SAFE_NO_PAD.encode(b)).boxed()],
    ) {
        let ring = StateSigner::new(&[7; 32]).expect("a key");
        let sealed = URL_SAFE_NO_PAD.decode(ring.seal(&plain, "b", [1; 16])).expect("base64url");
        let mut flipped = sealed.clone();
        flipped[at.index(sealed.len())] ^= 1 << bit;
        prop_assert_eq!(ring.open(&URL_SAFE_NO_PAD.encode(&flipped), "b"), None);
        prop_assert_eq!(ring.open(&URL_SAFE_NO_PAD.encode(&sealed[..cut.index(sealed.len())]), "b"), None);
        prop_assert_eq!(ring.open(&made_up, "b"), None);
    }

    // --- 2025-03-26 batches ------------------------------------------------------------

    #[test]
    fn a_batch_round_trips_in_2025_03_26_only(messages in prop::collection::vec(legacy_message(), 1..6), initialize_at in any::<prop::sample::Index>()) {
        let wire = Value::Array(messages.iter().map(legacy_wire).collect());
        prop_assert_eq!(parse_body(wire.clone(), "2025-03-26").expect("a valid batch"), LegacyBody { messages: messages.clone(), batch: true });
        for version in &LEGACY_VERSIONS[..2] {
            let refused = parse_body(wire.clone(), version).expect_err("batches are 2025-03-26's only");
            prop_assert_eq!(refused.error.code, ErrorCode::InvalidRequest);
        }
        let single = parse_body(legacy_wire(&messages[0]), "2025-06-18").expect("one message");
        prop_assert_eq!(single, LegacyBody { messages: vec![messages[0].clone()], batch: false });
        let mut with_initialize = wire.as_array().cloned().unwrap_or_default();
        with_initialize.insert(initialize_at.index(with_initialize.len() + 1), json!({"jsonrpc": "2.0", "id": 0, "method": "initialize"}));
        let refused = parse_body(Value::Array(with_initialize), "2025-03-26").expect_err("initialize is never batched");
        prop_assert_eq!(refused.error.code, ErrorCode::InvalidRequest);
    }

    #[test]
    fn any_json_is_a_legacy_body_or_an_invalid_request(
        value in prop_oneof![
            message_like(),
            prop::collection::vec(prop_oneof![message_like(), json_value()], 0..5).prop_map(Value::Array),
            any_json(),
        ],
        version in prop::sample::select(LEGACY_VERSIONS.to_vec()),
    ) {
        if let Err(rejection) = parse_body(value, version) {
            prop_assert_eq!(rejection.error.code, ErrorCode::InvalidRequest, "{}", rejection.error.message);
        }
    }
}
