//! The bearer authenticator against an identity provider served by the test over HTTP on
//! 127.0.0.1: keys generated here (RSA 2048 and P-256), a JWKS and metadata documents whose
//! fetches are counted. Each refusal is checked for its status and its exact
//! `WWW-Authenticate` header.

#![allow(clippy::unwrap_used)] // in a test, a panic at the failing line is the report we want

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, LazyLock, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use jsonwebtoken::jwk::Jwk;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use mcp_fleet_server::{AuthError, Authenticator, BearerAuthenticator, BearerConfig, Principal};
use serde_json::{Value, json};

const AUDIENCE: &str = "https://mcp.example.com/mcp";
const METADATA_URL: &str = "https://mcp.example.com/.well-known/oauth-protected-resource/mcp";

// ---- keys -------------------------------------------------------------------------------

/// A signing key and its public JWK.
struct Key {
    encoding: EncodingKey,
    alg: Algorithm,
    jwk: Jwk,
}

impl Key {
    fn jwk(&self, kid: &str) -> Value {
        let mut jwk = self.jwk.clone();
        jwk.common.key_id = Some(kid.to_owned());
        serde_json::to_value(jwk).unwrap()
    }
}

fn rsa_key() -> Key {
    use rsa::pkcs1::EncodeRsaPrivateKey;
    let private = rsa::PrivateKey::new(&mut SysRng, 2048).unwrap();
    let der = private.to_pkcs1_der().unwrap();
    let encoding = EncodingKey::from_rsa_der(der.as_bytes());
    let jwk = Jwk::from_encoding_key(&encoding, Algorithm::RS256).unwrap();
    Key { encoding, alg: Algorithm::RS256, jwk }
}

fn ec_key() -> Key {
    use p256::elliptic_curve::Generate;
    use p256::pkcs8::EncodePrivateKey;
    let der = p256::ecdsa::SigningKey::generate().to_pkcs8_der().unwrap();
    let encoding = EncodingKey::from_ec_der(der.as_bytes());
    let jwk = Jwk::from_encoding_key(&encoding, Algorithm::ES256).unwrap();
    Key { encoding, alg: Algorithm::ES256, jwk }
}

/// The OS random source, for `rsa`'s key generation.
struct SysRng;

impl rsa::rand_core::TryRng for SysRng {
    type Error = Infallible;
    fn try_next_u32(&mut self) -> Result<u32, Infallible> {
        let mut b = [0; 4];
        self.try_fill_bytes(&mut b)?;
        Ok(u32::from_le_bytes(b))
    }
    fn try_next_u64(&mut self) -> Result<u64, Infallible> {
        let mut b = [0; 8];
        self.try_fill_bytes(&mut b)?;
        Ok(u64::from_le_bytes(b))
    }
    fn try_fill_bytes(&mut self, dest: &mut [u8]) -> Result<(), Infallible> {
        std::io::Read::read_exact(&mut std::fs::File::open("/dev/urandom").unwrap(), dest).unwrap();
        Ok(())
    }
}

impl rsa::rand_core::TryCryptoRng for SysRng {}

static RSA: LazyLock<Key> = LazyLock::new(rsa_key);
static RSA_OTHER: LazyLock<Key> = LazyLock::new(rsa_key);
static EC: LazyLock<Key> = LazyLock::new(ec_key);

// ---- the identity provider ----------------------------------------------------------------

/// Documents served by path, with a hit count per path.
#[derive(Default)]
struct IdpState {
    documents: Mutex<HashMap<String, Value>>,
    hits: Mutex<HashMap<String, usize>>,
    delay: Mutex<Duration>,
}

struct Idp {
    addr: SocketAddr,
    state: Arc<IdpState>,
}

impl Idp {
    async fn start() -> Idp {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let state = Arc::new(IdpState::default());
        let served = state.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let state = served.clone();
                let service = service_fn(move |req: Request<Incoming>| {
                    let state = state.clone();
                    async move { Ok::<_, Infallible>(state.answer(req.uri().path()).await) }
                });
                tokio::spawn(
                    hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(stream), service),
                );
            }
        });
        Idp { addr, state }
    }

    fn issuer(&self) -> String {
        format!("http://{}", self.addr)
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    fn serve(&self, path: &str, document: Value) {
        self.state.documents.lock().unwrap().insert(path.to_owned(), document);
    }

    fn serve_keys(&self, keys: &[Value]) {
        self.serve("/jwks.json", json!({ "keys": keys }));
    }

    fn hits(&self, path: &str) -> usize {
        self.state.hits.lock().unwrap().get(path).copied().unwrap_or(0)
    }
}

impl IdpState {
    async fn answer(&self, path: &str) -> Response<Full<Bytes>> {
        *self.hits.lock().unwrap().entry(path.to_owned()).or_default() += 1;
        let delay = *self.delay.lock().unwrap();
        tokio::time::sleep(delay).await;
        let document = self.documents.lock().unwrap().get(path).cloned();
        match document {
            Some(doc) => Response::new(Full::new(Bytes::from(doc.to_string()))),
            None => {
                let mut not_found = Response::new(Full::new(Bytes::from_static(b"not found")));
                *not_found.status_mut() = StatusCode::NOT_FOUND;
                not_found
            }
        }
    }
}

// ---- tokens and requests ------------------------------------------------------------------

fn now() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs() as i64
}

/// Claims of a token that passes every check (with tenant claim `org.id`).
fn good_claims(issuer: &str) -> Value {
    json!({
        "iss": issuer,
        "aud": AUDIENCE,
        "sub": "user-1",
        "exp": now() + 300,
        "iat": now(),
        "scope": "mcp:use files:read",
        "org": {"id": "acme"},
    })
}

fn sign(key: &Key, kid: &str, claims: &Value) -> String {
    let mut header = Header::new(key.alg);
    header.kid = Some(kid.to_owned());
    jsonwebtoken::encode(&header, claims, &key.encoding).unwrap()
}

/// A token whose header is `header` and whose signature is `signature`, built by hand.
fn forged(header: &Value, claims: &Value, signature: &[u8]) -> String {
    let enc = |v: &Value| URL_SAFE_NO_PAD.encode(v.to_string());
    format!("{}.{}.{}", enc(header), enc(claims), URL_SAFE_NO_PAD.encode(signature))
}

fn config(idp: &Idp) -> BearerConfig {
    let mut config =
        BearerConfig::from_flags(&idp.issuer(), AUDIENCE, Some(&idp.url("/jwks.json")), Some("org.id"), "mcp:use")
            .unwrap();
    config.http_timeout = Duration::from_secs(2);
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
    idp.serve_keys(&[RSA.jwk("rsa-1"), EC.jwk("ec-1")]);
    let bearer = BearerAuthenticator::new(config(&idp)).unwrap();
    (idp, bearer)
}

// ---- accepted tokens ----------------------------------------------------------------------

#[tokio::test]
async fn a_valid_token_gives_the_principal_with_its_scopes_and_tenant() {
    let (idp, bearer) = setup().await;
    let principal = with_token(&bearer, &sign(&RSA, "rsa-1", &good_claims(&idp.issuer()))).await.unwrap();
    assert_eq!(principal, Principal::new("user-1", Some("acme".into())).with_scopes(["mcp:use", "files:read"]));
    let es256 = with_token(&bearer, &sign(&EC, "ec-1", &good_claims(&idp.issuer()))).await.unwrap();
    assert_eq!(es256.id, "user-1");
    assert_eq!(idp.hits("/jwks.json"), 1, "keys are cached");
}

#[tokio::test]
async fn audience_may_be_a_list_and_scopes_may_be_scp() {
    let (idp, bearer) = setup().await;
    let mut claims = good_claims(&idp.issuer());
    claims["aud"] = json!(["https://other.example.com", AUDIENCE]);
    claims.as_object_mut().unwrap().remove("scope");
    claims["scp"] = json!(["mcp:use"]);
    let principal = with_token(&bearer, &sign(&RSA, "rsa-1", &claims)).await.unwrap();
    assert_eq!(principal.scopes, ["mcp:use"]);
}

#[tokio::test]
async fn clock_skew_within_the_leeway_is_tolerated() {
    let (idp, bearer) = setup().await;
    let mut claims = good_claims(&idp.issuer());
    claims["exp"] = json!(now() - 30);
    claims["nbf"] = json!(now() + 30);
    assert!(with_token(&bearer, &sign(&RSA, "rsa-1", &claims)).await.is_ok());
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
    let mut expired = good_claims(&idp.issuer());
    expired["exp"] = json!(now() - 120);
    let err = with_token(&bearer, &sign(&RSA, "rsa-1", &expired)).await.unwrap_err();
    assert_eq!(err, invalid_token("token expired"));
    assert_eq!(err.status(), StatusCode::UNAUTHORIZED);

    let mut early = good_claims(&idp.issuer());
    early["nbf"] = json!(now() + 300);
    assert_eq!(with_token(&bearer, &sign(&RSA, "rsa-1", &early)).await, Err(invalid_token("token not yet valid")));
}

#[tokio::test]
async fn wrong_issuer_and_wrong_audience() {
    let (idp, bearer) = setup().await;
    let mut issuer = good_claims(&idp.issuer());
    issuer["iss"] = json!("https://evil.example.com");
    assert_eq!(with_token(&bearer, &sign(&RSA, "rsa-1", &issuer)).await, Err(invalid_token("wrong issuer")));

    let mut audience = good_claims(&idp.issuer());
    audience["aud"] = json!("https://other-mcp.example.com/mcp");
    assert_eq!(with_token(&bearer, &sign(&RSA, "rsa-1", &audience)).await, Err(invalid_token("wrong audience")));

    let mut no_audience = good_claims(&idp.issuer());
    no_audience.as_object_mut().unwrap().remove("aud");
    assert_eq!(with_token(&bearer, &sign(&RSA, "rsa-1", &no_audience)).await, Err(invalid_token("missing claim: aud")));
}

#[tokio::test]
async fn missing_sub_and_missing_tenant() {
    let (idp, bearer) = setup().await;
    let mut no_sub = good_claims(&idp.issuer());
    no_sub.as_object_mut().unwrap().remove("sub");
    assert_eq!(with_token(&bearer, &sign(&RSA, "rsa-1", &no_sub)).await, Err(invalid_token("missing claim: sub")));

    let mut no_tenant = good_claims(&idp.issuer());
    no_tenant["org"] = json!({"name": "acme"});
    assert_eq!(with_token(&bearer, &sign(&RSA, "rsa-1", &no_tenant)).await, Err(invalid_token("missing tenant claim")));
}

#[tokio::test]
async fn insufficient_scope_is_a_403_naming_every_required_scope() {
    let idp = Idp::start().await;
    idp.serve_keys(&[RSA.jwk("rsa-1")]);
    let mut config = config(&idp);
    config.required_scopes = vec!["mcp:use".into(), "mcp:admin".into()];
    let bearer = BearerAuthenticator::new(config).unwrap();
    let err = with_token(&bearer, &sign(&RSA, "rsa-1", &good_claims(&idp.issuer()))).await.unwrap_err();
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
    let token = forged(&json!({"alg": "none", "kid": "rsa-1"}), &good_claims(&idp.issuer()), b"");
    assert_eq!(with_token(&bearer, &token).await, Err(invalid_token("algorithm not allowed")));
    let token = forged(&json!({"alg": "none"}), &good_claims(&idp.issuer()), b"");
    assert_eq!(with_token(&bearer, &token).await, Err(invalid_token("algorithm not allowed")));
}

#[tokio::test]
async fn hs256_signed_with_the_rsa_public_key_is_refused() {
    let (idp, bearer) = setup().await;
    // The classic confusion: the public key (as the JWK's bytes, and as its DER modulus) used
    // as an HMAC secret.
    for secret in [RSA.jwk("rsa-1").to_string().into_bytes(), URL_SAFE_NO_PAD.decode(rsa_modulus()).unwrap()] {
        let mut header = Header::new(Algorithm::HS256);
        header.kid = Some("rsa-1".into());
        let token =
            jsonwebtoken::encode(&header, &good_claims(&idp.issuer()), &EncodingKey::from_secret(&secret).unwrap())
                .unwrap();
        assert_eq!(with_token(&bearer, &token).await, Err(invalid_token("algorithm not allowed")));
    }
    assert_eq!(idp.hits("/jwks.json"), 0, "refused before any key is looked up");
}

fn rsa_modulus() -> String {
    RSA.jwk("rsa-1")["n"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn a_key_is_used_only_for_its_own_algorithm() {
    let (idp, bearer) = setup().await;
    // ES256 token naming the RSA key's kid.
    let token = sign(&EC, "rsa-1", &good_claims(&idp.issuer()));
    assert_eq!(with_token(&bearer, &token).await, Err(invalid_token("signing key does not match the algorithm")));
    // RS384 is not in the allowed list (RS256, ES256) even though the key could verify it.
    let mut header = Header::new(Algorithm::RS384);
    header.kid = Some("rsa-1".into());
    let token = jsonwebtoken::encode(&header, &good_claims(&idp.issuer()), &RSA.encoding).unwrap();
    assert_eq!(with_token(&bearer, &token).await, Err(invalid_token("algorithm not allowed")));
}

#[tokio::test]
async fn a_bad_signature_is_refused() {
    let (idp, bearer) = setup().await;
    let token = sign(&RSA_OTHER, "rsa-1", &good_claims(&idp.issuer()));
    assert_eq!(with_token(&bearer, &token).await, Err(invalid_token("invalid signature")));
    // A valid token with its claims swapped.
    let good = sign(&RSA, "rsa-1", &good_claims(&idp.issuer()));
    let mut claims = good_claims(&idp.issuer());
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
    idp.serve_keys(&[RSA.jwk("old")]);
    let mut config = config(&idp);
    config.jwks_refetch_interval = Duration::ZERO; // this test is about the refetch, not its limit
    let bearer = BearerAuthenticator::new(config).unwrap();
    assert_eq!(bearer.warm_up().await, Ok(1));
    assert_eq!(idp.hits("/jwks.json"), 1);
    // The issuer rotates: a new key appears. The first token naming it causes one refetch.
    idp.serve_keys(&[RSA.jwk("old"), EC.jwk("new")]);
    let principal = with_token(&bearer, &sign(&EC, "new", &good_claims(&idp.issuer()))).await.unwrap();
    assert_eq!(principal.id, "user-1");
    assert_eq!(idp.hits("/jwks.json"), 2);
    // Known keys need no fetch.
    assert!(with_token(&bearer, &sign(&RSA, "old", &good_claims(&idp.issuer()))).await.is_ok());
    assert_eq!(idp.hits("/jwks.json"), 2);
}

#[tokio::test]
async fn a_second_unknown_kid_inside_the_window_does_not_refetch() {
    let idp = Idp::start().await;
    idp.serve_keys(&[RSA.jwk("rsa-1")]);
    let bearer = BearerAuthenticator::new(config(&idp)).unwrap(); // 30 s window
    // First token: the initial fetch.
    assert!(with_token(&bearer, &sign(&RSA, "rsa-1", &good_claims(&idp.issuer()))).await.is_ok());
    assert_eq!(idp.hits("/jwks.json"), 1);
    // Unknown kid right after: the window forbids a refetch; refused without one.
    idp.serve_keys(&[RSA.jwk("rsa-1"), EC.jwk("ec-2")]);
    let token = sign(&EC, "ec-2", &good_claims(&idp.issuer()));
    assert_eq!(with_token(&bearer, &token).await, Err(invalid_token("unknown signing key")));
    assert_eq!(
        with_token(&bearer, &sign(&EC, "made-up", &good_claims(&idp.issuer()))).await,
        Err(invalid_token("unknown signing key"))
    );
    assert_eq!(idp.hits("/jwks.json"), 1);
    assert_eq!(bearer.jwks_fetches(), 1);
}

#[tokio::test]
async fn refetch_then_accept_then_the_window_holds() {
    let idp = Idp::start().await;
    idp.serve_keys(&[RSA.jwk("rsa-1")]);
    let mut config = config(&idp);
    config.jwks_refetch_interval = Duration::from_millis(300);
    let bearer = BearerAuthenticator::new(config).unwrap();
    assert!(with_token(&bearer, &sign(&RSA, "rsa-1", &good_claims(&idp.issuer()))).await.is_ok());
    tokio::time::sleep(Duration::from_millis(350)).await;
    // Rotation: unknown kid → refetch → accepted.
    idp.serve_keys(&[RSA.jwk("rsa-1"), EC.jwk("ec-2")]);
    assert!(with_token(&bearer, &sign(&EC, "ec-2", &good_claims(&idp.issuer()))).await.is_ok());
    assert_eq!(idp.hits("/jwks.json"), 2);
    // A second unknown kid inside the window: no refetch.
    let unknown = sign(&EC, "ec-3", &good_claims(&idp.issuer()));
    assert_eq!(with_token(&bearer, &unknown).await, Err(invalid_token("unknown signing key")));
    assert_eq!(idp.hits("/jwks.json"), 2);
    // After the window, one more refetch is allowed (and the kid is still unknown).
    tokio::time::sleep(Duration::from_millis(350)).await;
    assert_eq!(with_token(&bearer, &unknown).await, Err(invalid_token("unknown signing key")));
    assert_eq!(idp.hits("/jwks.json"), 3);
}

#[tokio::test]
async fn concurrent_misses_share_one_fetch() {
    let idp = Idp::start().await;
    idp.serve_keys(&[RSA.jwk("rsa-1"), EC.jwk("ec-1")]);
    *idp.state.delay.lock().unwrap() = Duration::from_millis(200);
    let bearer = BearerAuthenticator::new(config(&idp)).unwrap();
    let token = sign(&EC, "ec-1", &good_claims(&idp.issuer()));
    let verifications = (0..20).map(|_| {
        let (bearer, token) = (bearer.clone(), token.clone());
        tokio::spawn(async move { with_token(&bearer, &token).await })
    });
    for verification in futures_util::future::join_all(verifications).await {
        assert!(verification.unwrap().is_ok());
    }
    assert_eq!(idp.hits("/jwks.json"), 1);
}

#[tokio::test]
async fn unreachable_keys_are_reported_and_rate_limited() {
    let idp = Idp::start().await; // serves no JWKS: 404
    let bearer = BearerAuthenticator::new(config(&idp)).unwrap();
    let token = sign(&RSA, "rsa-1", &good_claims(&idp.issuer()));
    assert_eq!(with_token(&bearer, &token).await, Err(invalid_token("signing keys unavailable")));
    assert_eq!(with_token(&bearer, &token).await, Err(invalid_token("signing keys unavailable")));
    assert_eq!(idp.hits("/jwks.json"), 1, "a failed fetch counts against the window too");
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
    idp.serve_keys(&[RSA.jwk("rsa-1")]);
    idp.serve(
        "/.well-known/oauth-authorization-server",
        json!({"issuer": idp.issuer(), "jwks_uri": idp.url("/jwks.json")}),
    );
    let bearer = BearerAuthenticator::new(discovered_config(&idp)).unwrap();
    assert!(with_token(&bearer, &sign(&RSA, "rsa-1", &good_claims(&idp.issuer()))).await.is_ok());
    assert_eq!(idp.hits("/.well-known/oauth-authorization-server"), 1);
    assert_eq!(idp.hits("/.well-known/openid-configuration"), 0);
    assert_eq!(idp.hits("/jwks.json"), 1);
}

#[tokio::test]
async fn discovery_falls_back_to_openid_configuration() {
    let idp = Idp::start().await;
    idp.serve_keys(&[RSA.jwk("rsa-1")]);
    idp.serve("/.well-known/openid-configuration", json!({"issuer": idp.issuer(), "jwks_uri": idp.url("/jwks.json")}));
    let bearer = BearerAuthenticator::new(discovered_config(&idp)).unwrap();
    assert_eq!(bearer.warm_up().await, Ok(1));
    assert_eq!(idp.hits("/.well-known/oauth-authorization-server"), 1);
    assert_eq!(idp.hits("/.well-known/openid-configuration"), 1);
}

#[tokio::test]
async fn discovery_with_an_issuer_path_inserts_the_well_known_segment() {
    let idp = Idp::start().await;
    idp.serve_keys(&[RSA.jwk("rsa-1")]);
    let issuer = idp.url("/tenant1");
    idp.serve(
        "/.well-known/oauth-authorization-server/tenant1",
        json!({"issuer": issuer, "jwks_uri": idp.url("/jwks.json")}),
    );
    let mut config = discovered_config(&idp);
    config.issuer = issuer.clone();
    let bearer = BearerAuthenticator::new(config).unwrap();
    let mut claims = good_claims(&issuer);
    claims["iss"] = json!(issuer);
    assert!(with_token(&bearer, &sign(&RSA, "rsa-1", &claims)).await.is_ok());
}

#[tokio::test]
async fn metadata_for_another_issuer_is_not_used() {
    let idp = Idp::start().await;
    idp.serve_keys(&[RSA.jwk("rsa-1")]);
    idp.serve(
        "/.well-known/oauth-authorization-server",
        json!({"issuer": "https://honest.example", "jwks_uri": idp.url("/jwks.json")}),
    );
    let bearer = BearerAuthenticator::new(discovered_config(&idp)).unwrap();
    assert!(bearer.warm_up().await.is_err());
    assert_eq!(idp.hits("/jwks.json"), 0);
    let token = sign(&RSA, "rsa-1", &good_claims(&idp.issuer()));
    assert_eq!(with_token(&bearer, &token).await, Err(invalid_token("signing keys unavailable")));
}
