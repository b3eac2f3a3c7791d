//! A node as an OAuth resource server, over HTTP: `BearerAuthenticator::install` against the
//! test identity provider, the audience being the node's real URL. Every refusal has its exact
//! status, `WWW-Authenticate` challenge and JSON-RPC body; a client can walk the discovery
//! chain from a 401 to the issuer's keys; a rotated-in key is fetched and accepted; a tool
//! requiring a scope is hidden from and refused to tokens without it; the JWKS fetches are
//! counted.

use std::time::Duration;

use http::StatusCode;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use mcp_fleet_oauth::{BearerAuthenticator, BearerConfig, TokenTypeCheck};
use mcp_fleet_server::types::{CacheHint, CacheScope, CallToolResult, Tool};
use mcp_fleet_server::{HandlerOptions, McpServer, catalog::CachePolicy, create_mcp_handler};
use mcp_fleet_tests::idp::{
    EC_KID, Idp, JWKS_PATH, METADATA_PATH, RSA_KID, authorization, ec_key, forge, now, rsa_key,
};
use mcp_fleet_tests::{McpClient, Reply, TestNode, WAIT, eventually, request};
use serde_json::{Value, json};

/// The scope every request needs.
const USE: &str = "mcp:use";

/// A protected node, its identity provider and a client for it.
struct Protected {
    idp: Idp,
    node: TestNode,
    client: McpClient,
    /// The node's URL, the tokens' audience.
    audience: String,
}

impl Protected {
    /// A node serving [`server`] that needs a token from a fresh IdP with scope `mcp:use`,
    /// `tune` adjusting the configuration.
    async fn start(tune: impl FnOnce(&mut BearerConfig)) -> Protected {
        let idp = Idp::start().await;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let audience = format!("http://{}/mcp", listener.local_addr().unwrap());
        let mut config = idp.bearer_config(&audience);
        config.required_scopes = vec![USE.into()];
        tune(&mut config);
        let options = BearerAuthenticator::new(config).unwrap().install(HandlerOptions::default()).unwrap();
        let node = TestNode::serve_on(listener, create_mcp_handler(server().await, options).await.unwrap());
        let client = McpClient::new(node.url());
        Protected { idp, node, client, audience }
    }

    /// A token for `user-1` with `scope`, signed with the standard RSA key.
    fn token(&self, scope: &str) -> String {
        self.idp.token(&self.claims(scope))
    }

    /// Valid claims for `user-1` with `scope`.
    fn claims(&self, scope: &str) -> Value {
        self.idp.claims(&self.audience, "user-1", scope, None)
    }

    /// POST `body` with the standard headers plus `authorization`, if any.
    async fn post(&self, authorization: Option<&str>, body: &Value) -> Reply {
        let mut headers = McpClient::standard_headers(body);
        headers.extend(authorization.map(|value| ("authorization".to_owned(), value.to_owned())));
        self.client.post_with(body, &headers).await
    }

    /// POST `body` with `token` as the bearer token.
    async fn post_as(&self, token: &str, body: &Value) -> Reply {
        self.post(Some(&authorization(token).1), body).await
    }

    /// Where the node serves its protected-resource metadata.
    fn metadata_url(&self) -> String {
        format!("http://{}/.well-known/oauth-protected-resource/mcp", self.node.addr)
    }

    /// The 401 challenge for a token refused with `description`.
    fn invalid_token(&self, description: &str) -> String {
        format!(
            "Bearer resource_metadata=\"{}\", error=\"invalid_token\", error_description=\"{description}\"",
            self.metadata_url()
        )
    }
}

/// `echo`, and `write_file`, which requires `files:write`; lists may be cached by anyone (a
/// public cache policy the scoped tool must not leak through).
async fn server() -> McpServer {
    let public = CacheHint { ttl_ms: 60_000, scope: CacheScope::Public };
    let server = McpServer::builder("oauth-server", "0.0.1")
        .cache_policy(CachePolicy { lists: public, ..CachePolicy::default() })
        .build();
    server.tool(Tool::new("echo", "Echoes text"), |call| async move {
        Ok(CallToolResult::text(call.arguments["text"].as_str().unwrap_or_default()))
    });
    let write = server
        .tool(Tool::new("write_file", "Writes a file"), |_call| async move { Ok(CallToolResult::text("written")) });
    write.require_scopes(["files:write"]).await.unwrap();
    server
}

fn tools_list() -> Value {
    request(json!(1), "tools/list", json!({}))
}

/// The body of every 401 and 403 refused before the request was read: no `id` (it was never
/// read; spec digest HTTP-14 omits it rather than sending `null`).
fn refusal_body(message: &str) -> Value {
    json!({"jsonrpc": "2.0", "error": {"code": -32600, "message": message}})
}

#[tokio::test]
async fn a_valid_token_is_served() {
    let p = Protected::start(|_| {}).await;
    let reply = p.post_as(&p.token(USE), &tools_list()).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", String::from_utf8_lossy(&reply.body));
    assert!(reply.headers.get("www-authenticate").is_none());
    assert_eq!(reply.json()["result"]["tools"][0]["name"], "echo");
    // An ES256 token from the same issuer too.
    let es256 = ec_key().sign(EC_KID, &p.claims(USE));
    assert_eq!(p.post_as(&es256, &tools_list()).await.status, StatusCode::OK);
    p.node.shutdown().await;
}

#[tokio::test]
async fn each_refused_token_gets_401_with_its_challenge_and_a_json_rpc_error() {
    let p = Protected::start(|_| {}).await;
    let with = |edit: &dyn Fn(&mut Value)| {
        let mut claims = p.claims(USE);
        edit(&mut claims);
        format!("Bearer {}", p.idp.token(&claims))
    };
    // The classic confusion: the RSA public key, as the issuer publishes it, as an HMAC secret.
    let public_key = rsa_key().jwk(RSA_KID).to_string();
    let mut hs256 = Header::new(Algorithm::HS256);
    hs256.kid = Some(RSA_KID.into());
    let hmac = jsonwebtoken::encode(&hs256, &p.claims(USE), &EncodingKey::from_secret(public_key.as_bytes()).unwrap())
        .unwrap();
    let cases: Vec<(&str, String, &str)> = vec![
        ("expired", with(&|c| c["exp"] = json!(now() - 120)), "token expired"),
        ("not yet valid", with(&|c| c["nbf"] = json!(now() + 300)), "token not yet valid"),
        ("wrong issuer", with(&|c| c["iss"] = json!("https://evil.example.com")), "wrong issuer"),
        ("another server's token", with(&|c| c["aud"] = json!("http://127.0.0.1:1/mcp")), "wrong audience"),
        (
            "alg none",
            format!("Bearer {}", forge(&json!({"alg": "none", "kid": RSA_KID}), &p.claims(USE), b"")),
            "algorithm not allowed",
        ),
        ("HS256 keyed with the RSA public key", format!("Bearer {hmac}"), "algorithm not allowed"),
        ("garbage", "Bearer not-a-jwt".to_owned(), "malformed token"),
    ];
    for (case, header, description) in cases {
        let reply = p.post(Some(&header), &tools_list()).await;
        assert_eq!(reply.status, StatusCode::UNAUTHORIZED, "{case}");
        assert_eq!(reply.headers["www-authenticate"], p.invalid_token(description).as_str(), "{case}");
        assert_eq!(reply.headers["content-type"], "application/json", "{case}");
        assert_eq!(reply.json(), refusal_body("Authentication required"), "{case}");
    }
    // No credentials at all (or not bearer ones): the bare challenge, with the scope to ask for.
    for header in [None, Some("Basic dXNlcjpwYXNz")] {
        let reply = p.post(header, &tools_list()).await;
        assert_eq!(reply.status, StatusCode::UNAUTHORIZED, "{header:?}");
        let bare = format!("Bearer resource_metadata=\"{}\", scope=\"{USE}\"", p.metadata_url());
        assert_eq!(reply.headers["www-authenticate"], bare.as_str(), "{header:?}");
        assert_eq!(reply.json(), refusal_body("Authentication required"), "{header:?}");
    }
    // Every signed token above needed the keys once; alg none and HS256 were refused before.
    assert_eq!(p.idp.jwks_fetches(), 1);
    assert!(p.node.handler.metrics_text().contains("mcp_fleet_auth_jwks_fetches_total 1\n"));
    p.node.shutdown().await;
}

#[tokio::test]
async fn a_token_without_an_endpoint_scope_gets_403() {
    let p = Protected::start(|_| {}).await;
    let reply = p.post_as(&p.token("files:read"), &tools_list()).await;
    assert_eq!(reply.status, StatusCode::FORBIDDEN);
    let challenge =
        format!("Bearer resource_metadata=\"{}\", error=\"insufficient_scope\", scope=\"{USE}\"", p.metadata_url());
    assert_eq!(reply.headers["www-authenticate"], challenge.as_str());
    assert_eq!(reply.json(), refusal_body("Insufficient permissions for this request"));
    p.node.shutdown().await;
}

#[tokio::test]
async fn a_key_rotated_in_after_the_keys_were_cached_is_fetched_then_accepted() {
    let window = Duration::from_secs(1);
    let p = Protected::start(|config| config.jwks_refetch_interval = window).await;
    assert_eq!(p.post_as(&p.token(USE), &tools_list()).await.status, StatusCode::OK);
    assert_eq!(p.idp.jwks_fetches(), 1, "the first token fetched the keys");
    // The issuer rotates in a key the node has not seen.
    p.idp.add_key("ec-2", ec_key());
    let rotated = ec_key().sign("ec-2", &p.claims(USE));
    // Inside the refetch window the unknown kid is refused without a fetch...
    let early = p.post_as(&rotated, &tools_list()).await;
    assert_eq!(early.status, StatusCode::UNAUTHORIZED);
    assert_eq!(early.headers["www-authenticate"], p.invalid_token("unknown signing key").as_str());
    assert_eq!(p.idp.jwks_fetches(), 1);
    // ...and once it has passed, the first token naming it refetches the keys and is accepted.
    eventually("the rotated key is accepted", WAIT, async || {
        p.post_as(&rotated, &tools_list()).await.status == StatusCode::OK
    })
    .await;
    assert_eq!(p.idp.jwks_fetches(), 2);
    let metrics = p.node.handler.metrics_text();
    assert!(metrics.contains("mcp_fleet_auth_jwks_fetches_total 2\n"), "{metrics}");
    // Known keys need no further fetch.
    assert_eq!(p.post_as(&p.token(USE), &tools_list()).await.status, StatusCode::OK);
    assert_eq!(p.idp.jwks_fetches(), 2);
    p.node.shutdown().await;
}

/// GET `url` (no Origin check, no token) and parse the JSON answer.
async fn get_json(url: &str, headers: &[(String, String)]) -> (Reply, Value) {
    let resp = McpClient::new(url.to_owned()).send_raw("GET", headers, "").await;
    let (parts, body) = resp.into_parts();
    let body = http_body_util::BodyExt::collect(body).await.unwrap().to_bytes();
    let reply = Reply { status: parts.status, headers: parts.headers, body };
    let json = reply.json();
    (reply, json)
}

/// The `key="value"` parameter of a challenge.
fn challenge_param(challenge: &str, key: &str) -> String {
    let start =
        challenge.find(&format!("{key}=\"")).unwrap_or_else(|| panic!("no {key} in {challenge}")) + key.len() + 2;
    challenge[start..].split('"').next().unwrap().to_owned()
}

#[tokio::test]
async fn a_client_discovers_the_issuer_and_its_keys_from_the_401() {
    let p = Protected::start(|_| {}).await;
    let refused = p.post(None, &tools_list()).await;
    assert_eq!(refused.status, StatusCode::UNAUTHORIZED);
    let challenge = refused.headers["www-authenticate"].to_str().unwrap();
    let metadata_url = challenge_param(challenge, "resource_metadata");
    assert_eq!(metadata_url, p.metadata_url());
    // RFC 9728: served without a token and to any origin (browser clients read it cross-origin).
    let foreign = [("origin".to_owned(), "https://app.example.net".to_owned())];
    let (reply, resource) = get_json(&metadata_url, &foreign).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.headers["access-control-allow-origin"], "*");
    assert_eq!(
        resource,
        json!({
            "resource": p.audience,
            "authorization_servers": [p.idp.issuer()],
            "scopes_supported": [USE],
            "bearer_methods_supported": ["header"],
        })
    );
    // The bare well-known path serves the same document.
    let bare = format!("http://{}/.well-known/oauth-protected-resource", p.node.addr);
    assert_eq!(get_json(&bare, &[]).await.1, resource);
    // RFC 8414: the issuer's metadata names it and its keys.
    let issuer = resource["authorization_servers"][0].as_str().unwrap();
    let (_, server) = get_json(&format!("{issuer}{METADATA_PATH}"), &[]).await;
    assert_eq!(server["issuer"], issuer);
    let jwks_uri = server["jwks_uri"].as_str().unwrap();
    assert_eq!(jwks_uri, p.idp.url(JWKS_PATH));
    let (_, jwks) = get_json(jwks_uri, &[]).await;
    assert!(jwks["keys"].as_array().unwrap().iter().any(|k| k["kid"] == RSA_KID), "{jwks}");
    p.node.shutdown().await;
}

#[tokio::test]
async fn a_tool_requiring_a_scope_is_hidden_from_and_refused_to_tokens_without_it() {
    let p = Protected::start(|_| {}).await;
    let names = |reply: &Reply| -> Vec<String> {
        let tools = reply.json()["result"]["tools"].as_array().unwrap().clone();
        tools.iter().map(|t| t["name"].as_str().unwrap().to_owned()).collect()
    };
    let plain = p.token(USE);
    let writer = p.token("mcp:use files:write");

    let listed = p.post_as(&plain, &tools_list()).await;
    assert_eq!(names(&listed), ["echo"]);
    // The list depends on who asks: no shared cache may keep it, whatever the policy says.
    assert_eq!(listed.json()["result"]["cacheScope"], "private");
    let listed = p.post_as(&writer, &tools_list()).await;
    assert_eq!(names(&listed), ["echo", "write_file"]);
    assert_eq!(listed.json()["result"]["cacheScope"], "private");

    let call = request(json!(7), "tools/call", json!({"name": "write_file", "arguments": {}}));
    let refused = p.post_as(&plain, &call).await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN);
    // The tool's own scopes: since 2026-07-28 the client adds them to those it holds.
    let challenge = format!(
        "Bearer resource_metadata=\"{}\", error=\"insufficient_scope\", scope=\"files:write\"",
        p.metadata_url()
    );
    assert_eq!(refused.headers["www-authenticate"], challenge.as_str());
    let body = refused.json();
    assert_eq!((body["id"].clone(), body["error"]["code"].clone()), (json!(7), json!(-32600)), "{body}");
    assert_eq!(body["error"]["data"]["requiredScopes"], json!(["files:write"]));

    let done = p.post_as(&writer, &call).await;
    assert_eq!(done.status, StatusCode::OK);
    assert_eq!(done.json()["result"]["content"][0]["text"], "written");
    p.node.shutdown().await;
}

/// `claims` signed with the standard RSA key under a header whose `typ` is `typ`.
fn typed_token(claims: &Value, typ: Option<&str>) -> String {
    let mut header = Header::new(Algorithm::RS256);
    header.kid = Some(RSA_KID.into());
    header.typ = typ.map(str::to_owned);
    rsa_key().sign_with_header(&header, claims)
}

#[tokio::test]
async fn a_token_typed_as_another_kind_of_jwt_is_refused_and_at_jwt_can_be_required() {
    let p = Protected::start(|_| {}).await;
    for typ in [None, Some("JWT"), Some("at+jwt"), Some("application/at+jwt")] {
        let reply = p.post_as(&typed_token(&p.claims(USE), typ), &tools_list()).await;
        assert_eq!(reply.status, StatusCode::OK, "typ {typ:?} passes the default check");
    }
    for typ in ["dpop+jwt", "logout+jwt", "secevent+jwt"] {
        let reply = p.post_as(&typed_token(&p.claims(USE), Some(typ)), &tools_list()).await;
        assert_eq!(reply.status, StatusCode::UNAUTHORIZED, "typ {typ}");
        assert_eq!(reply.headers["www-authenticate"], p.invalid_token("wrong token type").as_str());
        assert_eq!(reply.json(), refusal_body("Authentication required"));
    }
    p.node.shutdown().await;

    let strict = Protected::start(|config| config.token_type = TokenTypeCheck::RequireAccessToken).await;
    for typ in [None, Some("JWT")] {
        let reply = strict.post_as(&typed_token(&strict.claims(USE), typ), &tools_list()).await;
        assert_eq!(reply.status, StatusCode::UNAUTHORIZED, "RFC 9068 needs at+jwt, not {typ:?}");
        assert_eq!(reply.headers["www-authenticate"], strict.invalid_token("wrong token type").as_str());
    }
    let at_jwt = typed_token(&strict.claims(USE), Some("at+jwt"));
    assert_eq!(strict.post_as(&at_jwt, &tools_list()).await.status, StatusCode::OK);
    strict.node.shutdown().await;
}

#[tokio::test]
async fn cached_keys_past_the_hard_max_age_fail_closed_while_the_issuer_stays_unreachable() {
    let hard = Duration::from_millis(1500);
    let p = Protected::start(|config| {
        config.jwks_refetch_interval = Duration::from_millis(100);
        config.jwks_max_age = Duration::from_millis(200);
        config.jwks_hard_max_age = hard;
    })
    .await;
    let started = tokio::time::Instant::now();
    assert_eq!(p.post_as(&p.token(USE), &tools_list()).await.status, StatusCode::OK);
    p.idp.withdraw(JWKS_PATH); // the issuer's keys are unreachable from now on
    // Before the hard maximum age the cached keys still verify (background refreshes fail).
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(p.post_as(&p.token(USE), &tools_list()).await.status, StatusCode::OK);
    assert!(p.idp.hits(JWKS_PATH) >= 2, "a refresh was attempted past the refresh age");
    // Past it, the same token is refused: the keys are no longer trusted.
    tokio::time::sleep(hard.saturating_sub(started.elapsed()) + Duration::from_millis(100)).await;
    let refused = p.post_as(&p.token(USE), &tools_list()).await;
    assert_eq!(refused.status, StatusCode::UNAUTHORIZED);
    assert_eq!(refused.headers["www-authenticate"], p.invalid_token("signing keys unavailable").as_str());
    // Once the issuer answers again, tokens are accepted again.
    p.idp.set_keys(&[(RSA_KID, rsa_key()), (EC_KID, ec_key())]);
    eventually("the issuer's keys are fetched again", WAIT, async || {
        p.post_as(&p.token(USE), &tools_list()).await.status == StatusCode::OK
    })
    .await;
    p.node.shutdown().await;
}
