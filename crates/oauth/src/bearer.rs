//! [`BearerAuthenticator`]: the server as an OAuth 2.1 resource server (MCP authorization,
//! "Token Handling"). It takes JWT access tokens from `Authorization: Bearer …`, verifies them
//! against the issuer's JWKS ([`jwks`](crate::jwks)), checks `iss`, `aud` (RFC 8707: issued
//! for this server), `exp`/`nbf` and the required scopes, and turns the claims into a
//! [`Principal`] — or refuses with the challenge RFC 6750 and RFC 9728 call for.
//!
//! It does not serve the protected-resource metadata (see [`BearerConfig::metadata`] and the
//! server crate's HTTP service; [`BearerAuthenticator::install`] sets both) and does not
//! introspect opaque tokens: access tokens must be JWTs.

mod challenge;
mod claims;
pub(crate) mod config;
mod verified;

use std::sync::Arc;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use http::request::Parts;
use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{DecodingKey, Validation};
use mcp_fleet_server::auth::{AuthError, AuthFuture, Authenticator};
use mcp_fleet_server::{HandlerOptions, Principal};
use serde_json::{Map, Value};

use self::challenge::Challenges;
pub use self::config::{BearerConfig, BearerConfigError, JwsAlgorithm, TokenTypeCheck};
use self::verified::VerifiedTokens;
use crate::jwks::{JwksCache, JwksError, JwksSource, KeyAges, KeyError};

/// Longest token considered (well above any real access token): bounds the work a garbage
/// header can cause.
const MAX_TOKEN_BYTES: usize = 16 * 1024;

/// Why a bearer token was refused. Its `Display` is the `error_description` sent to the
/// client: short, fixed, never a secret or a token fragment.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TokenError {
    /// Not a compact JWS (three base64url parts), or its header or claims are not JSON.
    #[error("malformed token")]
    Malformed,
    /// The header's `typ` says it is not an access token (see [`TokenTypeCheck`]).
    #[error("wrong token type")]
    WrongType,
    /// The `alg` is not one of the configured ones (`none` and `HS*` never are).
    #[error("algorithm not allowed")]
    AlgorithmNotAllowed,
    /// No key with the token's `kid`, even after refetching the JWKS.
    #[error("unknown signing key")]
    UnknownKey,
    /// The key named by `kid` cannot verify the token's algorithm.
    #[error("signing key does not match the algorithm")]
    KeyMismatch,
    /// The issuer's keys could not be fetched.
    #[error("signing keys unavailable")]
    KeysUnavailable,
    /// The signature does not verify.
    #[error("invalid signature")]
    BadSignature,
    /// `exp` is past (beyond the leeway).
    #[error("token expired")]
    Expired,
    /// `nbf` is in the future (beyond the leeway).
    #[error("token not yet valid")]
    NotYetValid,
    /// `iss` is not the configured issuer.
    #[error("wrong issuer")]
    WrongIssuer,
    /// `aud` does not contain this server's resource URL.
    #[error("wrong audience")]
    WrongAudience,
    /// A required claim (`exp`, `iss`, `aud`, `sub`) is missing or not of its type.
    #[error("missing claim: {0}")]
    MissingClaim(&'static str),
    /// The configured tenant claim is missing.
    #[error("missing tenant claim")]
    MissingTenant,
    /// A valid token without every required scope (403).
    #[error("insufficient scope")]
    InsufficientScope,
}

/// Verifies JWT bearer tokens; an [`Authenticator`]. A cheap `Clone` handle around an `Arc`.
///
/// ```
/// use mcp_fleet_oauth::{BearerAuthenticator, BearerConfig};
/// use mcp_fleet_server::HandlerOptions;
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let config = BearerConfig::from_flags(
///     "https://auth.example.com",
///     "https://mcp.example.com/mcp",
///     None,
///     Some("tenant"),
///     "mcp:use",
/// )?;
/// let metadata = config.metadata()?; // served at metadata.well_known_paths()
/// let bearer = BearerAuthenticator::new(config)?;
/// if let Err(error) = bearer.warm_up().await {
///     eprintln!("JWKS not reachable yet ({error}); will retry on the first token");
/// }
/// // What `bearer.install(HandlerOptions::default())` does.
/// let options = HandlerOptions::default().protected_resource(metadata).authenticator(bearer);
/// # let _ = options; Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct BearerAuthenticator {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    config: BearerConfig,
    challenges: Challenges,
    jwks: JwksCache,
    /// Issuer, audience, leeway and required claims; the algorithm is set per token.
    validation: Validation,
    /// Tokens verified already (see `verified`).
    verified: VerifiedTokens,
}

impl BearerAuthenticator {
    /// An authenticator for `config` (validated here). No network access until the first
    /// token or [`warm_up`](Self::warm_up).
    pub fn new(config: BearerConfig) -> Result<Self, BearerConfigError> {
        config.validate()?;
        let source = match &config.jwks_url {
            Some(url) => JwksSource::Url(config::fetchable_url("jwks_url", url)?),
            None => JwksSource::Discover { issuer: config.issuer.clone() },
        };
        let ages = KeyAges { refresh: config.jwks_max_age, hard: config.jwks_hard_max_age };
        let jwks = JwksCache::new(source, http_client(&config)?, config.jwks_refetch_interval, ages);
        Ok(BearerAuthenticator {
            inner: Arc::new(Inner {
                challenges: Challenges::new(&config.resource_metadata_url, &config.required_scopes),
                validation: validation(&config),
                verified: VerifiedTokens::new(config.verified_token_cache),
                jwks,
                config,
            }),
        })
    }

    /// Fetch the issuer's keys now (discovering the JWKS URL if needed), so the first request
    /// does not wait for it. Returns the number of usable keys. Counts against the refetch
    /// rate limit like any fetch.
    pub async fn warm_up(&self) -> Result<usize, JwksError> {
        self.inner.jwks.refresh().await
    }

    /// Verify a bearer token (without the `Bearer ` prefix) and build its principal — or find
    /// it verified already, with its key set still in use (see
    /// [`BearerConfig::verified_token_cache`]).
    pub async fn verify(&self, token: &str) -> Result<Principal, TokenError> {
        let digest = verified::digest(token);
        if let Some(principal) = self.inner.verified.get(&digest, |keys| self.inner.jwks.is_current(keys)) {
            return Ok(principal);
        }
        let (alg, kid) = self.allowed_header(token)?;
        let (key, keys) = self.inner.jwks.key_for(kid.as_deref(), alg.to_jwt()).await.map_err(|e| match e {
            KeyError::Unknown => TokenError::UnknownKey,
            KeyError::Mismatch => TokenError::KeyMismatch,
            KeyError::Unavailable => TokenError::KeysUnavailable,
        })?;
        let claims = self.verified_claims(token, alg, &key)?;
        let principal = claims::principal(&claims, self.inner.config.tenant_claim.as_deref())?
            .with_issuer(self.inner.config.issuer.clone());
        // Every request is authorized on its own (AUTH-4): the scopes are checked each time.
        if !principal.has_scopes(&self.inner.config.required_scopes) {
            return Err(TokenError::InsufficientScope);
        }
        if let Some(expires_at) = claims.get("exp").and_then(Value::as_u64) {
            self.inner.verified.insert(digest, principal.clone(), expires_at, keys);
        }
        Ok(principal)
    }

    /// The 403 for an operation that needs more than the token grants (a tool requiring
    /// `files:write`, say): `error="insufficient_scope"` with `scopes`, which should be every
    /// scope the operation needs, in one challenge (MCP authorization, "Scope Challenge
    /// Handling").
    ///
    /// ```
    /// # use mcp_fleet_oauth::{BearerAuthenticator, BearerConfig};
    /// let bearer = BearerAuthenticator::new(BearerConfig::new("https://auth.example.com", "https://mcp.example.com/mcp")?)?;
    /// let refusal = bearer.insufficient_scope(&["mcp:use", "files:write"]);
    /// assert_eq!(refusal.status(), http::StatusCode::FORBIDDEN);
    /// assert_eq!(
    ///     refusal.challenge(),
    ///     "Bearer resource_metadata=\"https://mcp.example.com/.well-known/oauth-protected-resource/mcp\", \
    ///      error=\"insufficient_scope\", scope=\"mcp:use files:write\"",
    /// );
    /// # Ok::<(), mcp_fleet_oauth::BearerConfigError>(())
    /// ```
    pub fn insufficient_scope(&self, scopes: &[&str]) -> AuthError {
        self.inner.challenges.insufficient(scopes)
    }

    /// `options` with this authenticator, and the RFC 9728 protected-resource metadata derived
    /// from its configuration ([`BearerConfig::metadata`]) served at
    /// `/.well-known/oauth-protected-resource` and its path-suffixed form: the endpoint becomes
    /// an OAuth 2.1 resource server, every request needs a bearer token this accepts (401/403
    /// with `WWW-Authenticate` otherwise). Replaces any authenticator and metadata set before;
    /// the same as [`HandlerOptions::protected_resource`] then
    /// [`HandlerOptions::authenticator`].
    ///
    /// ```
    /// use mcp_fleet_oauth::{BearerAuthenticator, BearerConfig};
    /// use mcp_fleet_server::HandlerOptions;
    /// let mut config = BearerConfig::new("https://auth.example.com", "https://mcp.example.com/mcp")?;
    /// config.tenant_claim = Some("org_id".into());
    /// let bearer = BearerAuthenticator::new(config)?;
    /// let options = bearer.install(HandlerOptions::default().max_streams_per_principal(20))?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn install(self, options: HandlerOptions) -> Result<HandlerOptions, BearerConfigError> {
        let metadata = self.inner.config.metadata()?;
        Ok(options.protected_resource(metadata).authenticator(self))
    }

    /// The configuration.
    pub fn config(&self) -> &BearerConfig {
        &self.inner.config
    }

    /// JWKS fetch attempts since start (the node's `mcp_fleet_auth_jwks_fetches_total`, through
    /// [`Authenticator::jwks_fetches`]).
    pub fn jwks_fetches(&self) -> u64 {
        self.inner.jwks.fetches()
    }

    /// The request's bearer token verified, or the refusal to send.
    async fn authenticate_parts(&self, parts: &Parts) -> Result<Principal, AuthError> {
        let challenges = &self.inner.challenges;
        let token = match bearer_token(parts) {
            BearerToken::Absent => return Err(challenges.missing_token()),
            BearerToken::Invalid => return Err(challenges.refuse(&TokenError::Malformed)),
            BearerToken::Present(token) => token,
        };
        self.verify(token).await.map_err(|error| {
            tracing::debug!(%error, "bearer token refused");
            challenges.refuse(&error)
        })
    }

    /// The token's `alg`, if allowed, and `kid`, read before any key is touched; its `typ`
    /// checked against [`BearerConfig::token_type`].
    fn allowed_header(&self, token: &str) -> Result<(JwsAlgorithm, Option<String>), TokenError> {
        let header = peek_header(token)?;
        if !self.inner.config.token_type.admits(header.typ.as_deref()) {
            return Err(TokenError::WrongType);
        }
        let alg: JwsAlgorithm = header.alg.parse().map_err(|_| TokenError::AlgorithmNotAllowed)?;
        if !self.inner.config.algorithms.contains(&alg) {
            return Err(TokenError::AlgorithmNotAllowed);
        }
        Ok((alg, header.kid))
    }

    /// Signature, `iss`, `aud`, `exp` and `nbf` checked; the claims.
    fn verified_claims(
        &self,
        token: &str,
        alg: JwsAlgorithm,
        key: &DecodingKey,
    ) -> Result<Map<String, Value>, TokenError> {
        let mut validation = self.inner.validation.clone();
        validation.algorithms = vec![alg.to_jwt()];
        jsonwebtoken::decode::<Map<String, Value>>(token, key, &validation)
            .map(|data| data.claims)
            .map_err(|e| token_error(e.kind()))
    }
}

impl Authenticator for BearerAuthenticator {
    fn authenticate<'a>(&'a self, parts: &'a Parts) -> AuthFuture<'a> {
        Box::pin(self.authenticate_parts(parts))
    }

    fn jwks_fetches(&self) -> Option<u64> {
        Some(self.inner.jwks.fetches())
    }
}

/// The `Authorization` header, as far as bearer tokens go.
enum BearerToken<'a> {
    /// No `Authorization` header, or another scheme: no credentials for us (no error code,
    /// RFC 6750 §3.1).
    Absent,
    /// Several headers, an empty token, or bytes a token cannot contain.
    Invalid,
    /// The token (RFC 6750 §2.1: `Bearer 1*SP b64token`; the scheme is case-insensitive).
    Present(&'a str),
}

fn bearer_token(parts: &Parts) -> BearerToken<'_> {
    let mut values = parts.headers.get_all(http::header::AUTHORIZATION).iter();
    let Some(value) = values.next() else { return BearerToken::Absent };
    let value = value.as_bytes();
    let Some(space) = value.iter().position(|b| *b == b' ') else {
        return if value.eq_ignore_ascii_case(b"bearer") { BearerToken::Invalid } else { BearerToken::Absent };
    };
    if !value[..space].eq_ignore_ascii_case(b"bearer") {
        return BearerToken::Absent;
    }
    let token = trim_spaces(&value[space + 1..]);
    let b64token = |b: &u8| B64TOKEN[usize::from(*b)];
    if values.next().is_some() || token.is_empty() || token.len() > MAX_TOKEN_BYTES || !token.iter().all(b64token) {
        return BearerToken::Invalid;
    }
    // Every byte is one of the table's ASCII ones: valid UTF-8.
    std::str::from_utf8(token).map_or(BearerToken::Invalid, BearerToken::Present)
}

/// `bytes` without the spaces around it (only spaces: a tab is no separator here).
fn trim_spaces(bytes: &[u8]) -> &[u8] {
    let start = bytes.iter().position(|b| *b != b' ').unwrap_or(bytes.len());
    let end = bytes.iter().rposition(|b| *b != b' ').map_or(start, |last| last + 1);
    &bytes[start..end]
}

/// The bytes of RFC 6750's `b64token` (`ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/"`, then
/// `"="` padding), as a table: every request's token is checked byte by byte, and a table
/// lookup per byte is what keeps that out of a cached token's cost.
static B64TOKEN: [bool; 256] = {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        table[b] = c.is_ascii_alphanumeric() || matches!(c, b'-' | b'.' | b'_' | b'~' | b'+' | b'/' | b'=');
        b += 1;
    }
    table
};

/// The JOSE header fields needed to choose a key.
#[derive(serde::Deserialize)]
struct PeekedHeader {
    alg: String,
    kid: Option<String>,
    typ: Option<String>,
}

/// The header of a compact JWS, decoded without trusting anything in it yet.
fn peek_header(token: &str) -> Result<PeekedHeader, TokenError> {
    let mut parts = token.split('.');
    let (Some(header), Some(_), Some(_), None) = (parts.next(), parts.next(), parts.next(), parts.next()) else {
        return Err(TokenError::Malformed);
    };
    let json = URL_SAFE_NO_PAD.decode(header).map_err(|_| TokenError::Malformed)?;
    serde_json::from_slice(&json).map_err(|_| TokenError::Malformed)
}

/// The checks every token gets (MCP authorization, "Token Handling"; OAuth 2.1 §5.2).
fn validation(config: &BearerConfig) -> Validation {
    let mut validation = Validation::new(jsonwebtoken::Algorithm::RS256);
    validation.set_required_spec_claims(&["exp", "iss", "aud"]);
    validation.set_issuer(&[&config.issuer]);
    // RFC 8707: the token must have been issued for this server.
    validation.set_audience(&[&config.audience]);
    validation.leeway = config.leeway.as_secs();
    validation.validate_exp = true;
    validation.validate_nbf = true;
    validation
}

/// `jsonwebtoken`'s verdict in our terms.
fn token_error(kind: &ErrorKind) -> TokenError {
    match kind {
        ErrorKind::InvalidSignature => TokenError::BadSignature,
        ErrorKind::ExpiredSignature => TokenError::Expired,
        ErrorKind::ImmatureSignature => TokenError::NotYetValid,
        ErrorKind::InvalidIssuer => TokenError::WrongIssuer,
        ErrorKind::InvalidAudience => TokenError::WrongAudience,
        ErrorKind::InvalidAlgorithm | ErrorKind::UnsupportedAlgorithm => TokenError::AlgorithmNotAllowed,
        ErrorKind::InvalidEcdsaKey
        | ErrorKind::InvalidRsaKey(_)
        | ErrorKind::InvalidEddsaKey
        | ErrorKind::InvalidKeyFormat => TokenError::KeyMismatch,
        ErrorKind::MissingRequiredClaim(claim) | ErrorKind::InvalidClaimFormat(claim) => {
            TokenError::MissingClaim(match claim.as_str() {
                "exp" => "exp",
                "iss" => "iss",
                "aud" => "aud",
                "nbf" => "nbf",
                "sub" => "sub",
                _ => "claim",
            })
        }
        _ => TokenError::Malformed,
    }
}

/// The client for JWKS and metadata fetches: a timeout, redirects only to URLs that pass the
/// same https rule (at most 3), no cookies. `HTTPS_PROXY` and friends are honoured (egress
/// proxies).
fn http_client(config: &BearerConfig) -> Result<reqwest::Client, BearerConfigError> {
    let redirects = reqwest::redirect::Policy::custom(|attempt| {
        if attempt.previous().len() >= 3 {
            attempt.error("too many redirects")
        } else if config::is_fetchable(attempt.url()) {
            attempt.follow()
        } else {
            attempt.error("redirect to a non-https URL")
        }
    });
    reqwest::Client::builder()
        .timeout(config.http_timeout)
        .connect_timeout(config.http_timeout)
        .redirect(redirects)
        .user_agent(concat!("mcp-fleet/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| BearerConfigError::HttpClient(e.to_string()))
}

#[cfg(test)]
mod tests;
