//! Who may call this node, and how much: the `--auth-*` flags turned into a
//! [`BearerAuthenticator`] (its JWKS fetched at start), the per-principal limits
//! (`--max-streams-per-principal`, `--rate-per-principal`, `--rate-burst-per-principal`) and the
//! MRTR `requestState` key (`--request-state-key-file`), checked together at start and applied
//! to the handler's options.
//!
//! Verifying tokens belongs to the oauth crate; serving the RFC 9728 document, the 401/403/429
//! answers and the limits themselves to the server crate; this module only refuses inconsistent flags before
//! anything is bound, and never lets a JWKS outage stop the node (tokens are refused until the
//! keys arrive).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use mcp_fleet_oauth::{BearerAuthenticator, BearerConfig, BearerConfigError};
use mcp_fleet_protocol::state::MIN_KEY_LEN;
use mcp_fleet_server::HandlerOptions;
use mcp_fleet_server::auth::{LimitScope, Rate};

use crate::config::Config;

/// Flags that cannot run together, or a file that cannot be used; each message names the flag.
#[derive(thiserror::Error)]
pub(crate) enum AuthSetupError {
    /// Only one of issuer and audience: the node would otherwise silently stay open.
    #[error(
        "--auth-issuer and --auth-audience go together (MCP_FLEET_AUTH_ISSUER, MCP_FLEET_AUTH_AUDIENCE): set both to require bearer tokens, or neither"
    )]
    HalfConfigured,
    /// A token setting without the issuer and audience it refines.
    #[error("{0} only applies with --auth-issuer and --auth-audience")]
    WithoutIssuer(&'static str),
    /// The issuer, audience, JWKS URL, tenant claim or scopes are malformed.
    #[error("auth flags: {0}")]
    Bearer(#[from] BearerConfigError),
    /// A per-principal setting out of range.
    #[error("{0}")]
    Limit(&'static str),
    /// The requestState key file cannot be read.
    #[error("request state key file {}: {source}", path.display())]
    KeyFile {
        /// The file.
        path: PathBuf,
        /// Why it could not be read.
        source: std::io::Error,
    },
    /// The requestState key is too short to be a safe HMAC key.
    #[error("request state key file {} holds {len} bytes; at least {MIN_KEY_LEN} are needed", path.display())]
    ShortKey {
        /// The file.
        path: PathBuf,
        /// Its length without surrounding whitespace.
        len: usize,
    },
}

/// The sentence, not the variant: `main` returns this error, and Rust prints a `main` error
/// with `Debug`.
impl std::fmt::Debug for AuthSetupError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(self, f)
    }
}

/// The node's authentication and per-principal settings, validated.
pub(crate) struct NodeAuth {
    /// `None`: no `--auth-*` flags, every request is served anonymously.
    bearer: Option<BearerAuthenticator>,
    max_streams_per_principal: usize,
    limit_scope: LimitScope,
    /// `None`: `--rate-per-principal 0`, no rate limit.
    rate: Option<Rate>,
    /// The requestState key ring (first signs); empty: a per-process key.
    request_state_keys: Vec<Vec<u8>>,
}

impl NodeAuth {
    /// Check the flags and read the key file; no network access yet.
    pub(crate) fn from_config(config: &Config) -> Result<NodeAuth, AuthSetupError> {
        if config.max_streams_per_principal == 0 {
            return Err(AuthSetupError::Limit("--max-streams-per-principal must be at least 1"));
        }
        Ok(NodeAuth {
            bearer: bearer(config)?,
            max_streams_per_principal: config.max_streams_per_principal,
            limit_scope: config.limit_scope.into(),
            rate: rate(config.rate_per_principal, config.rate_burst_per_principal)?,
            request_state_keys: config
                .request_state_key_file
                .as_deref()
                .map(read_keys)
                .transpose()?
                .unwrap_or_default(),
        })
    }

    /// Whether requests need a bearer token.
    pub(crate) fn is_enabled(&self) -> bool {
        self.bearer.is_some()
    }

    /// Fetch the issuer's keys now, so the first request does not wait for them. A failure is
    /// logged, never fatal: tokens are refused (401) until a later fetch, on a token's arrival
    /// and at most once per refetch interval, succeeds.
    pub(crate) async fn warm_up(&self) {
        let Some(bearer) = &self.bearer else { return };
        let issuer = &bearer.config().issuer;
        match bearer.warm_up().await {
            Ok(keys) => tracing::info!(%issuer, keys, "fetched the issuer's signing keys"),
            Err(error) => tracing::warn!(
                %issuer,
                %error,
                retry_secs = bearer.config().jwks_refetch_interval.as_secs(),
                "could not fetch the issuer's signing keys: bearer tokens are refused until a fetch succeeds (retried as tokens arrive)"
            ),
        }
    }

    /// Warn when `/mcp` is reachable beyond this machine and anyone may call it.
    pub(crate) fn warn_if_open(&self, listen: SocketAddr) {
        if !self.is_enabled() && !listen.ip().is_loopback() {
            tracing::warn!(
                %listen,
                "the MCP endpoint listens beyond loopback without authentication: anyone who reaches it may call every tool (set --auth-issuer and --auth-audience, or keep it behind an authenticating gateway)"
            );
        }
    }

    /// `options` with the authenticator, the per-principal limits and the requestState key.
    pub(crate) fn apply(&self, options: HandlerOptions) -> Result<HandlerOptions, BearerConfigError> {
        let mut options = options
            .max_streams_per_principal(self.max_streams_per_principal)
            .rate_per_principal(self.rate)
            .limit_scope(self.limit_scope);
        if !self.request_state_keys.is_empty() {
            options = options.request_state_keys(self.request_state_keys.clone());
        }
        match &self.bearer {
            Some(bearer) => bearer.clone().install(options),
            None => Ok(options),
        }
    }
}

/// The authenticator the `--auth-*` flags describe; blank values count as unset.
fn bearer(config: &Config) -> Result<Option<BearerAuthenticator>, AuthSetupError> {
    let (issuer, audience) = match (set(&config.auth_issuer), set(&config.auth_audience)) {
        (Some(issuer), Some(audience)) => (issuer, audience),
        (None, None) => {
            let refinements = [
                ("--auth-jwks-url", set(&config.auth_jwks_url).is_some()),
                ("--auth-tenant-claim", set(&config.auth_tenant_claim).is_some()),
                ("--auth-scopes", set(&config.auth_scopes).is_some()),
                ("--auth-token-type", config.auth_token_type.is_some()),
                ("--auth-jwks-hard-max-age-secs", config.auth_jwks_hard_max_age_secs.is_some()),
                ("--auth-verified-token-cache", config.auth_verified_token_cache.is_some()),
            ];
            return match refinements.into_iter().find(|(_, given)| *given) {
                Some((flag, _)) => Err(AuthSetupError::WithoutIssuer(flag)),
                None => Ok(None),
            };
        }
        _ => return Err(AuthSetupError::HalfConfigured),
    };
    let scopes = set(&config.auth_scopes).unwrap_or_default();
    let mut bearer_config =
        BearerConfig::from_flags(issuer, audience, set(&config.auth_jwks_url), set(&config.auth_tenant_claim), scopes)?;
    if let Some(mode) = config.auth_token_type {
        bearer_config.token_type = mode.into();
    }
    if let Some(secs) = config.auth_jwks_hard_max_age_secs {
        bearer_config.jwks_hard_max_age = Duration::from_secs(secs);
    }
    if let Some(tokens) = config.auth_verified_token_cache {
        bearer_config.verified_token_cache = tokens;
    }
    bearer_config.validate()?;
    Ok(Some(BearerAuthenticator::new(bearer_config)?))
}

/// A flag's value unless it is absent or blank (an empty environment variable).
fn set(value: &Option<String>) -> Option<&str> {
    value.as_deref().map(str::trim).filter(|v| !v.is_empty())
}

/// `--rate-per-principal` (0: off) and its burst (default twice the rate, at least 1).
fn rate(per_second: f64, burst: Option<u32>) -> Result<Option<Rate>, AuthSetupError> {
    if !(per_second.is_finite() && per_second >= 0.0) {
        return Err(AuthSetupError::Limit(
            "--rate-per-principal must be a finite number of requests per second (0: off)",
        ));
    }
    match (per_second > 0.0, burst) {
        (false, None) => Ok(None),
        (false, Some(_)) => Err(AuthSetupError::Limit("--rate-burst-per-principal needs --rate-per-principal above 0")),
        (true, Some(0)) => Err(AuthSetupError::Limit("--rate-burst-per-principal must be at least 1")),
        (true, Some(burst)) => Ok(Some(Rate { per_second, burst })),
        // Saturating float-to-int conversion: a rate beyond u32::MAX / 2 gets the largest bucket.
        (true, None) => Ok(Some(Rate { per_second, burst: (per_second * 2.0).ceil().max(1.0) as u32 })),
    }
}

/// The requestState HMAC key ring. One key per line when the file has several non-empty lines
/// that are each at least [`MIN_KEY_LEN`] bytes (trimmed): the first signs, the others verify
/// (rotation). Otherwise, as before, the whole file without surrounding whitespace (a Secret
/// made with `--from-file` often ends in a newline; a binary key may hold a newline byte) is
/// one key, at least [`MIN_KEY_LEN`] bytes.
fn read_keys(path: &Path) -> Result<Vec<Vec<u8>>, AuthSetupError> {
    let bytes = std::fs::read(path).map_err(|source| AuthSetupError::KeyFile { path: path.into(), source })?;
    let lines: Vec<&[u8]> = bytes.split(|b| *b == b'\n').map(<[u8]>::trim_ascii).filter(|l| !l.is_empty()).collect();
    if lines.len() > 1 && lines.iter().all(|l| l.len() >= MIN_KEY_LEN) {
        return Ok(lines.into_iter().map(<[u8]>::to_vec).collect());
    }
    let key = bytes.trim_ascii();
    if key.len() < MIN_KEY_LEN {
        return Err(AuthSetupError::ShortKey { path: path.into(), len: key.len() });
    }
    Ok(vec![key.to_vec()])
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    fn auth(args: &[&str]) -> Result<NodeAuth, AuthSetupError> {
        let config = Config::try_parse_from(std::iter::once("mcp-fleet").chain(args.iter().copied())).expect("flags");
        NodeAuth::from_config(&config)
    }

    fn refusal(args: &[&str]) -> String {
        match auth(args) {
            Ok(_) => panic!("{args:?} accepted"),
            Err(error) => error.to_string(),
        }
    }

    #[test]
    fn no_flags_leave_the_node_open_with_the_default_limits() {
        let open = auth(&[]).expect("defaults");
        assert!(!open.is_enabled());
        assert_eq!(open.max_streams_per_principal, 100);
        assert_eq!(open.rate, None);
        assert!(open.request_state_keys.is_empty());
    }

    #[test]
    fn issuer_and_audience_make_a_resource_server() {
        let on = auth(&[
            "--auth-issuer",
            "https://auth.example.com",
            "--auth-audience",
            "https://mcp.example.com/mcp",
            "--auth-scopes",
            "mcp:use, mcp:listen",
            "--auth-tenant-claim",
            "org.id",
        ])
        .expect("auth flags");
        let config = on.bearer.as_ref().expect("bearer").config();
        assert_eq!(config.required_scopes, ["mcp:use", "mcp:listen"]);
        assert_eq!(config.tenant_claim.as_deref(), Some("org.id"));
        assert!(on.apply(HandlerOptions::default()).is_ok());
    }

    #[test]
    fn half_or_dangling_auth_flags_are_refused_naming_the_flag() {
        assert!(refusal(&["--auth-issuer", "https://auth.example.com"]).contains("go together"));
        assert!(refusal(&["--auth-audience", "https://mcp.example.com/mcp"]).contains("go together"));
        assert!(refusal(&["--auth-scopes", "mcp:use"]).starts_with("--auth-scopes only applies"));
        let insecure = ["--auth-issuer", "http://auth.example.com", "--auth-audience", "https://mcp.example.com/mcp"];
        assert!(refusal(&insecure).contains("https"));
    }

    const ISSUER: [&str; 4] =
        ["--auth-issuer", "https://auth.example.com", "--auth-audience", "https://mcp.example.com/mcp"];

    #[test]
    fn token_type_and_the_jwks_hard_age_reach_the_authenticator() {
        let defaults = auth(&ISSUER).expect("auth flags");
        let config = defaults.bearer.as_ref().expect("bearer").config();
        assert_eq!(config.token_type, mcp_fleet_oauth::TokenTypeCheck::RejectOtherTypes);
        let hard = config.jwks_hard_max_age;
        let args =
            [&ISSUER[..], &["--auth-token-type", "require-access-token", "--auth-jwks-hard-max-age-secs", "172800"]]
                .concat();
        let strict = auth(&args).expect("auth flags");
        let config = strict.bearer.as_ref().expect("bearer").config();
        assert_eq!(config.token_type, mcp_fleet_oauth::TokenTypeCheck::RequireAccessToken);
        assert_eq!(config.jwks_hard_max_age, Duration::from_secs(172_800));
        assert_ne!(config.jwks_hard_max_age, hard);
        // Shorter than the cache age: the keys would be dropped before they are refetched.
        let short = [&ISSUER[..], &["--auth-jwks-hard-max-age-secs", "1"]].concat();
        assert!(refusal(&short).contains("jwks_hard_max_age"), "{}", refusal(&short));
        assert!(refusal(&["--auth-token-type", "off"]).starts_with("--auth-token-type only applies"));
        assert!(refusal(&["--auth-jwks-hard-max-age-secs", "90000"]).starts_with("--auth-jwks-hard-max-age-secs only"));
    }

    #[test]
    fn limits_are_per_replica_unless_the_fleet_is_asked_for() {
        assert_eq!(auth(&[]).expect("defaults").limit_scope, LimitScope::Replica);
        assert_eq!(auth(&["--limit-scope", "fleet"]).expect("fleet").limit_scope, LimitScope::Fleet);
    }

    #[test]
    fn the_burst_defaults_to_twice_the_rate_and_needs_a_rate() {
        assert_eq!(rate(0.0, None).expect("off"), None);
        assert_eq!(rate(5.0, None).expect("rate"), Some(Rate { per_second: 5.0, burst: 10 }));
        assert_eq!(rate(0.2, None).expect("slow"), Some(Rate { per_second: 0.2, burst: 1 }));
        assert_eq!(rate(5.0, Some(3)).expect("burst"), Some(Rate { per_second: 5.0, burst: 3 }));
        assert!(rate(0.0, Some(3)).is_err());
        assert!(rate(5.0, Some(0)).is_err());
        assert!(rate(-1.0, None).is_err());
        assert!(rate(f64::NAN, None).is_err());
    }

    #[test]
    fn the_request_state_key_is_trimmed_and_must_be_32_bytes() {
        let dir = std::env::temp_dir().join(format!("mcp-fleet-key-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let (long, short) = (dir.join("long"), dir.join("short"));
        std::fs::write(&long, format!("{}\n", "k".repeat(32))).expect("write");
        std::fs::write(&short, "k".repeat(31)).expect("write");
        assert_eq!(read_keys(&long).expect("key"), vec!["k".repeat(32).into_bytes()]);
        assert!(read_keys(&short).expect_err("short").to_string().contains("holds 31 bytes"));
        assert!(read_keys(&dir.join("missing")).is_err());
        // A ring: one key per line, the first signs.
        let ring = dir.join("ring");
        std::fs::write(&ring, format!("{}\n\n  {}  \n", "n".repeat(32), "o".repeat(40))).expect("write");
        assert_eq!(read_keys(&ring).expect("ring"), vec!["n".repeat(32).into_bytes(), "o".repeat(40).into_bytes()]);
        // Lines too short to be keys: the whole file is one key (a binary key with a newline).
        let binary = dir.join("binary");
        std::fs::write(&binary, format!("{}\n{}", "b".repeat(20), "c".repeat(20))).expect("write");
        let whole = format!("{}\n{}", "b".repeat(20), "c".repeat(20)).into_bytes();
        assert_eq!(read_keys(&binary).expect("one key"), vec![whole]);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
