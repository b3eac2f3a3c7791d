//! Command-line and environment configuration of the node (`MCP_FLEET_*` variables).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;
use mcp_fleet_bus::redact::{Redacted, SecretUrl};
use mcp_fleet_oauth::TokenTypeCheck;
use mcp_fleet_server::auth::LimitScope;
use mcp_fleet_server::{fleet::CatalogAnnouncePolicy, options::Era2025Options};

/// One replica of an mcp-fleet MCP server. Its `Debug` shows no secret: the token is
/// [`Redacted`], the URLs are [`SecretUrl`]s.
#[derive(Debug, Clone, Parser)]
#[command(name = "mcp-fleet", version, about)]
pub(crate) struct Config {
    /// Address of the MCP endpoint (served at /mcp). Bind 127.0.0.1 for local use. Both ports
    /// are bound before the bus is connected; /readyz stays false until it is.
    #[arg(long, env = "MCP_FLEET_LISTEN", default_value = "127.0.0.1:8080")]
    pub(crate) listen: SocketAddr,

    /// Address of the admin endpoint (GET /livez, /readyz, /healthz, /metrics, /admin/fleet;
    /// POST /admin/notify). Off unless given; never expose it publicly. Beyond loopback it
    /// needs --admin-token(-file), or --admin-insecure.
    #[arg(long, env = "MCP_FLEET_ADMIN_LISTEN")]
    pub(crate) admin_listen: Option<SocketAddr>,

    /// Bearer token every POST /admin/* and GET /admin/fleet must carry (`Authorization:
    /// Bearer <token>`); probes and /metrics stay open. Without a token (or token file) the
    /// admin port accepts any caller, so the node refuses to start unless it listens on
    /// loopback or --admin-insecure is given.
    #[arg(long, env = "MCP_FLEET_ADMIN_TOKEN", hide_env_values = true, conflicts_with = "admin_token_file")]
    pub(crate) admin_token: Option<Redacted<String>>,

    /// File holding the admin token (a mounted Secret); read at start, surrounding whitespace
    /// ignored. An empty token (flag or file) stops the node at start.
    #[arg(long, env = "MCP_FLEET_ADMIN_TOKEN_FILE")]
    pub(crate) admin_token_file: Option<PathBuf>,

    /// Serve the admin endpoint beyond loopback without a token (a lab only: anyone who
    /// reaches it can publish fleet-wide change events and read the fleet).
    #[arg(long, env = "MCP_FLEET_ADMIN_INSECURE")]
    pub(crate) admin_insecure: bool,

    /// How long the bus consumer may be down before /readyz fails and the node closes its
    /// listen streams (clients reconnect to a ready replica), in seconds. A shorter blip drains
    /// nobody.
    #[arg(long, env = "MCP_FLEET_READY_BUS_GRACE_SECS", default_value_t = 30)]
    pub(crate) ready_bus_grace_secs: u64,

    /// Event bus URL: memory:// (single node), redis://host:port/db[?stream=KEY&maxlen=N],
    /// nats://host:port[?mode=core&stream=NAME&prefix=P&token=T&creds=FILE]. Every replica must
    /// use the same one. Its credentials never show in the log.
    #[arg(long, env = "MCP_FLEET_BUS", hide_env_values = true, default_value = "memory://")]
    pub(crate) bus: SecretUrl,

    /// How long to keep retrying an unreachable bus at startup before exiting, in seconds.
    #[arg(long, env = "MCP_FLEET_BUS_CONNECT_SECS", default_value_t = 30)]
    pub(crate) bus_connect_secs: u64,

    /// This node's id on the bus (default: hostname-pid).
    #[arg(long, env = "MCP_FLEET_NODE_ID")]
    pub(crate) node_id: Option<String>,

    /// Allowed Origin hostnames, comma-separated ("*" disables the check).
    #[arg(long, env = "MCP_FLEET_ALLOWED_ORIGINS", value_delimiter = ',', default_value = "localhost,127.0.0.1,[::1]")]
    pub(crate) allowed_origins: Vec<String>,

    /// This replica's pod UID, part of its execution identity (the chart sets it through the
    /// downward API).
    #[arg(long, env = "MCP_FLEET_POD_UID")]
    pub(crate) pod_uid: Option<String>,

    /// The image reference this replica runs, part of its execution identity (the chart
    /// sets it).
    #[arg(long, env = "MCP_FLEET_IMAGE")]
    pub(crate) image: Option<String>,

    /// Fold the build identity (the executable's SHA-256, else version and commit) into the
    /// tools list's revision, so a rollout that keeps the catalog identical is still announced
    /// once the fleet has converged on the new build (for hosts that bind approvals to code).
    #[arg(long, env = "MCP_FLEET_IDENTITY_IN_TOOLS_REVISION")]
    pub(crate) identity_in_tools_revision: bool,

    /// Leave HTTP/1.1 listen streams to hyper's connection pipeline instead of writing them
    /// straight to their sockets (the default: no per-connection buffers, no task wake-up per
    /// delivery). For comparison and as an escape hatch.
    #[arg(long, env = "MCP_FLEET_HTTP1_LISTEN_IN_HYPER")]
    pub(crate) http1_listen_in_hyper: bool,

    /// Append an audit record (JSON lines) of every tools/call, prompts/get, resources/read
    /// and task transition to this file ("-": standard output). Bounded and non-blocking: a
    /// slow or stalled file drops records (mcp_fleet_audit_records_dropped_total), never
    /// slows calls. Off unless given (or --otlp-endpoint, which exports them as OTel logs).
    #[arg(long, env = "MCP_FLEET_AUDIT_FILE")]
    pub(crate) audit_file: Option<PathBuf>,

    /// Put each call's arguments in its audit record, beside their SHA-256 (off: the digest
    /// only; arguments may hold personal data or secrets).
    #[arg(long, env = "MCP_FLEET_AUDIT_ARGUMENTS")]
    pub(crate) audit_arguments: bool,

    /// Most open subscriptions/listen streams on this node.
    #[arg(long, env = "MCP_FLEET_MAX_STREAMS", default_value_t = 10_000)]
    pub(crate) max_streams: usize,

    /// URIs one listen may subscribe to (`resourceSubscriptions`); past it -32602.
    #[arg(long, env = "MCP_FLEET_MAX_URIS_PER_LISTEN", default_value_t = 1_000)]
    pub(crate) max_uris_per_listen: usize,

    /// Longest URI a listen may subscribe to, in bytes; past it -32602 before the ack.
    #[arg(long, env = "MCP_FLEET_MAX_URI_BYTES", default_value_t = 2_048)]
    pub(crate) max_uri_bytes: usize,

    /// Bytes of subscribed URIs one listen stream may hold; past it -32602 before the ack.
    #[arg(long, env = "MCP_FLEET_MAX_SUBSCRIPTION_BYTES_PER_STREAM", default_value_t = 128 * 1024)]
    pub(crate) max_subscription_bytes_per_stream: usize,

    /// Bytes of subscribed URIs all listen streams of one authenticated principal may hold on
    /// this node; past it 429.
    #[arg(long, env = "MCP_FLEET_MAX_SUBSCRIPTION_BYTES_PER_PRINCIPAL", default_value_t = 4 * 1024 * 1024)]
    pub(crate) max_subscription_bytes_per_principal: usize,

    /// Listen streams one client address may hold on this node when callers are anonymous
    /// (IPv6 counted by /64; loopback exempt); past it 429. Behind a proxy every client has the
    /// proxy's address: raise it, or authenticate.
    #[arg(long, env = "MCP_FLEET_MAX_STREAMS_PER_ADDRESS", default_value_t = 1_000)]
    pub(crate) max_streams_per_address: usize,

    /// Refuse a listen subscribing to a URI that names no resource and matches no template
    /// (-32602 with data.unknownUris). Off by default: clients may subscribe to resources that
    /// appear later.
    #[arg(long, env = "MCP_FLEET_LISTEN_URIS_MUST_EXIST")]
    pub(crate) listen_uris_must_exist: bool,

    /// Keepalive comment interval on idle listen streams, in seconds (0 disables).
    #[arg(long, env = "MCP_FLEET_KEEPALIVE_SECS", default_value_t = 15)]
    pub(crate) keepalive_secs: u64,

    /// Close each listen stream gracefully after about this many seconds (±10 %), so clients
    /// reconnect through the load balancer and spread onto new replicas (0: never).
    #[arg(long, env = "MCP_FLEET_MAX_STREAM_LIFETIME_SECS", default_value_t = 0)]
    pub(crate) max_stream_lifetime_secs: u64,

    /// Largest request body in bytes.
    #[arg(long, env = "MCP_FLEET_MAX_BODY_BYTES", default_value_t = 4 * 1024 * 1024)]
    pub(crate) max_body_bytes: usize,

    /// How long a graceful shutdown may take, in seconds.
    #[arg(long, env = "MCP_FLEET_SHUTDOWN_SECS", default_value_t = 10)]
    pub(crate) shutdown_secs: u64,

    /// Runtime worker threads (default: one per core).
    #[arg(long, env = "MCP_FLEET_WORKER_THREADS")]
    pub(crate) worker_threads: Option<usize>,

    /// Log as JSON lines instead of text (filter with RUST_LOG).
    #[arg(long, env = "MCP_FLEET_LOG_JSON")]
    pub(crate) log_json: bool,

    /// Export traces over OTLP/HTTP to this collector base URL (e.g. http://127.0.0.1:4318;
    /// /v1/traces is appended), and audit records as OTel logs (/v1/logs). Off unless given. The standard OTEL_* variables apply:
    /// OTEL_SERVICE_NAME (default mcp-fleet), OTEL_RESOURCE_ATTRIBUTES,
    /// OTEL_EXPORTER_OTLP_PROTOCOL (http/protobuf, the default, or http/json),
    /// OTEL_EXPORTER_OTLP_HEADERS, OTEL_EXPORTER_OTLP_TIMEOUT, OTEL_TRACES_SAMPLER, OTEL_BSP_*.
    #[arg(long, env = "MCP_FLEET_OTLP_ENDPOINT")]
    pub(crate) otlp_endpoint: Option<SecretUrl>,

    /// Serve the tools, prompts and resources of this catalog file (TOML, or JSON by its
    /// `.json` extension; see deploy/catalog.example.toml) instead of the demo catalog. An
    /// invalid file at start is fatal; later it is reloaded on change (ConfigMap mounts
    /// included), every --catalog-poll-secs and on SIGHUP, and an invalid version is logged
    /// and counted while the previous catalog keeps serving.
    #[arg(long, env = "MCP_FLEET_CATALOG")]
    pub(crate) catalog: Option<PathBuf>,

    /// The folder a catalog's `file` resources must resolve into (symlinks followed); a file
    /// naming anything outside is refused (default: the catalog file's own folder). The node
    /// refuses to start if it holds --admin-token-file or --request-state-key-file.
    #[arg(long, env = "MCP_FLEET_CATALOG_FILES_ROOT")]
    pub(crate) catalog_files_root: Option<PathBuf>,

    /// Let the catalog's `http` tools reach link-local addresses and the cloud metadata
    /// endpoints (169.254.0.0/16, fe80::/10, fd00:ec2::254, 100.100.100.200,
    /// metadata.google.internal), which hand out the instance's credentials. Off: refused
    /// before any connection, after DNS resolution.
    #[arg(long, env = "MCP_FLEET_CATALOG_HTTP_ALLOW_LINK_LOCAL")]
    pub(crate) catalog_http_allow_link_local: bool,

    /// More environment variables a catalog's `${VAR}` may read, comma-separated names or
    /// `PREFIX_*` patterns, besides MCP_CATALOG_* (which are always allowed); a file naming
    /// any other is refused.
    #[arg(long, env = "MCP_FLEET_CATALOG_ENV_ALLOW", value_delimiter = ',')]
    pub(crate) catalog_env_allow: Vec<String>,

    /// Re-read the catalog file this often even without a file event, in seconds (0: only on
    /// events and SIGHUP).
    #[arg(long, env = "MCP_FLEET_CATALOG_POLL_SECS", default_value_t = 10)]
    pub(crate) catalog_poll_secs: u64,

    /// When listen streams hear of a catalog change: `fleet` — once, when every live replica
    /// serves the new revision (or after --convergence-timeout-secs); `immediate` — at once,
    /// from each replica that changes.
    #[arg(long, env = "MCP_FLEET_CATALOG_NOTIFICATIONS", value_enum, default_value_t = NotifyMode::Fleet)]
    pub(crate) catalog_notifications: NotifyMode,

    /// A replica silent on the bus for this long has left the fleet, in seconds (it announces
    /// itself every fifth of it). Every replica must use the same value.
    #[arg(long, env = "MCP_FLEET_MEMBERSHIP_TTL_SECS", default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) membership_ttl_secs: u64,

    /// How long the fleet may disagree on a catalog revision before listen streams are told
    /// anyway (a warning names the laggards; streams hear again once it agrees), in seconds.
    #[arg(long, env = "MCP_FLEET_CONVERGENCE_TIMEOUT_SECS", default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) convergence_timeout_secs: u64,

    /// OAuth: the authorization server's issuer identifier (tokens' `iss` must equal it). With
    /// --auth-audience it makes /mcp a resource server: every request needs a bearer token
    /// (401/403 with WWW-Authenticate otherwise) and /.well-known/oauth-protected-resource
    /// describes how to get one. Without both, every request is served.
    #[arg(long, env = "MCP_FLEET_AUTH_ISSUER")]
    pub(crate) auth_issuer: Option<String>,

    /// OAuth: the canonical public URL of this /mcp endpoint (e.g.
    /// `https://mcp.example.com/mcp`); tokens' `aud` must contain it (RFC 8707).
    #[arg(long, env = "MCP_FLEET_AUTH_AUDIENCE")]
    pub(crate) auth_audience: Option<String>,

    /// OAuth: the issuer's JWKS URL (default: discovered from the issuer's metadata).
    #[arg(long, env = "MCP_FLEET_AUTH_JWKS_URL")]
    pub(crate) auth_jwks_url: Option<String>,

    /// OAuth: the claim naming the caller's tenant (a dotted path such as org.id); tokens
    /// without it are refused, and a caller's listen streams hear only global changes and
    /// those of its tenant.
    #[arg(long, env = "MCP_FLEET_AUTH_TENANT_CLAIM")]
    pub(crate) auth_tenant_claim: Option<String>,

    /// OAuth: scopes every request needs, comma-separated (403 insufficient_scope without
    /// them).
    #[arg(long, env = "MCP_FLEET_AUTH_SCOPES")]
    pub(crate) auth_scopes: Option<String>,

    /// OAuth: what a token header's `typ` may say. `reject-other-types` (the default): none,
    /// `JWT` or `at+jwt`, so another kind of JWT from the issuer cannot pass for an access
    /// token; `require-access-token`: only `at+jwt` (RFC 9068); `off`: no check.
    #[arg(long, env = "MCP_FLEET_AUTH_TOKEN_TYPE", value_enum)]
    pub(crate) auth_token_type: Option<TokenTypeMode>,

    /// OAuth: the longest the issuer's signing keys are used without a successful refetch, in
    /// seconds; past it tokens are refused until the JWKS answers again (fail closed). At
    /// least the JWKS cache age (default: the server's, 24 h).
    #[arg(long, env = "MCP_FLEET_AUTH_JWKS_HARD_MAX_AGE_SECS", value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) auth_jwks_hard_max_age_secs: Option<u64>,

    /// OAuth: verified tokens remembered (by digest, until their exp or the next key set), so a
    /// client's repeated token is checked once; 0 turns the cache off (default: the server's,
    /// 10 000).
    #[arg(long, env = "MCP_FLEET_AUTH_VERIFIED_TOKEN_CACHE")]
    pub(crate) auth_verified_token_cache: Option<usize>,

    /// Most open listen streams one authenticated principal (token subject) may hold on this
    /// replica; past it a listen gets 429. Callers without auth are bounded by --max-streams
    /// only.
    #[arg(long, env = "MCP_FLEET_MAX_STREAMS_PER_PRINCIPAL", default_value_t = 100)]
    pub(crate) max_streams_per_principal: usize,

    /// Requests per second one principal (token subject) may send to this replica; past it
    /// 429 with Retry-After. Without auth every caller shares one allowance. 0: no limit.
    #[arg(long, env = "MCP_FLEET_RATE_PER_PRINCIPAL", default_value_t = 0.0)]
    pub(crate) rate_per_principal: f64,

    /// Requests one principal may send at once after an idle period (default: twice
    /// --rate-per-principal, at least 1).
    #[arg(long, env = "MCP_FLEET_RATE_BURST_PER_PRINCIPAL")]
    pub(crate) rate_burst_per_principal: Option<u32>,

    /// Where --max-streams-per-principal and --rate-per-principal are counted: `replica` (the
    /// default; no round trip, N replicas admit N times as much) or `fleet` (in the bus's
    /// keyspace: one round trip per request when a rate is set).
    #[arg(long, env = "MCP_FLEET_LIMIT_SCOPE", value_enum, default_value_t = LimitScopeMode::Replica)]
    pub(crate) limit_scope: LimitScopeMode,

    /// File holding the HMAC key that signs MRTR requestState (at least 32 bytes, surrounding
    /// whitespace ignored; a mounted Secret, the same on every replica), or several keys one
    /// per line for rotation (the first signs). Without it state is signed with a per-process
    /// key, so retries must return to the same replica.
    #[arg(long, env = "MCP_FLEET_REQUEST_STATE_KEY_FILE")]
    pub(crate) request_state_key_file: Option<PathBuf>,

    /// How 2025-era clients (initialize, Mcp-Session-Id, the GET stream) are served:
    /// `sessions` — with sessions kept in the bus, so any replica serves any request;
    /// `stateless` — every POST alone, no session id, GET/DELETE 405 (no server-to-client
    /// requests); `off` — refused with -32022, as a 2026-only server does.
    #[arg(long, env = "MCP_FLEET_LEGACY", value_enum, default_value_t = LegacyMode::Sessions)]
    pub(crate) legacy: LegacyMode,

    /// Serve a 2025-era session record read less than this many milliseconds ago without
    /// reading the bus's keyspace again (0, the default: read it for every request). A session
    /// ended or (un)subscribed elsewhere is dropped at once; a log level set on another
    /// replica shows here within the window.
    #[arg(long, env = "MCP_FLEET_SESSION_CACHE_MS", default_value_t = 0)]
    pub(crate) session_cache_ms: u64,

    /// A 2025-era session unused for this long ends, in seconds (requests and an open GET
    /// stream renew it).
    #[arg(long, env = "MCP_FLEET_SESSION_TTL_SECS", default_value_t = 1800, value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) session_ttl_secs: u64,

    /// Most open 2025-era GET streams on this node (past it a GET gets 503).
    #[arg(long, env = "MCP_FLEET_MAX_SESSION_STREAMS", default_value_t = 10_000)]
    pub(crate) max_session_streams: usize,

    /// Most 2025-era sessions one authenticated principal may hold across the fleet (past it
    /// initialize gets 429).
    #[arg(long, env = "MCP_FLEET_MAX_SESSIONS_PER_PRINCIPAL", default_value_t = 100)]
    pub(crate) max_sessions_per_principal: usize,

    /// Most 2025-era sessions one client address may hold across the fleet when callers are
    /// anonymous (no authenticator; loopback exempt; past it initialize gets 429).
    #[arg(long, env = "MCP_FLEET_MAX_SESSIONS_PER_ADDRESS", default_value_t = 1_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) max_sessions_per_address: u64,

    /// Largest capabilities plus clientInfo a 2025-era initialize may carry, in bytes of JSON
    /// (past it -32602 with 400).
    #[arg(long, env = "MCP_FLEET_MAX_CAPABILITIES_BYTES", default_value_t = 16 * 1024, value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) max_capabilities_bytes: u64,

    /// Most resources one 2025-era session may follow with resources/subscribe (past it
    /// -32602).
    #[arg(long, env = "MCP_FLEET_MAX_SUBSCRIPTIONS_PER_SESSION", default_value_t = 1_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) max_subscriptions_per_session: u64,

    /// Most messages in one 2025-03-26 JSON-RPC batch (past it 413); each message counts as
    /// one request against --rate-per-principal.
    #[arg(long, env = "MCP_FLEET_MAX_BATCH_MESSAGES", default_value_t = 64, value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) max_batch_messages: u64,

    /// How long a call waits for a 2025-era client's answer to a sampling, elicitation or
    /// roots request, in seconds.
    #[arg(long, env = "MCP_FLEET_SERVER_REQUEST_TIMEOUT_SECS", default_value_t = 300, value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) server_request_timeout_secs: u64,
}

/// `--legacy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum LegacyMode {
    /// Sessions in the fleet.
    Sessions,
    /// Every POST alone.
    Stateless,
    /// Refused.
    Off,
}

/// `--auth-token-type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum TokenTypeMode {
    /// No check.
    Off,
    /// None, `JWT` or `at+jwt`.
    RejectOtherTypes,
    /// Only `at+jwt`.
    RequireAccessToken,
}

impl From<TokenTypeMode> for TokenTypeCheck {
    fn from(mode: TokenTypeMode) -> Self {
        match mode {
            TokenTypeMode::Off => TokenTypeCheck::Off,
            TokenTypeMode::RejectOtherTypes => TokenTypeCheck::RejectOtherTypes,
            TokenTypeMode::RequireAccessToken => TokenTypeCheck::RequireAccessToken,
        }
    }
}

/// `--limit-scope`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum LimitScopeMode {
    /// Per replica.
    Replica,
    /// Across the fleet.
    Fleet,
}

impl From<LimitScopeMode> for LimitScope {
    fn from(mode: LimitScopeMode) -> Self {
        match mode {
            LimitScopeMode::Replica => LimitScope::Replica,
            LimitScopeMode::Fleet => LimitScope::Fleet,
        }
    }
}

/// `--catalog-notifications`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum NotifyMode {
    /// Once the fleet converged.
    Fleet,
    /// At once.
    Immediate,
}

impl Config {
    /// This node's id on the bus: the configured one, else `HOSTNAME-pid`.
    pub(crate) fn node_id(&self) -> String {
        self.node_id.clone().unwrap_or_else(|| {
            let host = std::env::var("HOSTNAME").unwrap_or_else(|_| "node".into());
            format!("{host}-{}", std::process::id())
        })
    }

    pub(crate) fn keepalive(&self) -> Duration {
        Duration::from_secs(self.keepalive_secs)
    }

    pub(crate) fn catalog_poll(&self) -> Option<Duration> {
        (self.catalog_poll_secs > 0).then(|| Duration::from_secs(self.catalog_poll_secs))
    }

    pub(crate) fn catalog_notifications(&self) -> CatalogAnnouncePolicy {
        match self.catalog_notifications {
            NotifyMode::Fleet => CatalogAnnouncePolicy::FleetConverged,
            NotifyMode::Immediate => CatalogAnnouncePolicy::Immediate,
        }
    }

    pub(crate) fn legacy(&self) -> Era2025Options {
        let options = match self.legacy {
            LegacyMode::Off => return Era2025Options::disabled(),
            LegacyMode::Stateless => Era2025Options::default().sessions(false),
            LegacyMode::Sessions => Era2025Options::default(),
        };
        options
            .session_ttl(Duration::from_secs(self.session_ttl_secs))
            .max_streams(self.max_session_streams)
            .max_sessions_per_principal(self.max_sessions_per_principal)
            .max_batch_messages(saturating(self.max_batch_messages))
            .max_sessions_per_address(saturating(self.max_sessions_per_address))
            .max_capabilities_bytes(saturating(self.max_capabilities_bytes))
            .max_subscriptions_per_session(saturating(self.max_subscriptions_per_session))
            .server_request_timeout(Duration::from_secs(self.server_request_timeout_secs))
            .session_cache_for(Duration::from_millis(self.session_cache_ms))
    }

    pub(crate) fn max_stream_lifetime(&self) -> Option<Duration> {
        (self.max_stream_lifetime_secs > 0).then(|| Duration::from_secs(self.max_stream_lifetime_secs))
    }
}

/// A count from a flag, as a `usize` (a 32-bit target's largest past it).
fn saturating(count: u64) -> usize {
    usize::try_from(count).unwrap_or(usize::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_output_shows_no_secret() {
        let config = Config::try_parse_from([
            "mcp-fleet",
            "--bus",
            "rediss://app:SECRET-1@redis:6380/0?stream=s",
            "--admin-token",
            "SECRET-2",
            "--otlp-endpoint",
            "http://u:SECRET-3@collector:4318",
        ])
        .expect("valid flags");
        let shown = format!("{config:?}");
        assert!(shown.contains("rediss://app:***@redis:6380/0?stream=s"), "{shown}");
        assert!(!shown.contains("SECRET"), "{shown}");
        assert_eq!(config.bus.expose(), "rediss://app:SECRET-1@redis:6380/0?stream=s");
    }
}
