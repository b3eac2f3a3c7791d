//! A test identity provider: an OAuth authorization server as far as a resource server sees
//! one. It serves, over HTTP on 127.0.0.1, a JWKS at [`JWKS_PATH`] and RFC 8414 metadata at
//! [`METADATA_PATH`] (`issuer`, `jwks_uri`), counts every fetch by path, and mints JWT access
//! tokens signed with its keys. It issues no tokens over HTTP: tests sign them directly.
//!
//! Its standard keys, an RSA 2048 key (`kid` [`RSA_KID`], RS256) and a P-256 key ([`EC_KID`],
//! ES256), are generated once per test process ([`rsa_key`], [`ec_key`]) and shared by every
//! `Idp`; rotating in a key the server has not seen yet is [`Idp::add_key`] with
//! [`SigningKey::generate_ec`] (or `generate_rsa`, slower) under a new `kid`.
//!
//! ```no_run
//! # async fn run() {
//! use mcp_fleet_oauth::BearerAuthenticator;
//! use mcp_fleet_server::HandlerOptions;
//! use mcp_fleet_tests::idp::Idp;
//! let idp = Idp::start().await;
//! let audience = "http://127.0.0.1:8080/mcp";
//! let bearer = BearerAuthenticator::new(idp.bearer_config(audience)).unwrap();
//! let options = bearer.install(HandlerOptions::default()).unwrap();
//! let token = idp.token(&idp.claims(audience, "alice", "mcp:use", Some("acme")));
//! // send it as `Authorization: Bearer {token}`
//! # let _ = (options, token); }
//! ```

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
use mcp_fleet_oauth::BearerConfig;
use serde_json::{Value, json};

/// Where the JWKS is served.
pub const JWKS_PATH: &str = "/jwks";
/// Where the RFC 8414 authorization-server metadata is served.
pub const METADATA_PATH: &str = "/.well-known/oauth-authorization-server";
/// The `kid` of the standard RSA key in the served JWKS.
pub const RSA_KID: &str = "rsa-1";
/// The `kid` of the standard P-256 key in the served JWKS.
pub const EC_KID: &str = "ec-1";
/// The claim [`Idp::claims`] puts the tenant in; set `BearerConfig::tenant_claim` to it.
pub const TENANT_CLAIM: &str = "tenant";

// ---- keys -------------------------------------------------------------------------------

/// A private signing key, its algorithm and its public JWK.
pub struct SigningKey {
    encoding: EncodingKey,
    alg: Algorithm,
    jwk: Jwk,
}

impl SigningKey {
    /// A fresh RSA 2048 key for RS256 (takes a moment: prefer [`rsa_key`] when any RSA key will do).
    pub fn generate_rsa() -> SigningKey {
        use rsa::pkcs1::EncodeRsaPrivateKey;
        let private = rsa::PrivateKey::new(&mut SysRng, 2048).expect("RSA key generation");
        let der = private.to_pkcs1_der().expect("RSA key as DER");
        Self::from_encoding(EncodingKey::from_rsa_der(der.as_bytes()), Algorithm::RS256)
    }

    /// A fresh P-256 key for ES256.
    pub fn generate_ec() -> SigningKey {
        use p256::elliptic_curve::Generate;
        use p256::pkcs8::EncodePrivateKey;
        let der = p256::ecdsa::SigningKey::generate().to_pkcs8_der().expect("P-256 key as DER");
        Self::from_encoding(EncodingKey::from_ec_der(der.as_bytes()), Algorithm::ES256)
    }

    fn from_encoding(encoding: EncodingKey, alg: Algorithm) -> SigningKey {
        let jwk = Jwk::from_encoding_key(&encoding, alg).expect("public JWK");
        SigningKey { encoding, alg, jwk }
    }

    /// The algorithm it signs with (RS256 or ES256).
    pub fn alg(&self) -> Algorithm {
        self.alg
    }

    /// The public key as a JWK named `kid`, as a JWKS lists it.
    pub fn jwk(&self, kid: &str) -> Value {
        let mut jwk = self.jwk.clone();
        jwk.common.key_id = Some(kid.to_owned());
        serde_json::to_value(jwk).expect("JWK as JSON")
    }

    /// A compact JWS of `claims` signed with this key, its header naming `kid`.
    pub fn sign(&self, kid: &str, claims: &Value) -> String {
        let mut header = Header::new(self.alg);
        header.kid = Some(kid.to_owned());
        self.sign_with_header(&header, claims)
    }

    /// A compact JWS with exactly `header`, whose `alg` may be any of this key's family
    /// (RS384 with the RSA key, say).
    pub fn sign_with_header(&self, header: &Header, claims: &Value) -> String {
        jsonwebtoken::encode(header, claims, &self.encoding).expect("sign")
    }
}

/// The process-wide RSA 2048 key the IdP serves as [`RSA_KID`].
pub fn rsa_key() -> &'static SigningKey {
    static KEY: LazyLock<SigningKey> = LazyLock::new(SigningKey::generate_rsa);
    &KEY
}

/// The process-wide P-256 key the IdP serves as [`EC_KID`].
pub fn ec_key() -> &'static SigningKey {
    static KEY: LazyLock<SigningKey> = LazyLock::new(SigningKey::generate_ec);
    &KEY
}

/// The OS random source, for `rsa`'s key generation (its `rand_core` is not `rand`'s).
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
        let mut urandom = std::fs::File::open("/dev/urandom").expect("/dev/urandom");
        std::io::Read::read_exact(&mut urandom, dest).expect("read /dev/urandom");
        Ok(())
    }
}

impl rsa::rand_core::TryCryptoRng for SysRng {}

// ---- tokens -------------------------------------------------------------------------------

/// Seconds since the Unix epoch, as JWT `exp`/`nbf`/`iat` count them.
pub fn now() -> i64 {
    let secs = SystemTime::now().duration_since(UNIX_EPOCH).expect("clock after 1970").as_secs();
    i64::try_from(secs).expect("seconds fit in i64")
}

/// The `Authorization: Bearer <token>` header, as [`McpClient`](crate::McpClient) takes headers.
pub fn authorization(token: &str) -> (String, String) {
    ("authorization".to_owned(), format!("Bearer {token}"))
}

/// A token with exactly this `header` and `signature` (base64url-encoded here), for tokens no
/// library would sign: `alg: none`, a forged signature.
pub fn forge(header: &Value, claims: &Value, signature: &[u8]) -> String {
    let enc = |v: &Value| URL_SAFE_NO_PAD.encode(v.to_string());
    format!("{}.{}.{}", enc(header), enc(claims), URL_SAFE_NO_PAD.encode(signature))
}

// ---- the identity provider ----------------------------------------------------------------

/// A running identity provider (see the module docs). Its serving task lives as long as the
/// test's runtime.
pub struct Idp {
    addr: SocketAddr,
    state: Arc<State>,
}

/// Documents served by path, with a fetch count per path.
#[derive(Default)]
struct State {
    /// std mutexes: each critical section is a map lookup, never held across `.await`.
    documents: Mutex<HashMap<String, Value>>,
    hits: Mutex<HashMap<String, usize>>,
    /// Added before every answer (default zero), to make concurrent fetches overlap.
    delay: Mutex<Duration>,
}

impl Idp {
    /// Start serving on an ephemeral 127.0.0.1 port: the JWKS with [`rsa_key`] as
    /// [`RSA_KID`] and [`ec_key`] as [`EC_KID`], and the metadata naming the issuer and
    /// `jwks_uri`.
    pub async fn start() -> Idp {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind the IdP");
        let addr = listener.local_addr().expect("IdP address");
        let state = Arc::new(State::default());
        tokio::spawn(accept(listener, state.clone()));
        let idp = Idp { addr, state };
        idp.set_keys(&[(RSA_KID, rsa_key()), (EC_KID, ec_key())]);
        idp.serve(METADATA_PATH, json!({"issuer": idp.issuer(), "jwks_uri": idp.jwks_url()}));
        idp
    }

    /// The issuer identifier: `http://127.0.0.1:<port>` (tokens' `iss`).
    pub fn issuer(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The absolute URL of `path` on the IdP.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// The JWKS URL (`jwks_uri`).
    pub fn jwks_url(&self) -> String {
        self.url(JWKS_PATH)
    }

    /// A configuration accepting this IdP's tokens for `audience`, the JWKS URL given (no
    /// discovery) and a 2 s fetch timeout; every other field at its default.
    pub fn bearer_config(&self, audience: &str) -> BearerConfig {
        let mut config = BearerConfig::new(self.issuer(), audience).expect("bearer config");
        config.jwks_url = Some(self.jwks_url());
        config.http_timeout = Duration::from_secs(2);
        config
    }

    /// Claims that pass every check for `audience`: `iss`, `aud`, `sub`, `exp` (in 5 min),
    /// `nbf` and `iat` (now), `scope` (space-separated) and, if given, the tenant in
    /// [`TENANT_CLAIM`]. Edit the returned object to break one check.
    pub fn claims(&self, audience: &str, subject: &str, scope: &str, tenant: Option<&str>) -> Value {
        let mut claims = json!({
            "iss": self.issuer(),
            "aud": audience,
            "sub": subject,
            "exp": now() + 300,
            "nbf": now(),
            "iat": now(),
            "scope": scope,
        });
        if let Some(tenant) = tenant {
            claims[TENANT_CLAIM] = json!(tenant);
        }
        claims
    }

    /// `claims` signed with the standard RSA key ([`RSA_KID`]).
    pub fn token(&self, claims: &Value) -> String {
        rsa_key().sign(RSA_KID, claims)
    }

    /// Serve exactly these keys in the JWKS, replacing what it held.
    pub fn set_keys(&self, keys: &[(&str, &SigningKey)]) {
        let keys: Vec<Value> = keys.iter().map(|(kid, key)| key.jwk(kid)).collect();
        self.serve(JWKS_PATH, json!({ "keys": keys }));
    }

    /// Add `key` as `kid` to the served JWKS (a key rotation), keeping the others.
    pub fn add_key(&self, kid: &str, key: &SigningKey) {
        let mut documents = self.state.documents.lock().expect("documents");
        let jwks = documents.entry(JWKS_PATH.to_owned()).or_insert_with(|| json!({"keys": []}));
        jwks["keys"].as_array_mut().expect("JWKS keys array").push(key.jwk(kid));
    }

    /// Serve `document` as JSON at `path` (replacing any other).
    pub fn serve(&self, path: &str, document: Value) {
        self.state.documents.lock().expect("documents").insert(path.to_owned(), document);
    }

    /// Stop serving `path` (it answers 404 from now on).
    pub fn withdraw(&self, path: &str) {
        self.state.documents.lock().expect("documents").remove(path);
    }

    /// Requests for `path` so far, answered or not.
    pub fn hits(&self, path: &str) -> usize {
        self.state.hits.lock().expect("hits").get(path).copied().unwrap_or(0)
    }

    /// Requests for the JWKS so far.
    pub fn jwks_fetches(&self) -> usize {
        self.hits(JWKS_PATH)
    }

    /// Wait this long before every answer from now on (default zero).
    pub fn set_delay(&self, delay: Duration) {
        *self.state.delay.lock().expect("delay") = delay;
    }
}

/// Accept connections until the runtime ends, serving each over HTTP/1.1.
async fn accept(listener: tokio::net::TcpListener, state: Arc<State>) {
    while let Ok((stream, _)) = listener.accept().await {
        let state = state.clone();
        let service = service_fn(move |req: Request<Incoming>| {
            let state = state.clone();
            async move { Ok::<_, Infallible>(state.answer(req.uri().path()).await) }
        });
        tokio::spawn(hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(stream), service));
    }
}

impl State {
    async fn answer(&self, path: &str) -> Response<Full<Bytes>> {
        *self.hits.lock().expect("hits").entry(path.to_owned()).or_default() += 1;
        let delay = *self.delay.lock().expect("delay");
        tokio::time::sleep(delay).await;
        let document = self.documents.lock().expect("documents").get(path).cloned();
        let (status, body) = match document {
            Some(doc) => (StatusCode::OK, Bytes::from(doc.to_string())),
            None => (StatusCode::NOT_FOUND, Bytes::from_static(b"not found")),
        };
        let content_type = if status == StatusCode::OK { "application/json" } else { "text/plain" };
        Response::builder()
            .status(status)
            .header(http::header::CONTENT_TYPE, content_type)
            .body(Full::new(body))
            .expect("response")
    }
}
