//! An `http` tool against real HTTP servers on 127.0.0.1:0, as an attacker who controls the
//! backend's answer would use it: a redirect to another host is never followed (the custom
//! secret headers and the arguments would go along), a redirect at all only with
//! `redirects = "same-origin"` and only within the origin; the caller's identity reaches the
//! backend only in the headers the file names; required scopes hide and refuse the tool.

#![allow(clippy::unwrap_used)] // in a test, a panic at the failing line is the report we want

mod common;

use std::convert::Infallible;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use common::{call_tool, first_text, rpc_with};
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use mcp_fleet_catalog_file::{Catalog, Format, apply};
use mcp_fleet_server::auth::AuthError;
use mcp_fleet_server::{HandlerOptions, McpHandler, McpServer, Principal, create_mcp_handler, options::ResponseMode};
use serde_json::{Value, json};
use tokio::net::TcpListener;

/// What one backend saw: each request's path, headers and body.
#[derive(Clone, Default)]
struct Seen(Arc<Mutex<Vec<(String, http::HeaderMap, String)>>>);

impl Seen {
    fn paths(&self) -> Vec<String> {
        self.0.lock().unwrap().iter().map(|(p, _, _)| p.clone()).collect()
    }
}

/// A backend on 127.0.0.1:0 that records every request; `/to?url` answers 307 to `url`,
/// anything else echoes the headers it got as JSON. Its base URL.
async fn backend(seen: Seen) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let seen = seen.clone();
            let service = service_fn(move |req: Request<Incoming>| {
                let seen = seen.clone();
                async move { Ok::<_, Infallible>(answer(req, &seen).await) }
            });
            tokio::spawn(hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(stream), service));
        }
    });
    format!("http://{addr}")
}

async fn answer(req: Request<Incoming>, seen: &Seen) -> Response<Full<Bytes>> {
    let (parts, body) = req.into_parts();
    let body = String::from_utf8_lossy(&body.collect().await.unwrap().to_bytes()).into_owned();
    seen.0.lock().unwrap().push((parts.uri.path().to_owned(), parts.headers.clone(), body));
    if parts.uri.path() == "/to" {
        let location = parts.uri.query().unwrap_or_default().to_owned();
        return Response::builder()
            .status(StatusCode::TEMPORARY_REDIRECT)
            .header("location", location)
            .body(Full::default())
            .unwrap();
    }
    let headers: serde_json::Map<String, Value> =
        parts.headers.iter().map(|(k, v)| (k.to_string(), json!(v.to_str().unwrap_or("?")))).collect();
    Response::new(Full::new(Bytes::from(json!({"headers": headers}).to_string())))
}

/// A server with one http tool per `(name, http table)`, `X-Api-Key = "${MCP_CATALOG_KEY}"`
/// added to each.
async fn tools(tools: &[(&str, String)], options: HandlerOptions) -> McpHandler {
    let mut text = String::new();
    for (name, http) in tools {
        text.push_str(&format!("[[tools]]\nname = \"{name}\"\n[tools.http]\n{http}\nheaders = {{ X-Api-Key = \"${{MCP_CATALOG_KEY}}\" }}\n\n"));
    }
    let env = |name: &str| (name == "MCP_CATALOG_KEY").then(|| "SECRET-api-key".to_owned());
    let catalog =
        Catalog::parse_with_env(&text, Format::Toml, "catalog.toml".as_ref(), &env).unwrap_or_else(|e| panic!("{e}"));
    let server = McpServer::builder("http-security-test", "0.1.0").build();
    apply(&server, &catalog).await.unwrap();
    create_mcp_handler(server, options.response_mode(ResponseMode::Json)).await.unwrap()
}

#[tokio::test]
async fn a_redirect_to_another_host_is_not_followed_and_nothing_reaches_it() {
    let (attacker, origin) = (Seen::default(), Seen::default());
    let elsewhere = backend(attacker.clone()).await;
    let base = backend(origin.clone()).await;
    let h = tools(&[("go", format!("url = \"{base}/to?{elsewhere}/steal\""))], HandlerOptions::default()).await;
    let result = call_tool(&h, "go", json!({"q": "private"})).await;
    assert_eq!(result["isError"], true, "{result}");
    assert!(first_text(&result).contains("307"), "{result}");
    assert_eq!(origin.paths(), ["/to"]);
    assert!(attacker.paths().is_empty(), "the other host was called: {:?}", attacker.0.lock().unwrap());
}

#[tokio::test]
async fn by_default_no_redirect_is_followed_not_even_within_the_origin() {
    let origin = Seen::default();
    let base = backend(origin.clone()).await;
    let h = tools(&[("go", format!("url = \"{base}/to?{base}/echo\""))], HandlerOptions::default()).await;
    let result = call_tool(&h, "go", json!({})).await;
    assert_eq!(result["isError"], true, "{result}");
    assert_eq!(origin.paths(), ["/to"]);
}

#[tokio::test]
async fn same_origin_follows_within_the_origin_only() {
    let (attacker, origin) = (Seen::default(), Seen::default());
    let elsewhere = backend(attacker.clone()).await;
    let base = backend(origin.clone()).await;
    let same = format!("url = \"{base}/to?{base}/echo\"\nredirects = \"same-origin\"");
    let away = format!("url = \"{base}/to?{elsewhere}/steal\"\nredirects = \"same-origin\"");
    let h = tools(&[("same", same), ("away", away)], HandlerOptions::default()).await;
    let followed = call_tool(&h, "same", json!({"q": 1})).await;
    assert_eq!(followed.get("isError"), None, "{followed}");
    assert_eq!(followed["structuredContent"]["headers"]["x-api-key"], "SECRET-api-key");
    assert_eq!(origin.paths(), ["/to", "/echo"]);
    let stopped = call_tool(&h, "away", json!({"q": 2})).await;
    assert_eq!(stopped["isError"], true, "{stopped}");
    assert!(attacker.paths().is_empty(), "{:?}", attacker.paths());
}

/// The principal `x-sub` names, in the tenant `x-tenant` names, granted the `x-scopes`.
fn principal(parts: &http::request::Parts) -> Result<Principal, AuthError> {
    let header = |name: &str| parts.headers.get(name).and_then(|v| v.to_str().ok()).map(str::to_owned);
    let scopes = header("x-scopes").unwrap_or_default();
    Ok(Principal::new(header("x-sub").unwrap_or_else(|| "anonymous".into()), header("x-tenant"))
        .with_scopes(scopes.split(' ').filter(|s| !s.is_empty())))
}

/// `rpc` as the caller the headers name, the HTTP status as `httpStatus`.
async fn rpc_as(h: &McpHandler, headers: &[(&str, &str)], method: &str, name: Option<&str>, params: Value) -> Value {
    let (status, mut json) = rpc_with(h, headers, method, name, params).await;
    json["httpStatus"] = json!(status);
    json
}

#[tokio::test]
async fn the_callers_identity_reaches_the_backend_only_in_the_named_headers() {
    let origin = Seen::default();
    let base = backend(origin.clone()).await;
    let who =
        format!("url = \"{base}/echo\"\nforward_identity = {{ subject = \"X-Caller\", tenant = \"X-Caller-Tenant\" }}");
    let plain = format!("url = \"{base}/echo\"");
    let h = tools(&[("who", who), ("plain", plain)], HandlerOptions::default().authenticator(principal)).await;
    let caller = [("x-sub", "user-7"), ("x-tenant", "acme")];
    let call = |name: &'static str| json!({"name": name, "arguments": {}});
    let result = rpc_as(&h, &caller, "tools/call", Some("who"), call("who")).await;
    let headers = &result["result"]["structuredContent"]["headers"];
    assert_eq!((&headers["x-caller"], &headers["x-caller-tenant"]), (&json!("user-7"), &json!("acme")), "{result}");
    let result = rpc_as(&h, &[("x-sub", "user-8")], "tools/call", Some("who"), call("who")).await;
    let headers = &result["result"]["structuredContent"]["headers"];
    assert_eq!(
        (&headers["x-caller"], headers.get("x-caller-tenant")),
        (&json!("user-8"), None),
        "no tenant, no header"
    );
    let result = rpc_as(&h, &caller, "tools/call", Some("plain"), call("plain")).await;
    let headers = result["result"]["structuredContent"]["headers"].as_object().unwrap().clone();
    assert!(!headers.contains_key("x-caller") && !headers.values().any(|v| v == "user-7"), "{headers:?}");
}

#[tokio::test]
async fn required_scopes_hide_and_refuse_the_tool_to_callers_without_them() {
    let text = "[[tools]]\nname = \"delete\"\nrequired_scopes = [\"files:write\"]\ntext = \"deleted\"\n\n[[tools]]\nname = \"read\"\ntext = \"read\"\n";
    let catalog = Catalog::parse(text, Format::Toml, "catalog.toml".as_ref()).unwrap();
    let server = McpServer::builder("scopes-test", "0.1.0").build();
    apply(&server, &catalog).await.unwrap();
    let options = HandlerOptions::default().authenticator(principal).response_mode(ResponseMode::Json);
    let h = create_mcp_handler(server.clone(), options).await.unwrap();
    let names = |listed: &Value| -> Vec<String> {
        listed["result"]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap().to_owned()).collect()
    };
    let call = json!({"name": "delete", "arguments": {}});
    let reader = [("x-sub", "u"), ("x-scopes", "files:read")];
    assert_eq!(names(&rpc_as(&h, &reader, "tools/list", None, json!({})).await), ["read"]);
    let refused = rpc_as(&h, &reader, "tools/call", Some("delete"), call.clone()).await;
    assert_eq!(refused["httpStatus"], 403, "{refused}");
    assert_eq!(refused["error"]["data"]["requiredScopes"], json!(["files:write"]), "{refused}");
    let writer = [("x-sub", "u"), ("x-scopes", "files:read files:write")];
    assert_eq!(names(&rpc_as(&h, &writer, "tools/list", None, json!({})).await), ["delete", "read"]);
    let done = rpc_as(&h, &writer, "tools/call", Some("delete"), call.clone()).await;
    assert_eq!(first_text(&done["result"]), "deleted", "{done}");

    // A reload keeps the requirement: every apply sets it again on the re-added tool.
    apply(&server, &catalog).await.unwrap();
    assert_eq!(rpc_as(&h, &reader, "tools/call", Some("delete"), call).await["httpStatus"], 403);
}

#[tokio::test]
async fn cloud_metadata_and_link_local_addresses_are_refused_before_any_connection() {
    // No server anywhere: the refusal must come before a connection is even attempted (a
    // connection to these addresses would time out here, after timeout_ms, with another message).
    let urls = [
        "http://169.254.169.254/latest/meta-data/iam/security-credentials/",
        "http://[fd00:ec2::254]/latest/api/token",
        "http://100.100.100.200/latest/meta-data/",
        "http://metadata.google.internal/computeMetadata/v1/",
        "http://[::ffff:169.254.169.254]/",
        "http://[fe80::1]:8080/",
    ];
    let tables: Vec<(String, String)> = urls
        .iter()
        .enumerate()
        .map(|(i, url)| (format!("t{i}"), format!("url = \"{url}\"\ntimeout_ms = 60000")))
        .collect();
    let tables: Vec<(&str, String)> = tables.iter().map(|(n, t)| (n.as_str(), t.clone())).collect();
    let h = tools(&tables, HandlerOptions::default()).await;
    for (i, url) in urls.iter().enumerate() {
        let started = std::time::Instant::now();
        let result = call_tool(&h, &format!("t{i}"), json!({})).await;
        assert_eq!(result["isError"], true, "{url}: {result}");
        assert!(first_text(&result).contains("http tools may not reach"), "{url}: {result}");
        assert!(started.elapsed() < std::time::Duration::from_secs(5), "{url}: refused at once");
    }
}
