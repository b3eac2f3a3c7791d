//! HTTP rules checked by calling the service directly, without a socket (axum's
//! `examples/testing` style): status, headers and exact body bytes.

use bytes::Bytes;
use http::{Request, StatusCode};
use http_body_util::{BodyExt, Full};
use serde_json::{Value, json};

use crate::types::{CallToolResult, Tool};
use crate::{HandlerOptions, McpHandler, McpServer, create_mcp_handler};

async fn handler() -> McpHandler {
    let server = McpServer::builder("unit", "0.1.0").build();
    server.tool(Tool::new("hi", "Says hi"), |_c| async { Ok(CallToolResult::text("hi")) });
    let options = HandlerOptions::default().max_body_bytes(1024);
    create_mcp_handler(server, options).await.expect("handler")
}

fn post(method: &str) -> http::request::Builder {
    Request::post("/mcp")
        .header("content-type", "application/json")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method)
}

fn envelope(id: Value, method: &str, params: Value) -> Bytes {
    let mut params = params;
    params["_meta"] = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}});
    Bytes::from(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string())
}

async fn answer(h: &McpHandler, req: Request<Full<Bytes>>) -> (StatusCode, http::HeaderMap, Bytes) {
    let resp = h.handle(req).await;
    let (parts, body) = resp.into_parts();
    (parts.status, parts.headers, body.collect().await.expect("body").to_bytes())
}

#[tokio::test]
async fn a_json_call_answers_compact_one_line_json() {
    let h = handler().await;
    let body = envelope(json!(3), "tools/call", json!({"name": "hi"}));
    let req = post("tools/call").header("mcp-name", "hi").body(Full::new(body)).unwrap();
    let (status, headers, bytes) = answer(&h, req).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(headers["content-type"], "application/json");
    assert_eq!(
        &bytes[..],
        br#"{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"hi"}],"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"unit","version":"0.1.0"}}}}"#
    );
}

#[tokio::test]
async fn http_level_rules() {
    let h = handler().await;
    let ok = envelope(json!(1), "tools/list", json!({}));
    let cases = [
        // A 2025-era GET stream needs its session (2025-11-25: 400 without Mcp-Session-Id).
        (Request::get("/mcp").body(Full::new(Bytes::new())).unwrap(), StatusCode::BAD_REQUEST),
        (Request::put("/mcp").body(Full::new(Bytes::new())).unwrap(), StatusCode::METHOD_NOT_ALLOWED),
        (Request::post("/other").body(Full::new(ok.clone())).unwrap(), StatusCode::NOT_FOUND),
        (
            post("tools/list").header("origin", "http://evil.example").body(Full::new(ok.clone())).unwrap(),
            StatusCode::FORBIDDEN,
        ),
        (
            Request::post("/mcp")
                .header("content-type", "application/json; charset=utf-8")
                .header("mcp-protocol-version", "2026-07-28")
                .header("mcp-method", "tools/list")
                .body(Full::new(ok.clone()))
                .unwrap(),
            StatusCode::OK,
        ),
        (
            Request::post("/mcp").header("content-type", "text/json").body(Full::new(ok.clone())).unwrap(),
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
        ),
        (
            post("tools/list").header("accept", "text/html").body(Full::new(ok.clone())).unwrap(),
            StatusCode::NOT_ACCEPTABLE,
        ),
        (
            post("tools/list").header("accept", "application/*;q=0.5").body(Full::new(ok.clone())).unwrap(),
            StatusCode::OK,
        ),
        (post("tools/list").body(Full::new(Bytes::from(vec![b' '; 2048]))).unwrap(), StatusCode::PAYLOAD_TOO_LARGE),
        (
            post("notifications/cancelled")
                .body(Full::new(Bytes::from_static(br#"{"jsonrpc":"2.0","method":"notifications/cancelled"}"#)))
                .unwrap(),
            StatusCode::ACCEPTED,
        ),
    ];
    for (req, expected) in cases {
        let (method, uri) = (req.method().clone(), req.uri().clone());
        let (status, headers, _) = answer(&h, req).await;
        assert_eq!(status, expected, "{method} {uri}");
        if status == StatusCode::METHOD_NOT_ALLOWED {
            assert_eq!(headers["allow"], "POST, GET, DELETE");
        }
    }
}

#[tokio::test]
async fn a_modern_only_endpoint_refuses_the_2025_era() {
    let server = McpServer::builder("unit", "0.1.0").build();
    let options = HandlerOptions::default().era2025(crate::options::Era2025Options::disabled());
    let h = create_mcp_handler(server, options).await.expect("handler");
    let (status, headers, _) = answer(&h, Request::get("/mcp").body(Full::new(Bytes::new())).unwrap()).await;
    assert_eq!((status, headers["allow"].to_str().unwrap()), (StatusCode::METHOD_NOT_ALLOWED, "POST"));
    let init = br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}"#;
    let req =
        Request::post("/mcp").header("content-type", "application/json").body(Full::new(Bytes::from_static(init)));
    let (status, _, body) = answer(&h, req.unwrap()).await;
    let body: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!((status, body["error"]["code"].as_i64()), (StatusCode::BAD_REQUEST, Some(-32022)));
    assert_eq!(body["error"]["data"]["requested"], "2025-06-18");
}

/// SEP-2133 negotiates extensions in `initialize`: a 2025 session hears of the registered
/// ones, but not of the tasks extension, which only the 2026-07-28 path serves.
#[tokio::test]
async fn a_2025_initialize_advertises_the_registered_extensions_but_tasks() {
    let audit = crate::extensions::Extension::new("com.example/audit", json!({"retentionDays": 30})).unwrap();
    let server = McpServer::builder("unit", "0.1.0").extension(audit).build();
    let h = create_mcp_handler(server, HandlerOptions::default()).await.expect("handler");
    let init = br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}"#;
    let req = Request::post("/mcp")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(Full::new(Bytes::from_static(init)));
    let (status, _, body) = answer(&h, req.unwrap()).await;
    let body: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["result"]["capabilities"]["extensions"], json!({"com.example/audit": {"retentionDays": 30}}));
}

#[tokio::test]
async fn a_listen_starts_with_its_ack_bytes() {
    let h = handler().await;
    let body = envelope(json!("s"), "subscriptions/listen", json!({"notifications": {"toolsListChanged": true}}));
    let resp = h.handle(post("subscriptions/listen").body(Full::new(body)).unwrap()).await;
    assert_eq!(resp.headers()["content-type"], "text/event-stream");
    assert_eq!(resp.headers()["x-accel-buffering"], "no");
    let mut body = resp.into_body();
    let first = body.frame().await.expect("a frame").expect("infallible").into_data().expect("data");
    assert_eq!(
        &first[..],
        b"event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/subscriptions/acknowledged\",\"params\":{\"_meta\":{\"io.modelcontextprotocol/subscriptionId\":\"s\"},\"notifications\":{\"toolsListChanged\":true}}}\n\n"
    );
    assert_eq!(h.open_streams(), 1);
    drop(body);
    assert_eq!(h.open_streams(), 0, "dropping the body unregisters the stream");
}

#[tokio::test(start_paused = true)]
async fn a_body_that_never_arrives_gets_408_after_the_read_timeout() {
    let server = McpServer::builder("unit", "0.1.0").build();
    let options =
        HandlerOptions { request_read_timeout: std::time::Duration::from_secs(5), ..HandlerOptions::default() };
    let h = create_mcp_handler(server, options).await.expect("handler");
    let stalled = http_body_util::StreamBody::new(futures_util::stream::pending::<
        Result<http_body::Frame<Bytes>, std::convert::Infallible>,
    >());
    let resp = h.handle(post("tools/list").body(stalled).unwrap()).await;
    assert_eq!(resp.status(), StatusCode::REQUEST_TIMEOUT);
}

/// `match_path(false)`: an outer router owns the path (axum's `nest_service` hands the
/// handler `/`), so any path is the endpoint; the default answers 404 off `mcp_path`.
#[tokio::test]
async fn without_path_matching_any_path_is_the_endpoint() {
    let server = McpServer::builder("unit", "0.1.0").build();
    let h = create_mcp_handler(server, HandlerOptions::default().match_path(false)).await.expect("handler");
    for path in ["/", "/mcp", "/anything/else"] {
        let body = envelope(json!(1), "tools/list", json!({}));
        let req = Request::post(path)
            .header("content-type", "application/json")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "tools/list")
            .body(Full::new(body))
            .unwrap();
        assert_eq!(answer(&h, req).await.0, StatusCode::OK, "{path}");
    }
    let matching = handler().await;
    let req = Request::post("/").body(Full::new(envelope(json!(1), "tools/list", json!({}))));
    assert_eq!(answer(&matching, req.unwrap()).await.0, StatusCode::NOT_FOUND, "the default matches");
}
