//! The bearer authenticator on its own (no handler) against the test identity provider
//! ([`mcp_fleet_tests::idp`]) served over HTTP on 127.0.0.1, whose JWKS and metadata fetches
//! are counted. Each refusal is checked for its status and its exact `WWW-Authenticate`
//! header. `oauth_http.rs` runs the same refusals through a real node.

use std::sync::LazyLock;
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use http::{Request, StatusCode};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use mcp_fleet_oauth::{BearerAuthenticator, BearerConfig};
use mcp_fleet_server::Principal;
use mcp_fleet_server::auth::{AuthError, Authenticator};
use mcp_fleet_tests::idp::{EC_KID, Idp, JWKS_PATH, METADATA_PATH, RSA_KID, SigningKey, ec_key, forge, now, rsa_key};
use serde_json::{Value, json};

const AUDIENCE: &str = "https://mcp.example.com/mcp";
const METADATA_URL: &str = "https://mcp.example.com/.well-known/oauth-protected-resource/mcp";

/// A second RSA key the IdP never serves.
static RSA_OTHER: LazyLock<SigningKey> = LazyLock::new(SigningKey::generate_rsa);

// ---- tokens and requests ------------------------------------------------------------------

/// Claims of a token that passes every check (with tenant claim `org.id`).
fn good_claims(idp: &Idp) -> Value {
    let mut claims = idp.claims(AUDIENCE, "user-1", "mcp:use files:read", None);
    claims["org"] = json!({"id": "acme"});
    claims
}

/// Tenant claim `org.id`, scope `mcp:use` required.
fn config(idp: &Idp) -> BearerConfig {
    let mut config = idp.bearer_config(AUDIENCE);
    config.tenant_claim = Some("org.id".into());
    config.required_scopes = vec!["mcp:use".into()];
    config
}

async fn authenticate(bearer: &BearerAuthenticator, authorization: Option<&str>) -> Result<Principal, AuthError> {
    let mut request = Request::builder().uri("/mcp");
    if let Some(value) = authorization {
        request = request.header(http::header::AUTHORIZATION, value);
    }
    let (parts, ()) = request.body(()).unwrap().into_parts();
    bearer.authenticate(&parts).await
}

async fn with_token(bearer: &BearerAuthenticator, token: &str) -> Result<Principal, AuthError> {
    authenticate(bearer, Some(&format!("Bearer {token}"))).await
}

/// The 401 for a token that failed with `description`.
fn invalid_token(description: &str) -> AuthError {
    AuthError::unauthenticated(format!(
        "Bearer resource_metadata=\"{METADATA_URL}\", error=\"invalid_token\", error_description=\"{description}\""
    ))
}

/// An IdP serving the RSA key as `rsa-1` and the EC key as `ec-1`, and an authenticator for it.
async fn setup() -> (Idp, BearerAuthenticator) {
    let idp = Idp::start().await;
    let bearer = BearerAuthenticator::new(config(&idp)).unwrap();
    (idp, bearer)
}

// ---- accepted tokens ----------------------------------------------------------------------

#[tokio::test]
async fn a_valid_token_gives_the_principal_with_its_scopes_and_tenant() {
    let (idp, bearer) = setup().await;
    let principal = with_token(&bearer, &idp.token(&good_claims(&idp))).await.unwrap();
    let expected = Principal::new("user-1", Some("acme".into())).with_scopes(["mcp:use", "files:read"]);
    assert_eq!(principal, expected.with_issuer(idp.issuer()));
    let es256 = with_token(&bearer, &ec_key().sign(EC_KID, &good_claims(&idp))).await.unwrap();
    assert_eq!(es256.id, "user-1");
    assert_eq!(idp.jwks_fetches(), 1, "keys are cached");
}

#[tokio::test]
async fn audience_may_be_a_list_and_scopes_may_be_scp() {
    let (idp, bearer) = setup().await;
    let mut claims = good_claims(&idp);
    claims["aud"] = json!(["https://other.example.com", AUDIENCE]);
    claims.as_object_mut().unwrap().remove("scope");
    claims["scp"] = json!(["mcp:use"]);
    let principal = with_token(&bearer, &idp.token(&claims)).await.unwrap();
    assert_eq!(principal.scopes, ["mcp:use"]);
}

#[tokio::test]
async fn clock_skew_within_the_leeway_is_tolerated() {
    let (idp, bearer) = setup().await;
    let mut claims = good_claims(&idp);
    claims["exp"] = json!(now() - 30);
    claims["nbf"] = json!(now() + 30);
    assert!(with_token(&bearer, &idp.token(&claims)).await.is_ok());
}

// ---- refused requests ---------------------------------------------------------------------

#[tokio::test]
async fn no_token_gets_the_bare_challenge() {
    let (idp, bearer) = setup().await;
    let expected =
        AuthError::unauthenticated(format!("Bearer resource_metadata=\"{METADATA_URL}\", scope=\"mcp:use\""));
    assert_eq!(authenticate(&bearer, None).await, Err(expected.clone()));
    assert_eq!(authenticate(&bearer, Some("Basic dXNlcjpwYXNz")).await, Err(expected.clone()));
    assert_eq!(expected.status(), StatusCode::UNAUTHORIZED);

    let mut unscoped = config(&idp);
    unscoped.required_scopes.clear();
    let bearer = BearerAuthenticator::new(unscoped).unwrap();
    let err = authenticate(&bearer, None).await.unwrap_err();
    assert_eq!(err.challenge(), format!("Bearer resource_metadata=\"{METADATA_URL}\""));
}

#[tokio::test]
async fn expired_and_not_yet_valid() {
    let (idp, bearer) = setup().await;
    let mut expired = good_claims(&idp);
    expired["exp"] = json!(now() - 120);
    let err = with_token(&bearer, &idp.token(&expired)).await.unwrap_err();
    assert_eq!(err, invalid_token("token expired"));
    assert_eq!(err.status(), StatusCode::UNAUTHORIZED);

    let mut early = good_claims(&idp);
    early["nbf"] = json!(now() + 300);
    assert_eq!(with_token(&bearer, &idp.token(&early)).await, Err(invalid_token("token not yet valid")));
}

#[tokio::test]
async fn wrong_issuer_and_wrong_audience() {
    let (idp, bearer) = setup().await;
    let mut issuer = good_claims(&idp);
    issuer["iss"] = json!("https://evil.example.com");
    assert_eq!(with_token(&bearer, &idp.token(&issuer)).await, Err(invalid_token("wrong issuer")));

    let mut audience = good_claims(&idp);
    audience["aud"] = json!("https://other-mcp.example.com/mcp");
    assert_eq!(with_token(&bearer, &idp.token(&audience)).await, Err(invalid_token("wrong audience")));

    let mut no_audience = good_claims(&idp);
    no_audience.as_object_mut().unwrap().remove("aud");
    assert_eq!(with_token(&bearer, &idp.token(&no_audience)).await, Err(invalid_token("missing claim: aud")));
}

#[tokio::test]
async fn missing_sub_and_missing_tenant() {
    let (idp, bearer) = setup().await;
    let mut no_sub = good_claims(&idp);
    no_sub.as_object_mut().unwrap().remove("sub");
    assert_eq!(with_token(&bearer, &idp.token(&no_sub)).await, Err(invalid_token("missing claim: sub")));

    let mut no_tenant = good_claims(&idp);
    no_tenant["org"] = json!({"name": "acme"});
    assert_eq!(with_token(&bearer, &idp.token(&no_tenant)).await, Err(invalid_token("missing tenant claim")));
}

#[tokio::test]
async fn insufficient_scope_is_a_403_naming_every_required_scope() {
    let idp = Idp::start().await;
    let mut config = config(&idp);
    config.required_scopes = vec!["mcp:use".into(), "mcp:admin".into()];
    let bearer = BearerAuthenticator::new(config).unwrap();
    let err = with_token(&bearer, &idp.token(&good_claims(&idp))).await.unwrap_err();
    assert_eq!(err.status(), StatusCode::FORBIDDEN);
    assert_eq!(
        err,
        AuthError::forbidden(format!(
            "Bearer resource_metadata=\"{METADATA_URL}\", error=\"insufficient_scope\", scope=\"mcp:use mcp:admin\""
        ))
    );
}

#[tokio::test]
async fn alg_none_is_refused() {
    let (idp, bearer) = setup().await;
    let token = forge(&json!({"alg": "none", "kid": RSA_KID}), &good_claims(&idp), b"");
    assert_eq!(with_token(&bearer, &token).await, Err(invalid_token("algorithm not allowed")));
    let token = forge(&json!({"alg": "none"}), &good_claims(&idp), b"");
    assert_eq!(with_token(&bearer, &token).await, Err(invalid_token("algorithm not allowed")));
}

#[tokio::test]
async fn hs256_signed_with_the_rsa_public_key_is_refused() {
    let (idp, bearer) = setup().await;
    // The classic confusion: the public key (as the JWK's bytes, and as its DER modulus) used
    // as an HMAC secret.
    for secret in [rsa_key().jwk(RSA_KID).to_string().into_bytes(), URL_SAFE_NO_PAD.decode(rsa_modulus()).unwrap()] {
        let mut header = Header::new(Algorithm::HS256);
        header.kid = Some(RSA_KID.into());
        let token =
            jsonwebtoken::encode(&header, &good_claims(&idp), &EncodingKey::from_secret(&secret).unwrap()).unwrap();
        assert_eq!(with_token(&bearer, &token).await, Err(invalid_token("algorithm not allowed")));
    }
    assert_eq!(idp.jwks_fetches(), 0, "refused before any key is looked up");
}

fn rsa_modulus() -> String {
    rsa_key().jwk(RSA_KID)["n"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn a_key_is_used_only_for_its_own_algorithm() {
    let (idp, bearer) = setup().await;
    // ES256 token naming the RSA key's kid.
    let token = ec_key().sign(RSA_KID, &good_claims(&idp));
    assert_eq!(with_token(&bearer, &token).await, Err(invalid_token("signing key does not match the algorithm")));
    // RS384 is not in the allowed list (RS256, ES256) even though the key could verify it.
    let mut header = Header::new(Algorithm::RS384);
    header.kid = Some(RSA_KID.into());
    let token = rsa_key().sign_with_header(&header, &good_claims(&idp));
    assert_eq!(with_token(&bearer, &token).await, Err(invalid_token("algorithm not allowed")));
}

#[tokio::test]
async fn a_bad_signature_is_refused() {
    let (idp, bearer) = setup().await;
    let token = RSA_OTHER.sign(RSA_KID, &good_claims(&idp));
    assert_eq!(with_token(&bearer, &token).await, Err(invalid_token("invalid signature")));
    // A valid token with its claims swapped.
    let good = idp.token(&good_claims(&idp));
    let mut claims = good_claims(&idp);
    claims["sub"] = json!("admin");
    let parts: Vec<&str> = good.split('.').collect();
    let tampered = format!("{}.{}.{}", parts[0], URL_SAFE_NO_PAD.encode(claims.to_string()), parts[2]);
    assert_eq!(with_token(&bearer, &tampered).await, Err(invalid_token("invalid signature")));
}

#[tokio::test]
async fn garbage_is_a_malformed_token() {
    let (_idp, bearer) = setup().await;
    for authorization in
        ["Bearer not-a-jwt", "Bearer a.b.c", "Bearer e30.e30.e30", "Bearer", "Bearer x y", "bearer ..."]
    {
        assert_eq!(
            authenticate(&bearer, Some(authorization)).await,
            Err(invalid_token("malformed token")),
            "{authorization}"
        );
    }
}

// ---- key rotation and the refetch rate limit ----------------------------------------------

#[tokio::test]
async fn an_unknown_kid_triggers_a_refetch_then_is_accepted() {
    let idp = Idp::start().await;
    idp.set_keys(&[("old", rsa_key())]);
    let mut config = config(&idp);
    config.jwks_refetch_interval = Duration::ZERO; // this test is about the refetch, not its limit
    let bearer = BearerAuthenticator::new(config).unwrap();
    assert_eq!(bearer.warm_up().await, Ok(1));
    assert_eq!(idp.jwks_fetches(), 1);
    // The issuer rotates: a new key appears. The first token naming it causes one refetch.
    idp.add_key("new", ec_key());
    let principal = with_token(&bearer, &ec_key().sign("new", &good_claims(&idp))).await.unwrap();
    assert_eq!(principal.id, "user-1");
    assert_eq!(idp.jwks_fetches(), 2);
    // Known keys need no fetch.
    assert!(with_token(&bearer, &rsa_key().sign("old", &good_claims(&idp))).await.is_ok());
    assert_eq!(idp.jwks_fetches(), 2);
}

#[tokio::test]
async fn a_second_unknown_kid_inside_the_window_does_not_refetch() {
    let idp = Idp::start().await;
    idp.set_keys(&[(RSA_KID, rsa_key())]);
    let bearer = BearerAuthenticator::new(config(&idp)).unwrap(); // 30 s window
    // First token: the initial fetch.
    assert!(with_token(&bearer, &idp.token(&good_claims(&idp))).await.is_ok());
    assert_eq!(idp.jwks_fetches(), 1);
    // Unknown kid right after: the window forbids a refetch; refused without one.
    idp.add_key("ec-2", ec_key());
    let token = ec_key().sign("ec-2", &good_claims(&idp));
    assert_eq!(with_token(&bearer, &token).await, Err(invalid_token("unknown signing key")));
    assert_eq!(
        with_token(&bearer, &ec_key().sign("made-up", &good_claims(&idp))).await,
        Err(invalid_token("unknown signing key"))
    );
    assert_eq!(idp.jwks_fetches(), 1);
    assert_eq!(bearer.jwks_fetches(), 1);
}

/// Move the clock past the 300 ms refetch window at once: paused only while it moves, so the
/// JWKS fetches (real HTTP, with their own timeouts) run in real time.
async fn past_the_window() {
    tokio::time::pause();
    tokio::time::advance(Duration::from_millis(350)).await;
    tokio::time::resume();
}

#[tokio::test]
async fn refetch_then_accept_then_the_window_holds() {
    let idp = Idp::start().await;
    idp.set_keys(&[(RSA_KID, rsa_key())]);
    let mut config = config(&idp);
    config.jwks_refetch_interval = Duration::from_millis(300);
    let bearer = BearerAuthenticator::new(config).unwrap();
    assert!(with_token(&bearer, &idp.token(&good_claims(&idp))).await.is_ok());
    past_the_window().await;
    // Rotation: unknown kid → refetch → accepted.
    idp.add_key("ec-2", ec_key());
    assert!(with_token(&bearer, &ec_key().sign("ec-2", &good_claims(&idp))).await.is_ok());
    assert_eq!(idp.jwks_fetches(), 2);
    // A second unknown kid inside the window: no refetch.
    let unknown = ec_key().sign("ec-3", &good_claims(&idp));
    assert_eq!(with_token(&bearer, &unknown).await, Err(invalid_token("unknown signing key")));
    assert_eq!(idp.jwks_fetches(), 2);
    // After the window, one more refetch is allowed (and the kid is still unknown).
    past_the_window().await;
    assert_eq!(with_token(&bearer, &unknown).await, Err(invalid_token("unknown signing key")));
    assert_eq!(idp.jwks_fetches(), 3);
}

#[tokio::test]
async fn concurrent_misses_share_one_fetch() {
    let idp = Idp::start().await;
    idp.set_delay(Duration::from_millis(200));
    let bearer = BearerAuthenticator::new(config(&idp)).unwrap();
    let token = ec_key().sign(EC_KID, &good_claims(&idp));
    let verifications = (0..20).map(|_| {
        let (bearer, token) = (bearer.clone(), token.clone());
        tokio::spawn(async move { with_token(&bearer, &token).await })
    });
    for verification in futures_util::future::join_all(verifications).await {
        assert!(verification.unwrap().is_ok());
    }
    assert_eq!(idp.jwks_fetches(), 1);
}

#[tokio::test]
async fn unreachable_keys_are_reported_and_rate_limited() {
    let idp = Idp::start().await;
    idp.withdraw(JWKS_PATH); // 404
    let bearer = BearerAuthenticator::new(config(&idp)).unwrap();
    let token = idp.token(&good_claims(&idp));
    assert_eq!(with_token(&bearer, &token).await, Err(invalid_token("signing keys unavailable")));
    assert_eq!(with_token(&bearer, &token).await, Err(invalid_token("signing keys unavailable")));
    assert_eq!(idp.jwks_fetches(), 1, "a failed fetch counts against the window too");
}

// ---- discovery ----------------------------------------------------------------------------

fn discovered_config(idp: &Idp) -> BearerConfig {
    let mut config = config(idp);
    config.jwks_url = None;
    config
}

#[tokio::test]
async fn the_jwks_url_is_discovered_from_the_oauth_metadata() {
    let idp = Idp::start().await;
    idp.set_keys(&[(RSA_KID, rsa_key())]);
    let bearer = BearerAuthenticator::new(discovered_config(&idp)).unwrap();
    assert!(with_token(&bearer, &idp.token(&good_claims(&idp))).await.is_ok());
    assert_eq!(idp.hits(METADATA_PATH), 1);
    assert_eq!(idp.hits("/.well-known/openid-configuration"), 0);
    assert_eq!(idp.jwks_fetches(), 1);
}

#[tokio::test]
async fn discovery_falls_back_to_openid_configuration() {
    let idp = Idp::start().await;
    idp.set_keys(&[(RSA_KID, rsa_key())]);
    idp.withdraw(METADATA_PATH);
    idp.serve("/.well-known/openid-configuration", json!({"issuer": idp.issuer(), "jwks_uri": idp.jwks_url()}));
    let bearer = BearerAuthenticator::new(discovered_config(&idp)).unwrap();
    assert_eq!(bearer.warm_up().await, Ok(1));
    assert_eq!(idp.hits(METADATA_PATH), 1);
    assert_eq!(idp.hits("/.well-known/openid-configuration"), 1);
}

#[tokio::test]
async fn discovery_with_an_issuer_path_inserts_the_well_known_segment() {
    let idp = Idp::start().await;
    idp.set_keys(&[(RSA_KID, rsa_key())]);
    let issuer = idp.url("/tenant1");
    idp.serve("/.well-known/oauth-authorization-server/tenant1", json!({"issuer": issuer, "jwks_uri": idp.jwks_url()}));
    let mut config = discovered_config(&idp);
    config.issuer = issuer.clone();
    let bearer = BearerAuthenticator::new(config).unwrap();
    let mut claims = good_claims(&idp);
    claims["iss"] = json!(issuer);
    assert!(with_token(&bearer, &idp.token(&claims)).await.is_ok());
}

#[tokio::test]
async fn metadata_for_another_issuer_is_not_used() {
    let idp = Idp::start().await;
    idp.set_keys(&[(RSA_KID, rsa_key())]);
    idp.serve(METADATA_PATH, json!({"issuer": "https://honest.example", "jwks_uri": idp.jwks_url()}));
    let bearer = BearerAuthenticator::new(discovered_config(&idp)).unwrap();
    assert!(bearer.warm_up().await.is_err());
    assert_eq!(idp.jwks_fetches(), 0);
    let token = idp.token(&good_claims(&idp));
    assert_eq!(with_token(&bearer, &token).await, Err(invalid_token("signing keys unavailable")));
}

// ---- the verified-token cache -------------------------------------------------------------

#[tokio::test]
async fn a_remembered_token_stops_being_trusted_when_a_refetch_drops_its_key() {
    let idp = Idp::start().await;
    idp.set_keys(&[(RSA_KID, rsa_key())]);
    let mut config = config(&idp);
    config.jwks_refetch_interval = Duration::from_millis(300);
    let bearer = BearerAuthenticator::new(config).unwrap();
    let token = idp.token(&good_claims(&idp));
    for _ in 0..3 {
        assert!(with_token(&bearer, &token).await.is_ok(), "verified once, then remembered");
    }
    assert_eq!(idp.jwks_fetches(), 1);
    // The issuer withdraws the key. Until this node refetches, it trusts the keys it holds —
    // remembered or not, the same answer.
    idp.set_keys(&[("ec-2", ec_key())]);
    assert!(with_token(&bearer, &token).await.is_ok());
    // A token naming the new key makes it refetch: the key set changes, and the remembered
    // token is verified again — against keys that no longer hold its key.
    past_the_window().await;
    assert!(with_token(&bearer, &ec_key().sign("ec-2", &good_claims(&idp))).await.is_ok());
    assert_eq!(idp.jwks_fetches(), 2);
    assert_eq!(with_token(&bearer, &token).await, Err(invalid_token("unknown signing key")));
}

#[tokio::test]
async fn a_remembered_token_expires_with_its_exp() {
    let idp = Idp::start().await;
    let mut config = config(&idp);
    config.leeway = Duration::ZERO;
    let bearer = BearerAuthenticator::new(config).unwrap();
    let mut claims = good_claims(&idp);
    claims["exp"] = json!(now() + 1);
    let token = idp.token(&claims);
    assert!(with_token(&bearer, &token).await.is_ok());
    tokio::time::sleep(Duration::from_millis(2100)).await;
    assert_eq!(with_token(&bearer, &token).await, Err(invalid_token("token expired")));
}

#[tokio::test]
async fn without_the_cache_every_request_is_verified_the_same() {
    let idp = Idp::start().await;
    let mut config = config(&idp);
    config.verified_token_cache = 0;
    let bearer = BearerAuthenticator::new(config).unwrap();
    let token = idp.token(&good_claims(&idp));
    assert_eq!(with_token(&bearer, &token).await.unwrap().id, "user-1");
    assert_eq!(with_token(&bearer, &token).await.unwrap().tenant.as_deref(), Some("acme"));
}
