//! [`NatsBusOptions`]: where the NATS bus connects, which mode it runs in, and its limits.

use std::path::PathBuf;
use std::time::Duration;

use mcp_fleet_bus::BusError;

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
#[derive(Debug, Clone, Default, PartialEq, Eq)]
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

/// Options of a [`NatsBus`](crate::NatsBus). Build with [`NatsBusOptions::new`], then adjust
/// the public fields.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct NatsBusOptions {
    /// Server address(es), `nats://host:4222` (comma-separated for several).
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
        }
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
        if self.publish_timeout.is_zero() || self.connect_timeout.is_zero() {
            return Err(BusError::Config("nats timeouts must be positive".into()));
        }
        Ok(())
    }
}
