//! The `http` tool against a real HTTP server on 127.0.0.1:0: the arguments go out as a JSON
//! POST with the configured headers; a JSON object body comes back as `structuredContent`
//! too; a non-2xx status, a timeout or an unreachable endpoint is an `isError` result.

#![allow(clippy::unwrap_used)] // in a test, a panic at the failing line is the report we want

mod common;

use std::convert::Infallible;
use std::path::Path;
use std::time::Duration;

use bytes::Bytes;
use common::{call_tool, first_text, handler};
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use mcp_fleet_catalog_file::{Catalog, Format, apply};
use mcp_fleet_server::{McpHandler, McpServer};
use serde_json::{Value, json};
use tokio::net::TcpListener;

/// The backend: `/json` echoes what it got as a JSON object, `/text` and `/array` answer
/// non-object bodies, `/fail` is a 500, `/slow` answers after a minute.
async fn backend(req: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    let path = req.uri().path().to_owned();
    let auth = req.headers().get("authorization").and_then(|v| v.to_str().ok()).map(str::to_owned);
    let content_type = req.headers().get("content-type").and_then(|v| v.to_str().ok()).map(str::to_owned);
    let body = req.into_body().collect().await.map(|b| b.to_bytes()).unwrap_or_default();
    let (status, body) = match path.as_str() {
        "/json" => {
            let got: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            (StatusCode::OK, json!({"got": got, "auth": auth, "contentType": content_type}).to_string())
        }
        "/text" => (StatusCode::OK, "plain words".to_owned()),
        "/array" => (StatusCode::OK, "[1,2]".to_owned()),
        "/fail" => (StatusCode::INTERNAL_SERVER_ERROR, "boom\nat line 3".to_owned()),
        "/slow" => {
            tokio::time::sleep(Duration::from_secs(60)).await;
            (StatusCode::OK, "too late".to_owned())
        }
        _ => (StatusCode::NOT_FOUND, String::new()),
    };
    Ok(Response::builder().status(status).body(Full::new(Bytes::from(body))).unwrap())
}

/// Serve [`backend`] on 127.0.0.1:0; its base URL.
async fn start_backend() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service_fn(backend))
                    .await;
            });
        }
    });
    format!("http://{addr}")
}

/// A server whose catalog has one http tool per backend path.
async fn mcp(base: &str) -> McpHandler {
    let mut text = String::new();
    for (name, path, timeout) in [
        ("json", "/json", 5000),
        ("text", "/text", 5000),
        ("array", "/array", 5000),
        ("fail", "/fail", 5000),
        ("slow", "/slow", 200),
    ] {
        text.push_str(&format!(
            "[[tools]]\nname = \"{name}\"\ninput_schema = {{ type = \"object\", properties = {{ q = {{ type = \"string\" }} }} }}\n\
             http = {{ url = \"{base}{path}\", timeout_ms = {timeout}, headers = {{ Authorization = \"Bearer ${{MCP_CATALOG_API_TOKEN}}\" }} }}\n\n"
        ));
    }
    text.push_str("[[tools]]\nname = \"down\"\nhttp = { url = \"http://127.0.0.1:1/x\" }\n");
    let env = |name: &str| (name == "MCP_CATALOG_API_TOKEN").then(|| "t0k3n".to_owned());
    let catalog = Catalog::parse_with_env(&text, Format::Toml, Path::new("catalog.toml"), &env).unwrap();
    let server = McpServer::builder("catalog-test", "0.1.0").build();
    apply(&server, &catalog).await.unwrap();
    handler(server).await
}

#[tokio::test]
async fn a_json_object_answer_is_also_structured_content() {
    let h = mcp(&start_backend().await).await;
    let result = call_tool(&h, "json", json!({"q": "why?"})).await;
    let expected = json!({"got": {"q": "why?"}, "auth": "Bearer t0k3n", "contentType": "application/json"});
    assert_eq!(result["structuredContent"], expected);
    let text: Value = serde_json::from_str(first_text(&result)).unwrap();
    assert_eq!(text, expected, "the body is the text content as well");
    assert_eq!(result.get("isError"), None);
}

#[tokio::test]
async fn other_answers_are_text_only() {
    let h = mcp(&start_backend().await).await;
    for (tool, body) in [("text", "plain words"), ("array", "[1,2]")] {
        let result = call_tool(&h, tool, json!({})).await;
        assert_eq!(first_text(&result), body);
        assert_eq!(result.get("structuredContent"), None, "{tool}: only a JSON object is structured content");
    }
}

#[tokio::test]
async fn a_500_is_a_tool_error() {
    let h = mcp(&start_backend().await).await;
    let result = call_tool(&h, "fail", json!({})).await;
    assert_eq!(result["isError"], true);
    assert_eq!(first_text(&result), r#"tool "fail": the endpoint answered 500 Internal Server Error: boom at line 3"#);
}

#[tokio::test(start_paused = true)]
async fn a_timeout_is_a_tool_error() {
    let h = mcp(&start_backend().await).await;
    let result = call_tool(&h, "slow", json!({})).await;
    assert_eq!(result["isError"], true);
    assert_eq!(first_text(&result), r#"tool "slow": the endpoint did not answer within 200 ms (timed out)"#);
}

#[tokio::test]
async fn an_unreachable_endpoint_is_a_tool_error() {
    let h = mcp(&start_backend().await).await;
    let result = call_tool(&h, "down", json!({})).await;
    assert_eq!(result["isError"], true);
    let text = first_text(&result);
    assert!(text.starts_with(r#"tool "down": cannot reach the endpoint: "#), "{text}");
    assert!(!text.contains("127.0.0.1:1"), "the URL stays out of the client's message: {text}");
}
