//! `oauth`: without a token, 401 and a challenge naming the protected-resource metadata; with
//! a token of the issuer for this endpoint, the call runs as its subject; without the scope, 403.

use http::StatusCode;
use mcp_fleet_tests::idp::{Idp, authorization};
use mcp_fleet_tests::{McpClient, request};
use serde_json::json;

use crate::support::Example;

#[tokio::test]
async fn only_a_token_of_the_issuer_for_this_endpoint_gets_in() {
    let idp = Idp::start().await;
    let (_example, url) = Example::start(env!("CARGO_BIN_EXE_oauth"), &[], &[("OAUTH_ISSUER", &idp.issuer())]);
    let client = McpClient::new(url.clone());
    let body = request(json!(1), "tools/call", json!({"name": "whoami", "arguments": {}}));
    let headers = McpClient::standard_headers(&body);

    let anonymous = client.post_with(&body, &headers).await;
    assert_eq!(anonymous.status, StatusCode::UNAUTHORIZED);
    let challenge = anonymous.headers["www-authenticate"].to_str().unwrap();
    assert!(challenge.contains("resource_metadata="), "{challenge}");

    let with = |token: String| [headers.clone(), vec![authorization(&token)]].concat();
    let alice = client.post_with(&body, &with(idp.token(&idp.claims(&url, "alice", "mcp:use", None)))).await;
    assert_eq!(alice.json()["result"]["content"][0]["text"], format!("alice from {}", idp.issuer()));
    let unscoped = client.post_with(&body, &with(idp.token(&idp.claims(&url, "bob", "other", None)))).await;
    assert_eq!(unscoped.status, StatusCode::FORBIDDEN);
    let elsewhere = idp.token(&idp.claims("http://elsewhere.example/mcp", "eve", "mcp:use", None));
    assert_eq!(client.post_with(&body, &with(elsewhere)).await.status, StatusCode::UNAUTHORIZED);
}
