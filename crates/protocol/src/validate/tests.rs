use super::*;
use crate::error::ErrorCode;
use http::StatusCode;
use serde_json::json;

const SUPPORTED: &[&str] = &["2026-07-28"];

fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
    let mut h = HeaderMap::new();
    for (k, v) in pairs {
        h.append(http::HeaderName::from_bytes(k.as_bytes()).unwrap(), v.parse().unwrap());
    }
    h
}

fn body(id: Value, method: &str, version: &str, extra: Value) -> Vec<u8> {
    let mut params = json!({"_meta": {
        "io.modelcontextprotocol/protocolVersion": version,
        "io.modelcontextprotocol/clientCapabilities": {}
    }});
    if let Value::Object(extra) = extra {
        params.as_object_mut().unwrap().extend(extra);
    }
    serde_json::to_vec(&json!({"jsonrpc":"2.0","id":id,"method":method,"params":params})).unwrap()
}

fn std_headers(method: &str) -> HeaderMap {
    headers(&[("mcp-protocol-version", "2026-07-28"), ("mcp-method", method)])
}

fn code_of(r: Result<Validated, Rejection>) -> (ErrorCode, StatusCode) {
    let rej = r.unwrap_err();
    (rej.error.code, rej.error.status)
}

#[test]
fn accepts_a_conformant_request() {
    let v =
        validate_message(&std_headers("tools/list"), &body(json!(1), "tools/list", "2026-07-28", json!({})), SUPPORTED);
    assert!(matches!(v, Ok(Validated::Request { .. })));
}

#[test]
fn header_mismatch_wins_over_unsupported_version() {
    let b = body(json!(302), "server/discover", "v999.0.0", json!({}));
    let r = validate_message(&std_headers("server/discover"), &b, SUPPORTED);
    assert_eq!(code_of(r), (ErrorCode::HeaderMismatch, StatusCode::BAD_REQUEST));

    let h = headers(&[("mcp-protocol-version", "v999.0.0"), ("mcp-method", "server/discover")]);
    let rej = validate_message(&h, &b, SUPPORTED).unwrap_err();
    assert_eq!(rej.error.code, ErrorCode::UnsupportedProtocolVersion);
    assert_eq!(rej.error.data.unwrap()["requested"], "v999.0.0");
    assert_eq!(rej.id, Some(302.into()));
}

#[test]
fn missing_envelope_with_modern_header_is_invalid_params() {
    let b = serde_json::to_vec(&json!({"jsonrpc":"2.0","id":101,"method":"server/discover","params":{}})).unwrap();
    let rej = validate_message(&std_headers("server/discover"), &b, SUPPORTED).unwrap_err();
    assert_eq!((rej.error.code, rej.error.status), (ErrorCode::InvalidParams, StatusCode::BAD_REQUEST));
    assert_eq!(rej.id, Some(101.into()));
}

#[test]
fn traffic_without_claim_or_modern_header_is_legacy() {
    let b = serde_json::to_vec(
        &json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}),
    )
    .unwrap();
    assert!(matches!(validate_message(&HeaderMap::new(), &b, SUPPORTED), Ok(Validated::Legacy(_))));
    let h = headers(&[("mcp-protocol-version", "2025-11-25")]);
    let batch = br#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#;
    assert!(matches!(validate_message(&h, batch, SUPPORTED), Ok(Validated::Legacy(Value::Array(_)))));
    let response = br#"{"jsonrpc":"2.0","id":"s1","result":{}}"#;
    assert!(matches!(validate_message(&h, response, SUPPORTED), Ok(Validated::Legacy(_))));
}

#[test]
fn legacy_initialize_under_a_modern_header_is_a_header_mismatch() {
    let b = serde_json::to_vec(
        &json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}),
    )
    .unwrap();
    let h = headers(&[("mcp-protocol-version", "2026-07-28")]);
    let rej = validate_message(&h, &b, SUPPORTED).unwrap_err();
    assert_eq!((rej.error.code, rej.id), (ErrorCode::HeaderMismatch, Some(1.into())));
}

#[test]
fn a_claim_naming_a_legacy_version_is_unsupported() {
    let b = body(json!(1), "tools/list", "2025-11-25", json!({}));
    let h = headers(&[("mcp-method", "tools/list")]);
    let rej = validate_message(&h, &b, SUPPORTED).unwrap_err();
    assert_eq!(rej.error.code, ErrorCode::UnsupportedProtocolVersion);
    assert_eq!(rej.error.data.unwrap()["requested"], "2025-11-25");
}

#[test]
fn method_header_is_required_and_case_sensitive() {
    let b = body(json!(1), "tools/list", "2026-07-28", json!({}));
    let h = headers(&[("mcp-protocol-version", "2026-07-28")]);
    assert_eq!(code_of(validate_message(&h, &b, SUPPORTED)).0, ErrorCode::HeaderMismatch);
    let h = headers(&[("mcp-protocol-version", "2026-07-28"), ("MCP-METHOD", "TOOLS/LIST")]);
    assert_eq!(code_of(validate_message(&h, &b, SUPPORTED)).0, ErrorCode::HeaderMismatch);
    let h = headers(&[("mcp-protocol-version", "2026-07-28"), ("MCP-METHOD", "tools/list")]);
    assert!(validate_message(&h, &b, SUPPORTED).is_ok());
}

#[test]
fn name_header_required_for_named_methods() {
    let b = body(json!(1), "tools/call", "2026-07-28", json!({"name": "echo"}));
    assert_eq!(code_of(validate_message(&std_headers("tools/call"), &b, SUPPORTED)).0, ErrorCode::HeaderMismatch);
    let mut h = std_headers("tools/call");
    h.insert("mcp-name", "=?base64?ZWNobw==?=".parse().unwrap());
    assert!(validate_message(&h, &b, SUPPORTED).is_ok());
}

#[test]
fn task_methods_name_their_task_in_mcp_name() {
    for method in ["tasks/get", "tasks/update", "tasks/cancel"] {
        let b = body(json!(1), method, "2026-07-28", json!({"taskId": "t-1"}));
        assert_eq!(code_of(validate_message(&std_headers(method), &b, SUPPORTED)).0, ErrorCode::HeaderMismatch);
        let mut h = std_headers(method);
        h.insert("mcp-name", "t-2".parse().unwrap());
        assert_eq!(code_of(validate_message(&h, &b, SUPPORTED)).0, ErrorCode::HeaderMismatch, "{method}");
        h.insert("mcp-name", " t-1 ".parse().unwrap());
        assert!(validate_message(&h, &b, SUPPORTED).is_ok(), "{method}");
    }
}

#[test]
fn notifications_pass_without_headers() {
    let b = serde_json::to_vec(&json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{}})).unwrap();
    let h = headers(&[("mcp-protocol-version", "2026-07-28")]);
    assert!(matches!(validate_message(&h, &b, SUPPORTED), Ok(Validated::Notification(_))));
}

#[test]
fn non_ascii_header_is_header_mismatch() {
    let b = body(json!(1), "tools/list", "2026-07-28", json!({}));
    let mut h = std_headers("tools/list");
    h.insert("mcp-method", http::HeaderValue::from_bytes(b"tools/\xfflist").unwrap());
    assert_eq!(code_of(validate_message(&h, &b, SUPPORTED)).0, ErrorCode::HeaderMismatch);
}
