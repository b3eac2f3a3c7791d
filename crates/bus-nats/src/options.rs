//! [`NatsBusOptions`]: where the NATS bus connects, which mode it runs in, and its limits.

use std::path::PathBuf;
use std::time::Duration;

use mcp_fleet_bus::BusError;
use mcp_fleet_bus::redact::{MASK, redact_url};
use mcp_fleet_bus::shard::Routing;

/// Default JetStream stream name. Every replica of a fleet must use the same one.
pub const DEFAULT_STREAM_NAME: &str = "MCP_FLEET_EVENTS";
/// Default subject prefix; events go to `<prefix>.<scope>.<kind>`.
pub const DEFAULT_SUBJECT_PREFIX: &str = "mcp-fleet.events";
/// Default most messages the stream retains: how far a disconnected node may catch up.
pub const DEFAULT_MAX_MESSAGES: i64 = 100_000;
/// Default longest time the stream retains a message.
pub const DEFAULT_MAX_AGE: Duration = Duration::from_secs(24 * 60 * 60);
/// Default bound on one publish (JetStream ack, or core flush).
pub const DEFAULT_PUBLISH_TIMEOUT: Duration = Duration::from_secs(2);
/// Default bound on the initial connection.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
/// Default first delay before recreating a failed JetStream consumer (doubles up to the max).
pub const DEFAULT_RECONNECT_MIN: Duration = Duration::from_millis(100);
/// Default longest delay between consumer recreation attempts.
pub const DEFAULT_RECONNECT_MAX: Duration = Duration::from_secs(5);
/// Most JetStream streams a bus may be split into: every node may read each on a consumer of
/// its own.
pub const MAX_SHARDS: usize = 256;
/// Default JetStream stream replicas (set when the bus creates the stream).
pub const DEFAULT_REPLICAS: usize = 1;
/// Default interval of the JetStream consumer's idle heartbeat and of its watch on the stream
/// (see the `jetstream` module): how soon a restarted server, a lost consumer or a recreated
/// stream is noticed while nothing arrives.
pub const DEFAULT_HEALTH_INTERVAL: Duration = Duration::from_secs(1);

/// Which NATS delivery the bus uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum NatsMode {
    /// JetStream: persisted, acknowledged publishes, replay after reconnects, versions from
    /// the stream sequence. The default.
    #[default]
    JetStream,
    /// Core NATS: at-most-once, lower latency, node-local versions; see the crate docs.
    Core,
}

/// Credentials beyond those in the URL (`nats://user:pass@host` is read by async-nats itself).
/// Its `Debug` shows which kind, never the password or token.
#[derive(Clone, Default, PartialEq, Eq)]
pub enum NatsAuth {
    /// No credentials, or only those in the URL.
    #[default]
    None,
    /// User and password.
    UserPassword {
        /// User name.
        user: String,
        /// Password.
        password: String,
    },
    /// An authentication token.
    Token(String),
    /// A `.creds` file (JWT and NKey seed).
    CredentialsFile(PathBuf),
}

impl std::fmt::Debug for NatsAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NatsAuth::None => f.write_str("None"),
            NatsAuth::UserPassword { user, .. } => {
                f.debug_struct("UserPassword").field("user", user).field("password", &MASK).finish()
            }
            NatsAuth::Token(_) => f.debug_tuple("Token").field(&MASK).finish(),
            NatsAuth::CredentialsFile(path) => f.debug_tuple("CredentialsFile").field(path).finish(),
        }
    }
}

/// Options of a [`NatsBus`](crate::NatsBus). Build with [`NatsBusOptions::new`], then adjust
/// the public fields. Its `Debug` masks the URL's credentials and [`NatsAuth`]'s secrets, so
/// the options can be logged.
///
/// ```
/// let mut options = mcp_fleet_bus_nats::NatsBusOptions::new("nats://app:s3cret@nats:4222", "node-a");
/// options.auth = mcp_fleet_bus_nats::NatsAuth::Token("t0ken".into());
/// let printed = format!("{options:?}");
/// assert!(!printed.contains("s3cret") && !printed.contains("t0ken"));
/// assert!(printed.contains("nats:4222") && printed.contains("node-a"));
/// ```
#[derive(Clone)]
#[non_exhaustive]
pub struct NatsBusOptions {
    /// Server address(es), `nats://host:4222`, comma-separated for several
    /// (`nats://a:4222,b:4222,c:4222`; later ones may omit the scheme). The client connects
    /// to any of them and fails over between them.
    pub url: String,
    /// This node's id: the `origin` of its events and its NATS connection name.
    pub node_id: String,
    /// Delivery mode (default [`NatsMode::JetStream`]).
    pub mode: NatsMode,
    /// Credentials (default none).
    pub auth: NatsAuth,
    /// JetStream stream name (default [`DEFAULT_STREAM_NAME`]); created if missing, used as is
    /// if present. It must hold only this bus's subjects (sequences are used to find gaps).
    pub stream_name: String,
    /// Subject prefix (default [`DEFAULT_SUBJECT_PREFIX`]).
    pub subject_prefix: String,
    /// Retention: most messages (default [`DEFAULT_MAX_MESSAGES`]).
    pub max_messages: i64,
    /// Retention: oldest message age (default [`DEFAULT_MAX_AGE`]).
    pub max_age: Duration,
    /// Bound on one publish (default [`DEFAULT_PUBLISH_TIMEOUT`]).
    pub publish_timeout: Duration,
    /// Bound on the initial connect (default [`DEFAULT_CONNECT_TIMEOUT`]).
    pub connect_timeout: Duration,
    /// First consumer recreation delay (default [`DEFAULT_RECONNECT_MIN`]).
    pub reconnect_min: Duration,
    /// Longest consumer recreation delay (default [`DEFAULT_RECONNECT_MAX`]).
    pub reconnect_max: Duration,
    /// Replicas of the JetStream stream when this bus creates it (default
    /// [`DEFAULT_REPLICAS`]; 3 on a 3-server cluster survives one server). An existing stream
    /// is used as it is.
    pub replicas: usize,
    /// JetStream consumer heartbeat and stream watch interval (default
    /// [`DEFAULT_HEALTH_INTERVAL`]).
    pub health_interval: Duration,
    /// JetStream streams the bus is split into (URL `shards=N`, default 1, at most
    /// [`MAX_SHARDS`]). With more than one, shard `i` is the stream `<stream_name>-<i>` holding
    /// `<subject_prefix>-<i>.>`; an event goes to the shard of its scope, or of its URI when
    /// unscoped, or to shard 0 for fleet-wide changes (see [`mcp_fleet_bus::shard`]). The bus
    /// then keeps order per scope or URI only: its events are unpositioned (version 0) and it
    /// names no position. Every replica must use the same number.
    pub shards: usize,
    /// Which shards this node reads (URL `routing=interest`; default [`Routing::All`]). With
    /// [`Routing::Interest`] (it needs `shards` > 1) a node consumes shard 0 and the shards its
    /// streams follow a scope or URI on, so a tenant's events cost only the nodes serving it;
    /// replicas may differ.
    pub routing: Routing,
}

impl std::fmt::Debug for NatsBusOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NatsBusOptions")
            .field("url", &redact_url(&self.url))
            .field("node_id", &self.node_id)
            .field("mode", &self.mode)
            .field("auth", &self.auth)
            .field("stream_name", &self.stream_name)
            .field("subject_prefix", &self.subject_prefix)
            .field("max_messages", &self.max_messages)
            .field("max_age", &self.max_age)
            .field("publish_timeout", &self.publish_timeout)
            .field("connect_timeout", &self.connect_timeout)
            .field("reconnect_min", &self.reconnect_min)
            .field("reconnect_max", &self.reconnect_max)
            .field("replicas", &self.replicas)
            .field("health_interval", &self.health_interval)
            .field("shards", &self.shards)
            .field("routing", &self.routing)
            .finish()
    }
}

impl NatsBusOptions {
    /// Options for `url` with every default.
    pub fn new(url: &str, node_id: &str) -> Self {
        NatsBusOptions {
            url: url.to_owned(),
            node_id: node_id.to_owned(),
            mode: NatsMode::default(),
            auth: NatsAuth::default(),
            stream_name: DEFAULT_STREAM_NAME.to_owned(),
            subject_prefix: DEFAULT_SUBJECT_PREFIX.to_owned(),
            max_messages: DEFAULT_MAX_MESSAGES,
            max_age: DEFAULT_MAX_AGE,
            publish_timeout: DEFAULT_PUBLISH_TIMEOUT,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            reconnect_min: DEFAULT_RECONNECT_MIN,
            reconnect_max: DEFAULT_RECONNECT_MAX,
            replicas: DEFAULT_REPLICAS,
            health_interval: DEFAULT_HEALTH_INTERVAL,
            shards: 1,
            routing: Routing::All,
        }
    }

    /// Options from a URL whose query may set what the fields set:
    /// `nats://a:4222,b:4222?mode=core&stream=NAME&prefix=a.b&token=T&creds=/path/x.creds&max_messages=N&max_age_secs=N&replicas=N&shards=N&routing=interest`.
    /// Unknown parameters are an error, so a typo never silently falls back to a default.
    ///
    /// ```
    /// use mcp_fleet_bus_nats::{NatsBusOptions, NatsMode};
    /// let o = NatsBusOptions::from_url("nats://127.0.0.1:4222?mode=core&prefix=fleet.a", "n1").unwrap();
    /// assert_eq!((o.url.as_str(), o.mode, o.subject_prefix.as_str()), ("nats://127.0.0.1:4222", NatsMode::Core, "fleet.a"));
    /// ```
    pub fn from_url(url: &str, node_id: &str) -> Result<Self, BusError> {
        let (base, query) = url.split_once('?').unwrap_or((url, ""));
        let mut options = NatsBusOptions::new(base, node_id);
        let invalid = |key: &str, value: &str| BusError::Config(format!("invalid nats URL parameter {key}={value:?}"));
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            match key {
                "mode" => {
                    options.mode = match value {
                        "jetstream" => NatsMode::JetStream,
                        "core" => NatsMode::Core,
                        _ => return Err(invalid(key, value)),
                    }
                }
                "stream" => options.stream_name = value.to_owned(),
                "prefix" => options.subject_prefix = value.to_owned(),
                "token" => options.auth = NatsAuth::Token(value.to_owned()),
                "creds" => options.auth = NatsAuth::CredentialsFile(PathBuf::from(value)),
                "max_messages" => options.max_messages = value.parse().map_err(|_| invalid(key, value))?,
                "max_age_secs" => {
                    options.max_age = Duration::from_secs(value.parse().map_err(|_| invalid(key, value))?);
                }
                "replicas" => options.replicas = value.parse().map_err(|_| invalid(key, value))?,
                "shards" => options.shards = value.parse().map_err(|_| invalid(key, value))?,
                "routing" => options.routing = value.parse().map_err(|_| invalid(key, value))?,
                _ => return Err(BusError::Config(format!("unknown nats URL parameter {key:?}"))),
            }
        }
        options.validate()?;
        Ok(options)
    }

    /// The subject filter matching every event of this bus (`<prefix>.>`).
    pub fn subject_filter(&self) -> String {
        format!("{}.>", self.subject_prefix)
    }

    pub(crate) fn validate(&self) -> Result<(), BusError> {
        let bad_prefix = self.subject_prefix.is_empty()
            || self.subject_prefix.split('.').any(|t| t.is_empty() || t.contains(['*', '>', ' ']));
        if bad_prefix {
            return Err(BusError::Config(format!("invalid nats subject prefix {:?}", self.subject_prefix)));
        }
        if self.stream_name.is_empty() || self.stream_name.contains(['.', '*', '>', ' ']) {
            return Err(BusError::Config(format!("invalid jetstream stream name {:?}", self.stream_name)));
        }
        if self.publish_timeout.is_zero() || self.connect_timeout.is_zero() || self.health_interval.is_zero() {
            return Err(BusError::Config("nats timeouts and the health interval must be positive".into()));
        }
        if !(1..=5).contains(&self.replicas) {
            return Err(BusError::Config(format!("jetstream replicas must be 1 to 5, not {}", self.replicas)));
        }
        self.check_shards()?;
        self.server_addrs()?;
        Ok(())
    }

    /// The servers of [`NatsBusOptions::url`], parsed. A later address without a scheme takes
    /// the first one's scheme and credentials (`nats://u:p@a:4222,b:4222`).
    /// Shards need stored history, and interest routing needs more than one shard (with one,
    /// every node reads everything anyway: an operator asking for routing should hear so).
    fn check_shards(&self) -> Result<(), BusError> {
        if self.shards == 0 || self.shards > MAX_SHARDS {
            return Err(BusError::Config(format!("nats shards must be 1 to {MAX_SHARDS}, not {}", self.shards)));
        }
        if self.shards > 1 && self.mode != NatsMode::JetStream {
            return Err(BusError::Config("nats shards need mode=jetstream: core NATS has no streams".into()));
        }
        if self.routing == Routing::Interest && self.shards == 1 {
            return Err(BusError::Config(
                "routing=interest needs shards > 1 (e.g. shards=8): with one shard every node reads every event".into(),
            ));
        }
        Ok(())
    }

    /// Shard `index`'s options: the same with that shard's stream and subject prefix — the
    /// configured ones when there is one shard, else `<stream_name>-<index>` and
    /// `<subject_prefix>-<index>` (disjoint from each other's subjects, as JetStream requires).
    /// Membership and keyspaces keep the configured names.
    ///
    /// ```
    /// let mut o = mcp_fleet_bus_nats::NatsBusOptions::new("nats://h:4222", "n");
    /// assert_eq!(o.shard(3).stream_name, o.stream_name);
    /// o.shards = 8;
    /// assert_eq!(o.shard(3).stream_name, "MCP_FLEET_EVENTS-3");
    /// assert_eq!(o.shard(3).subject_filter(), "mcp-fleet.events-3.>");
    /// ```
    pub fn shard(&self, index: usize) -> NatsBusOptions {
        if self.shards == 1 {
            return self.clone();
        }
        NatsBusOptions {
            stream_name: format!("{}-{index}", self.stream_name),
            subject_prefix: format!("{}-{index}", self.subject_prefix),
            ..self.clone()
        }
    }

    pub(crate) fn server_addrs(&self) -> Result<Vec<async_nats::ServerAddr>, BusError> {
        let mut parts = self.url.split(',').map(str::trim).filter(|p| !p.is_empty());
        let first = parts.next().ok_or_else(|| BusError::Config("empty nats URL".into()))?;
        let prefix = first.find("://").map(|i| {
            let rest = &first[i + 3..];
            let userinfo = rest.rfind('@').map(|at| &rest[..=at]).unwrap_or("");
            format!("{}{userinfo}", &first[..i + 3])
        });
        std::iter::once(first.to_owned())
            .chain(parts.map(|p| match (&prefix, p.contains("://")) {
                (Some(prefix), false) => format!("{prefix}{p}"),
                _ => p.to_owned(),
            }))
            .map(|addr| {
                addr.parse().map_err(|e| BusError::Config(format!("invalid nats server address {addr:?}: {e}")))
            })
            .collect()
    }
}

#[cfg(test)]
mod url_tests {
    use super::*;

    #[test]
    fn url_parameters_set_options_and_typos_are_errors() {
        let o = NatsBusOptions::from_url("nats://h:1?stream=S&token=t&max_messages=5&max_age_secs=60", "n").unwrap();
        assert_eq!((o.stream_name.as_str(), o.max_messages, o.max_age), ("S", 5, Duration::from_secs(60)));
        assert_eq!(o.auth, NatsAuth::Token("t".into()));
        assert!(NatsBusOptions::from_url("nats://h:1?mode=fast", "n").is_err());
        assert!(NatsBusOptions::from_url("nats://h:1?strem=S", "n").is_err());
        assert!(NatsBusOptions::from_url("nats://h:1?prefix=a..b", "n").is_err());
        assert!(NatsBusOptions::from_url("nats://h:1?replicas=7", "n").is_err());
    }

    #[test]
    fn shards_and_routing_from_the_url() {
        let o = NatsBusOptions::from_url("nats://h:1?shards=8&routing=interest", "n").unwrap();
        assert_eq!((o.shards, o.routing), (8, Routing::Interest));
        let error = |url: &str| NatsBusOptions::from_url(url, "n").err().map(|e| e.to_string()).unwrap_or_default();
        assert!(error("nats://h:1?routing=interest").contains("needs shards > 1"));
        assert!(error("nats://h:1?shards=4&mode=core").contains("need mode=jetstream"));
        assert!(error("nats://h:1?shards=0").contains("1 to 256"));
        assert!(error("nats://h:1?shards=4&routing=some").contains("routing=\"some\""));
    }

    #[test]
    fn several_servers_share_the_first_ones_scheme_and_credentials() {
        let o = NatsBusOptions::from_url("nats://u:p@a:4222,b:4223, nats://c:4224?replicas=3", "n").unwrap();
        assert_eq!(o.replicas, 3);
        let addrs = o.server_addrs().unwrap();
        let shown: Vec<String> = addrs.iter().map(|a| format!("{}:{}", a.host(), a.port())).collect();
        assert_eq!(shown, ["a:4222", "b:4223", "c:4224"]);
        assert_eq!(addrs[1].username(), Some("u"));
        assert!(NatsBusOptions::from_url("nats://a:1,::bad::", "n").is_err());
    }
}
