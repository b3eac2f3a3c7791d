use super::*;
use serde_json::json;

fn parse(v: Value, version: &str) -> Result<LegacyBody, Rejection> {
    parse_body(v, version)
}

#[test]
fn negotiation_keeps_a_known_version_and_offers_the_newest_otherwise() {
    for v in LEGACY_VERSIONS {
        assert_eq!(negotiate(v), *v);
    }
    assert_eq!(negotiate("2024-11-05"), "2025-11-25");
    assert_eq!(negotiate("2026-07-28"), "2025-11-25");
}

#[test]
fn header_version_defaults_to_2025_03_26_and_refuses_unknown_versions() {
    let mut h = HeaderMap::new();
    assert_eq!(header_version(&h).unwrap(), "2025-03-26");
    h.insert("mcp-protocol-version", "2025-06-18".parse().unwrap());
    assert_eq!(header_version(&h).unwrap(), "2025-06-18");
    h.insert("mcp-protocol-version", "1999-01-01".parse().unwrap());
    let e = header_version(&h).unwrap_err();
    assert_eq!((e.code, e.status), (ErrorCode::InvalidRequest, http::StatusCode::BAD_REQUEST));
}

#[test]
fn reads_requests_notifications_and_responses() {
    let b = parse(json!({"jsonrpc":"2.0","id":1,"method":"ping"}), "2025-11-25").unwrap();
    assert!(matches!(&b.messages[..], [LegacyMessage::Request { method, .. }] if method == "ping"));
    let b = parse(json!({"jsonrpc":"2.0","method":"notifications/initialized"}), "2025-11-25").unwrap();
    assert!(matches!(&b.messages[..], [LegacyMessage::Notification { .. }]));
    let b = parse(json!({"jsonrpc":"2.0","id":"s-1","result":{"action":"accept"}}), "2025-11-25").unwrap();
    assert!(matches!(&b.messages[..], [LegacyMessage::Response { outcome: Ok(_), .. }]));
    let b = parse(json!({"jsonrpc":"2.0","id":"s-1","error":{"code":-1,"message":"no"}}), "2025-11-25").unwrap();
    assert!(matches!(&b.messages[..], [LegacyMessage::Response { outcome: Err(_), .. }]));
}

#[test]
fn refuses_malformed_messages_with_a_specific_reason() {
    for (bad, why) in [
        (json!({"jsonrpc":"1.0","id":1,"method":"ping"}), "jsonrpc"),
        (json!({"jsonrpc":"2.0","id":1.5,"method":"ping"}), "id"),
        (json!({"jsonrpc":"2.0","id":1,"method":7}), "method"),
        (json!({"jsonrpc":"2.0","id":1,"method":"ping","params":[1]}), "params"),
        (json!({"jsonrpc":"2.0","result":{}}), "id"),
        (json!({"jsonrpc":"2.0","id":1,"result":{},"error":{}}), "exactly one"),
        (json!("ping"), "object"),
    ] {
        let rej = parse(bad.clone(), "2025-03-26").unwrap_err();
        assert_eq!(rej.error.code, ErrorCode::InvalidRequest, "{bad}");
        assert!(rej.error.message.contains(why), "{bad}: {}", rej.error.message);
    }
}

#[test]
fn batches_only_in_2025_03_26_and_never_with_initialize() {
    let batch = json!([{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/x"}]);
    let b = parse(batch.clone(), "2025-03-26").unwrap();
    assert!(b.batch);
    assert_eq!(b.requests().count(), 1);
    assert!(parse(batch, "2025-06-18").unwrap_err().error.message.contains("batches"));
    assert!(parse(json!([]), "2025-03-26").is_err());
    let with_init = json!([{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}]);
    assert!(parse(with_init, "2025-03-26").unwrap_err().error.message.contains("initialize"));
}

#[test]
fn legacy_errors_are_in_band_and_speak_the_old_resource_code() {
    let e = RpcError::invalid_params("Resource not found: x").with_data(json!({"uri": "x"}));
    let legacy = to_legacy_error("resources/read", e.clone());
    assert_eq!((legacy.code.code(), legacy.status), (-32002, http::StatusCode::OK));
    assert_eq!(to_legacy_error("tools/call", e).code, ErrorCode::InvalidParams);
    let nf = to_legacy_error("nope", RpcError::method_not_found("nope"));
    assert_eq!((nf.code.code(), nf.status), (-32601, http::StatusCode::OK));
}

#[test]
fn era_pure_results_keep_everything_else() {
    let mut r =
        json!({"contents": [], "resultType": "complete", "_meta": {"dev.mcp-fleet/catalog": {"revision": "ab"}}});
    to_legacy_result(&mut r);
    assert_eq!(r, json!({"contents": [], "_meta": {"dev.mcp-fleet/catalog": {"revision": "ab"}}}));
}
