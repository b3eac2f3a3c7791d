//! [`BearerConfig`]: what a [`BearerAuthenticator`](super::BearerAuthenticator) checks, with
//! its defaults, built from the node's flags and validated once at construction (so a bad
//! issuer URL or scope fails at startup, not on the first request).

use std::fmt;
use std::net::IpAddr;
use std::str::FromStr;
use std::time::Duration;

use mcp_fleet_server::auth::{MetadataError, ProtectedResourceMetadata};
use reqwest::Url;

/// A JWS signature algorithm a bearer token may use. Asymmetric only: `none` and the HMAC
/// family cannot be expressed, so a token "signed" with a public key as an HMAC secret (the
/// classic RSA/HMAC confusion) can never be accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum JwsAlgorithm {
    /// RSASSA-PKCS1-v1_5 with SHA-256.
    RS256,
    /// RSASSA-PKCS1-v1_5 with SHA-384.
    RS384,
    /// RSASSA-PKCS1-v1_5 with SHA-512.
    RS512,
    /// RSASSA-PSS with SHA-256.
    PS256,
    /// RSASSA-PSS with SHA-384.
    PS384,
    /// RSASSA-PSS with SHA-512.
    PS512,
    /// ECDSA on P-256 with SHA-256.
    ES256,
    /// ECDSA on P-384 with SHA-384.
    ES384,
    /// EdDSA on Ed25519.
    EdDSA,
}

impl JwsAlgorithm {
    /// The `alg` header value.
    pub fn as_str(self) -> &'static str {
        match self {
            JwsAlgorithm::RS256 => "RS256",
            JwsAlgorithm::RS384 => "RS384",
            JwsAlgorithm::RS512 => "RS512",
            JwsAlgorithm::PS256 => "PS256",
            JwsAlgorithm::PS384 => "PS384",
            JwsAlgorithm::PS512 => "PS512",
            JwsAlgorithm::ES256 => "ES256",
            JwsAlgorithm::ES384 => "ES384",
            JwsAlgorithm::EdDSA => "EdDSA",
        }
    }

    /// Every algorithm that can be allowed.
    pub const ALL: [JwsAlgorithm; 9] = [
        JwsAlgorithm::RS256,
        JwsAlgorithm::RS384,
        JwsAlgorithm::RS512,
        JwsAlgorithm::PS256,
        JwsAlgorithm::PS384,
        JwsAlgorithm::PS512,
        JwsAlgorithm::ES256,
        JwsAlgorithm::ES384,
        JwsAlgorithm::EdDSA,
    ];

    /// The same algorithm in `jsonwebtoken`'s terms.
    pub(crate) fn to_jwt(self) -> jsonwebtoken::Algorithm {
        use jsonwebtoken::Algorithm as A;
        match self {
            JwsAlgorithm::RS256 => A::RS256,
            JwsAlgorithm::RS384 => A::RS384,
            JwsAlgorithm::RS512 => A::RS512,
            JwsAlgorithm::PS256 => A::PS256,
            JwsAlgorithm::PS384 => A::PS384,
            JwsAlgorithm::PS512 => A::PS512,
            JwsAlgorithm::ES256 => A::ES256,
            JwsAlgorithm::ES384 => A::ES384,
            JwsAlgorithm::EdDSA => A::EdDSA,
        }
    }
}

impl FromStr for JwsAlgorithm {
    type Err = BearerConfigError;

    /// The exact (case-sensitive) `alg` name; `none` and `HS*` are refused.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        JwsAlgorithm::ALL
            .into_iter()
            .find(|a| a.as_str() == s)
            .ok_or_else(|| BearerConfigError::UnsupportedAlgorithm(s.to_owned()))
    }
}

impl fmt::Display for JwsAlgorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What the JOSE header's `typ` of an access token may say (RFC 8725 §3.11 explicit typing;
/// RFC 9068 §2.1 types JWT access tokens `at+jwt`). Compared case-insensitively, with or
/// without the `application/` prefix (RFC 7515 §4.1.9).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TokenTypeCheck {
    /// No check: any `typ`, or none.
    Off,
    /// The default: no `typ`, the generic `JWT`, or `at+jwt`; a token explicitly typed as
    /// something else (`dpop+jwt`, `logout+jwt`, `secevent+jwt`, an ID token type…) is refused,
    /// so another kind of JWT from the same issuer cannot pass for an access token. Not
    /// stricter by default because many issuers (Keycloak, Entra ID, and this repository's test
    /// identity provider) sign access tokens with `typ: JWT`.
    #[default]
    RejectOtherTypes,
    /// RFC 9068 §4: the resource server MUST verify `typ` is `at+jwt` (or
    /// `application/at+jwt`). For issuers that implement RFC 9068.
    RequireAccessToken,
}

impl TokenTypeCheck {
    /// Whether a token whose header's `typ` is `typ` passes.
    pub fn admits(self, typ: Option<&str>) -> bool {
        let bare = typ.map(|t| {
            let t = t.trim();
            t.get(..12).filter(|p| p.eq_ignore_ascii_case("application/")).map_or(t, |_| &t[12..])
        });
        let is = |name: &str| bare.is_some_and(|t| t.eq_ignore_ascii_case(name));
        match self {
            TokenTypeCheck::Off => true,
            TokenTypeCheck::RejectOtherTypes => bare.is_none() || is("jwt") || is("at+jwt"),
            TokenTypeCheck::RequireAccessToken => is("at+jwt"),
        }
    }
}

/// A configuration the authenticator cannot work with.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BearerConfigError {
    /// A URL that is not `https` (or `http` to a loopback host, for local development).
    #[error("{field} {url:?} must be an https URL (http only to localhost/127.0.0.1/[::1])")]
    InsecureUrl {
        /// Which setting.
        field: &'static str,
        /// Its value.
        url: String,
    },
    /// An algorithm that is unknown, symmetric (`HS*`) or `none`.
    #[error("algorithm {0:?} is not accepted (asymmetric JWS algorithms only)")]
    UnsupportedAlgorithm(String),
    /// An empty algorithm list.
    #[error("at least one algorithm must be allowed")]
    NoAlgorithms,
    /// A scope that is not an RFC 6749 §3.3 scope-token (printable ASCII, no space, `"`, `\`).
    #[error("invalid scope {0:?}")]
    InvalidScope(String),
    /// An empty tenant claim name, or one with an empty dotted segment.
    #[error("invalid tenant claim {0:?}")]
    InvalidTenantClaim(String),
    /// The audience cannot be described as a protected resource.
    #[error(transparent)]
    Resource(#[from] MetadataError),
    /// `jwks_hard_max_age` is shorter than `jwks_max_age` (keys would be dropped before they
    /// are ever refreshed).
    #[error("jwks_hard_max_age must be at least jwks_max_age")]
    JwksAges,
    /// The HTTP client could not be built.
    #[error("http client: {0}")]
    HttpClient(String),
}

/// What a [`BearerAuthenticator`](super::BearerAuthenticator) checks. Build it with
/// [`BearerConfig::new`] or [`BearerConfig::from_flags`], then adjust the public fields.
///
/// ```
/// use mcp_fleet_oauth::BearerConfig;
/// let config = BearerConfig::from_flags(
///     "https://auth.example.com",
///     "https://mcp.example.com/mcp",
///     None,                 // discover the JWKS URL from the issuer's metadata
///     Some("org.id"),       // tenant claim (a dotted path into nested objects)
///     "mcp:read, mcp:write",
/// )?;
/// assert_eq!(config.required_scopes, ["mcp:read", "mcp:write"]);
/// assert_eq!(config.resource_metadata_url, "https://mcp.example.com/.well-known/oauth-protected-resource/mcp");
/// # Ok::<(), mcp_fleet_oauth::BearerConfigError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BearerConfig {
    /// The authorization server's issuer identifier; tokens' `iss` must equal it exactly.
    pub issuer: String,
    /// This server's canonical resource URL; tokens' `aud` must contain it (RFC 8707).
    pub audience: String,
    /// Where the issuer's JWKS is; `None`: discovered from the issuer's metadata (RFC 8414,
    /// then OpenID Connect Discovery), field `jwks_uri`.
    pub jwks_url: Option<String>,
    /// Accepted `alg` values. Default: RS256, ES256.
    pub algorithms: Vec<JwsAlgorithm>,
    /// Clock-skew allowance for `exp` and `nbf`. Default [`BearerConfig::DEFAULT_LEEWAY`].
    pub leeway: Duration,
    /// The claim holding the tenant, mapped to `Principal::tenant` (a top-level name, or a
    /// dotted path such as `org.id`). When set, a token without it is refused. Default none.
    pub tenant_claim: Option<String>,
    /// Scopes every request needs; a token without all of them gets 403
    /// `insufficient_scope`. Also advertised in the 401 challenge and `scopes_supported`.
    pub required_scopes: Vec<String>,
    /// The protected-resource metadata URL for `resource_metadata="…"`. Default: derived from
    /// the audience (`https://host/.well-known/oauth-protected-resource/<path>`).
    pub resource_metadata_url: String,
    /// Minimum time between two JWKS fetches, refetches on an unknown `kid` included
    /// (concurrent misses share one fetch). Default [`BearerConfig::DEFAULT_JWKS_REFETCH_INTERVAL`].
    pub jwks_refetch_interval: Duration,
    /// Age after which the JWKS is refreshed in the background. Default [`BearerConfig::DEFAULT_JWKS_MAX_AGE`].
    pub jwks_max_age: Duration,
    /// Age after which cached keys are no longer trusted at all: while the issuer stays
    /// unreachable past it, tokens are refused (fail closed) instead of being verified with
    /// keys the issuer may have withdrawn. At least `jwks_max_age`. Default
    /// [`BearerConfig::DEFAULT_JWKS_HARD_MAX_AGE`].
    pub jwks_hard_max_age: Duration,
    /// What the token header's `typ` may say. Default [`TokenTypeCheck::RejectOtherTypes`].
    pub token_type: TokenTypeCheck,
    /// Timeout of one JWKS or metadata fetch. Default [`BearerConfig::DEFAULT_HTTP_TIMEOUT`].
    pub http_timeout: Duration,
    /// Tokens remembered as verified (by digest, until their `exp` or until the key set they
    /// were verified with is replaced), so a client's repeated token is checked once; 0 turns
    /// the cache off. Default [`BearerConfig::DEFAULT_VERIFIED_TOKEN_CACHE`].
    pub verified_token_cache: usize,
}

impl BearerConfig {
    /// Default clock-skew allowance for `exp` and `nbf`.
    pub const DEFAULT_LEEWAY: Duration = Duration::from_secs(60);
    /// Default minimum time between two JWKS fetches (refetches on an unknown `kid` included).
    pub const DEFAULT_JWKS_REFETCH_INTERVAL: Duration = Duration::from_secs(30);
    /// Default age after which the cached JWKS is refreshed in the background, so keys the
    /// issuer withdrew stop being trusted.
    pub const DEFAULT_JWKS_MAX_AGE: Duration = Duration::from_secs(600);
    /// Default age past which cached keys are dropped when no fetch has succeeded since: a
    /// day rides out an issuer outage of a working day, and bounds how long a key the issuer
    /// withdrew (compromised, say) stays trusted by a replica cut off from it.
    pub const DEFAULT_JWKS_HARD_MAX_AGE: Duration = Duration::from_secs(24 * 60 * 60);
    /// Default timeout of one JWKS or metadata fetch.
    pub const DEFAULT_HTTP_TIMEOUT: Duration = Duration::from_secs(5);
    /// Default number of verified tokens remembered (about 300 bytes each).
    pub const DEFAULT_VERIFIED_TOKEN_CACHE: usize = 10_000;

    /// Tokens from `issuer` for the resource `audience`, with every other setting at its
    /// default.
    pub fn new(issuer: impl Into<String>, audience: impl Into<String>) -> Result<Self, BearerConfigError> {
        let (issuer, audience) = (issuer.into(), audience.into());
        let resource_metadata_url = ProtectedResourceMetadata::new(&audience, &issuer)?.metadata_url();
        let config = BearerConfig {
            issuer,
            audience,
            jwks_url: None,
            algorithms: vec![JwsAlgorithm::RS256, JwsAlgorithm::ES256],
            leeway: Self::DEFAULT_LEEWAY,
            tenant_claim: None,
            required_scopes: Vec::new(),
            resource_metadata_url,
            jwks_refetch_interval: Self::DEFAULT_JWKS_REFETCH_INTERVAL,
            jwks_max_age: Self::DEFAULT_JWKS_MAX_AGE,
            jwks_hard_max_age: Self::DEFAULT_JWKS_HARD_MAX_AGE,
            token_type: TokenTypeCheck::default(),
            http_timeout: Self::DEFAULT_HTTP_TIMEOUT,
            verified_token_cache: Self::DEFAULT_VERIFIED_TOKEN_CACHE,
        };
        config.validate()?;
        Ok(config)
    }

    /// From the node's flag values: issuer, audience, optional JWKS URL, optional tenant claim
    /// and comma-separated required scopes (blank entries ignored).
    pub fn from_flags(
        issuer: &str,
        audience: &str,
        jwks_url: Option<&str>,
        tenant_claim: Option<&str>,
        scopes: &str,
    ) -> Result<Self, BearerConfigError> {
        let mut config = BearerConfig::new(issuer, audience)?;
        config.jwks_url = jwks_url.map(str::trim).filter(|u| !u.is_empty()).map(str::to_owned);
        config.tenant_claim = tenant_claim.map(str::trim).filter(|c| !c.is_empty()).map(str::to_owned);
        config.required_scopes =
            scopes.split(',').map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned).collect();
        config.validate()?;
        Ok(config)
    }

    /// The protected-resource metadata matching this configuration (the audience as resource,
    /// the issuer as its authorization server, the required scopes as `scopes_supported`).
    pub fn metadata(&self) -> Result<ProtectedResourceMetadata, BearerConfigError> {
        let metadata = ProtectedResourceMetadata::new(&self.audience, &self.issuer)?;
        Ok(metadata.with_scopes_supported(self.required_scopes.iter().cloned()))
    }

    /// Every setting that can be checked without the network.
    pub fn validate(&self) -> Result<(), BearerConfigError> {
        fetchable_url("issuer", &self.issuer)?;
        if let Some(url) = &self.jwks_url {
            fetchable_url("jwks_url", url)?;
        }
        ProtectedResourceMetadata::new(&self.audience, &self.issuer)?;
        if self.algorithms.is_empty() {
            return Err(BearerConfigError::NoAlgorithms);
        }
        if self.jwks_hard_max_age < self.jwks_max_age {
            return Err(BearerConfigError::JwksAges);
        }
        if let Some(scope) = self.required_scopes.iter().find(|s| !is_scope_token(s)) {
            return Err(BearerConfigError::InvalidScope(scope.clone()));
        }
        if let Some(claim) = &self.tenant_claim
            && claim.split('.').any(str::is_empty)
        {
            return Err(BearerConfigError::InvalidTenantClaim(claim.clone()));
        }
        if !self.resource_metadata_url.chars().all(|c| c.is_ascii_graphic()) {
            return Err(BearerConfigError::InsecureUrl {
                field: "resource_metadata_url",
                url: self.resource_metadata_url.clone(),
            });
        }
        Ok(())
    }
}

/// `url` parses and is `https`, or `http` to a loopback host (OAuth 2.1 §1.5: authorization
/// server endpoints over TLS; loopback is for local development and tests).
pub(crate) fn fetchable_url(field: &'static str, url: &str) -> Result<Url, BearerConfigError> {
    let insecure = || BearerConfigError::InsecureUrl { field, url: url.to_owned() };
    let parsed = Url::parse(url).map_err(|_| insecure())?;
    is_fetchable(&parsed).then_some(parsed).ok_or_else(insecure)
}

/// See [`fetchable_url`].
pub(crate) fn is_fetchable(url: &Url) -> bool {
    let Some(host) = url.host_str() else { return false };
    match url.scheme() {
        "https" => true,
        "http" => {
            host.eq_ignore_ascii_case("localhost")
                || host.trim_matches(['[', ']']).parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
        }
        _ => false,
    }
}

/// RFC 6749 §3.3: `scope-token = 1*( %x21 / %x23-5B / %x5D-7E )`.
pub(crate) fn is_scope_token(scope: &str) -> bool {
    !scope.is_empty() && scope.bytes().all(|b| matches!(b, 0x21 | 0x23..=0x5B | 0x5D..=0x7E))
}
