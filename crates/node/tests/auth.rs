//! The `mcp-fleet` binary as an OAuth resource server: started with the `--auth-*` flags
//! against a test identity provider, it challenges callers without a token, points them at its
//! RFC 9728 document, serves valid tokens, fetches the issuer's keys at start (and survives
//! their absence), enforces the per-principal stream and rate flags, signs `requestState` with
//! the key file's key, and refuses half an auth configuration at start.

mod common;

use std::path::PathBuf;

use common::Node;
use http::StatusCode;
use mcp_fleet_tests::cluster::unique_name;
use mcp_fleet_tests::idp::{Idp, JWKS_PATH, TENANT_CLAIM};
use mcp_fleet_tests::{ListenStream, McpClient, Reply, request};
use serde_json::{Value, json};

/// The canonical public URL the tokens are issued for: behind an ingress it is not the pod's
/// own address, and the node serves its metadata by path whatever the Host.
const AUDIENCE: &str = "https://mcp.example.com/mcp";
/// The scope every request needs (`--auth-scopes`).
const SCOPE: &str = "mcp:use";

/// A node taking the IdP's tokens for [`AUDIENCE`], with `extra` flags.
struct Protected {
    idp: Idp,
    node: Node,
    client: McpClient,
}

impl Protected {
    async fn start(extra: &[&str]) -> Protected {
        let idp = Idp::start().await;
        let (issuer, jwks) = (idp.issuer(), idp.jwks_url());
        let mut args = vec!["--auth-issuer", &issuer, "--auth-audience", AUDIENCE, "--auth-jwks-url", &jwks];
        args.extend(["--auth-scopes", SCOPE, "--auth-tenant-claim", TENANT_CLAIM]);
        args.extend(extra);
        let node = Node::start(&args, None);
        node.ready().await;
        let client = McpClient::new(node.url());
        Protected { idp, node, client }
    }

    /// A token for `subject` in tenant `acme` with `scope`.
    fn token(&self, subject: &str, scope: &str) -> String {
        self.idp.token(&self.idp.claims(AUDIENCE, subject, scope, Some("acme")))
    }

    /// POST `body` with the standard headers and, if given, the bearer token.
    async fn post(&self, body: &Value, token: Option<&str>) -> Reply {
        self.client.post_with(body, &headers(body, token)).await
    }

    /// Open a listen stream as the holder of `token`.
    async fn listen(&self, token: &str) -> ListenStream {
        let body = request(json!("l"), "subscriptions/listen", json!({"notifications": {"toolsListChanged": true}}));
        let resp =
            self.client.send_raw("POST", &headers(&body, Some(token)), serde_json::to_vec(&body).expect("JSON")).await;
        ListenStream::from_response(resp)
    }

    /// `GET path` on the MCP port: status and body.
    async fn get(&self, path: &str) -> (StatusCode, String) {
        let url = format!("http://{}{path}", self.node.mcp);
        let client = McpClient::new(url);
        let resp = client.send_raw("GET", &[], Vec::new()).await;
        let status = resp.status();
        let body = http_body_util::BodyExt::collect(resp.into_body()).await.expect("body").to_bytes();
        (status, String::from_utf8_lossy(&body).into_owned())
    }

    /// The admin port's `/metrics`.
    async fn metrics(&self) -> String {
        self.node.admin_get("/metrics").await.expect("/metrics answers").1
    }
}

fn headers(body: &Value, token: Option<&str>) -> Vec<(String, String)> {
    let mut headers = McpClient::standard_headers(body);
    if let Some(token) = token {
        headers.push(("authorization".into(), format!("Bearer {token}")));
    }
    headers
}

fn discover() -> Value {
    request(json!(1), "server/discover", json!({}))
}

fn challenge(reply: &Reply) -> String {
    let value = reply.headers.get(http::header::WWW_AUTHENTICATE).expect("a WWW-Authenticate challenge");
    value.to_str().expect("ASCII challenge").to_owned()
}

/// The value of the metric line starting with `series ` (`None` when absent).
fn metric(text: &str, series: &str) -> Option<f64> {
    text.lines().find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.trim().parse().ok())
}

#[tokio::test]
async fn a_request_without_a_token_is_challenged_with_the_metadata_url_which_names_the_issuer() {
    let p = Protected::start(&[]).await;
    let reply = p.post(&discover(), None).await;
    assert_eq!(reply.status, StatusCode::UNAUTHORIZED);
    assert_eq!(
        challenge(&reply),
        format!(
            "Bearer resource_metadata=\"https://mcp.example.com/.well-known/oauth-protected-resource/mcp\", scope=\"{SCOPE}\""
        )
    );
    for path in ["/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"] {
        let (status, body) = p.get(path).await;
        assert_eq!(status, StatusCode::OK, "{path}: {body}");
        let document: Value = serde_json::from_str(&body).expect("JSON metadata");
        assert_eq!(document["resource"], AUDIENCE, "{path}");
        assert_eq!(document["authorization_servers"], json!([p.idp.issuer()]), "{path}");
        assert_eq!(document["scopes_supported"], json!([SCOPE]), "{path}");
    }
}

#[tokio::test]
async fn a_valid_token_is_served_with_the_keys_fetched_once_at_start() {
    let p = Protected::start(&[]).await;
    // Fetched while the bus connected, before any token arrived.
    assert_eq!(p.idp.jwks_fetches(), 1);
    assert_eq!(metric(&p.metrics().await, "mcp_fleet_auth_jwks_fetches_total"), Some(1.0));

    let reply = p.post(&discover(), Some(&p.token("alice", SCOPE))).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", String::from_utf8_lossy(&reply.body));
    assert!(reply.json()["result"]["supportedVersions"].as_array().is_some_and(|v| v.contains(&json!("2026-07-28"))));
    assert_eq!(p.idp.jwks_fetches(), 1, "the first token used the keys fetched at start");

    let elsewhere = p.idp.token(&p.idp.claims("https://other.example.com/mcp", "alice", SCOPE, Some("acme")));
    let reply = p.post(&discover(), Some(&elsewhere)).await;
    assert_eq!(reply.status, StatusCode::UNAUTHORIZED, "a token issued for another resource");
    assert!(challenge(&reply).contains("error=\"invalid_token\""), "{}", challenge(&reply));

    let reply = p.post(&discover(), Some(&p.token("alice", "other:scope"))).await;
    assert_eq!(reply.status, StatusCode::FORBIDDEN, "a token without --auth-scopes");
    assert!(challenge(&reply).contains("error=\"insufficient_scope\""), "{}", challenge(&reply));
}

#[tokio::test]
async fn a_principal_past_max_streams_per_principal_gets_429_while_others_still_listen() {
    let p = Protected::start(&["--max-streams-per-principal", "1"]).await;
    let alice = p.token("alice", SCOPE);
    let mut first = p.listen(&alice).await;
    assert_eq!(first.status, StatusCode::OK);
    assert_eq!(first.next_message().await.expect("ack")["method"], "notifications/subscriptions/acknowledged");

    let body = request(json!(2), "subscriptions/listen", json!({"notifications": {"toolsListChanged": true}}));
    let second = p.post(&body, Some(&alice)).await;
    assert_eq!(second.status, StatusCode::TOO_MANY_REQUESTS, "{}", String::from_utf8_lossy(&second.body));
    assert_eq!(second.error_code(), Some(-32603));

    let mut bob = p.listen(&p.token("bob", SCOPE)).await;
    assert_eq!(bob.status, StatusCode::OK, "the cap is per principal");
    assert_eq!(bob.next_message().await.expect("ack")["method"], "notifications/subscriptions/acknowledged");
    let refused = r#"mcp_fleet_listen_streams_refused_total{reason="principal_limit"}"#;
    assert_eq!(metric(&p.metrics().await, refused), Some(1.0));
}

#[tokio::test]
async fn a_principal_past_its_rate_gets_429_with_retry_after() {
    // One token per 5 s, two at once: the third quick request of one principal is refused.
    let p = Protected::start(&["--rate-per-principal", "0.2", "--rate-burst-per-principal", "2"]).await;
    let alice = p.token("alice", SCOPE);
    for i in 0..2 {
        assert_eq!(p.post(&discover(), Some(&alice)).await.status, StatusCode::OK, "request {i} is in the burst");
    }
    let refused = p.post(&discover(), Some(&alice)).await;
    assert_eq!(refused.status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(refused.error_code(), Some(-32600));
    let retry: u64 = refused.headers[http::header::RETRY_AFTER].to_str().unwrap().parse().expect("whole seconds");
    assert!((1..=5).contains(&retry), "Retry-After: {retry}");
    assert_eq!(p.post(&discover(), Some(&p.token("bob", SCOPE))).await.status, StatusCode::OK, "per principal");
    assert_eq!(metric(&p.metrics().await, "mcp_fleet_http_requests_rate_limited_total"), Some(1.0));
}

#[tokio::test]
async fn the_request_state_key_file_makes_forged_request_state_fail() {
    let key = temp_file(&"k".repeat(40));
    let p = Protected::start(&["--request-state-key-file", key.to_str().unwrap()]).await;
    let call =
        request(json!(3), "tools/call", json!({"name": "echo", "arguments": {"text": "hi"}, "requestState": "forged"}));
    let reply = p.post(&call, Some(&p.token("alice", SCOPE))).await;
    let error = &reply.json()["error"];
    assert_eq!(error["code"], -32602, "{}", reply.json());
    assert_eq!(error["data"]["reason"], "invalid_request_state");
    let _ = std::fs::remove_file(key);
}

#[tokio::test]
async fn a_jwks_outage_at_start_leaves_the_node_up_refusing_tokens() {
    let idp = Idp::start().await;
    idp.withdraw(JWKS_PATH);
    let (issuer, jwks) = (idp.issuer(), idp.jwks_url());
    let mut node =
        Node::start(&["--auth-issuer", &issuer, "--auth-audience", AUDIENCE, "--auth-jwks-url", &jwks], None);
    node.ready().await;
    assert_eq!(idp.jwks_fetches(), 1, "the warm-up tried");
    let token = idp.token(&idp.claims(AUDIENCE, "alice", SCOPE, None));
    let client = McpClient::new(node.url());
    let reply = client.post_with(&discover(), &headers(&discover(), Some(&token))).await;
    assert_eq!(reply.status, StatusCode::UNAUTHORIZED);
    assert!(challenge(&reply).contains("signing keys unavailable"), "{}", challenge(&reply));
    assert_eq!(node.exited(std::time::Duration::from_millis(200)).await, None, "still running");
}

#[tokio::test]
async fn an_issuer_without_an_audience_is_refused_at_start() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_mcp-fleet"))
        .args(["--listen", "127.0.0.1:0", "--auth-issuer", "https://auth.example.com"])
        .output()
        .expect("run mcp-fleet");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--auth-issuer and --auth-audience go together"), "{stderr}");
}

fn temp_file(content: &str) -> PathBuf {
    let path = std::env::temp_dir().join(format!("mcp-fleet-auth-{}", unique_name()));
    std::fs::write(&path, content).expect("write the key file");
    path
}
