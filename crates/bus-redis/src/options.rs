//! [`RedisBusOptions`]: where the Redis bus connects (one server, or the primary that Redis
//! Sentinel names) and the limits it keeps. Parsing a plain URL is redis-rs's job; this file
//! holds the knobs, their defaults, the Sentinel URL form and the key layout.

use std::time::Duration;

use mcp_fleet_bus::BusError;
use redis::{ConnectionInfo, IntoConnectionInfo, RedisConnectionInfo};

/// Default stream key. Every replica of a fleet must use the same one.
pub const DEFAULT_STREAM_KEY: &str = "mcp-fleet:events";
/// Default approximate cap on the stream length (`XADD MAXLEN ~`): how much history a node
/// that was disconnected may catch up on before it sees a gap.
pub const DEFAULT_MAX_LEN: u64 = 100_000;
/// Default bound on one publish (connect + script round trip).
pub const DEFAULT_PUBLISH_TIMEOUT: Duration = Duration::from_secs(2);
/// Default `XREAD BLOCK` time: how long one tailing read waits for new entries. An idle read
/// that ends this way also checks the stream's epoch, so it bounds how long a lost history
/// (restart, failover) goes unnoticed while nobody publishes.
pub const DEFAULT_BLOCK_TIMEOUT: Duration = Duration::from_secs(2);
/// Default first delay before reconnecting the tailing connection (doubles up to the max).
pub const DEFAULT_RECONNECT_MIN: Duration = Duration::from_millis(100);
/// Default longest delay between reconnect attempts.
pub const DEFAULT_RECONNECT_MAX: Duration = Duration::from_secs(5);
/// Default most entries read per `XREAD`.
pub const DEFAULT_READ_COUNT: usize = 512;

/// Where the bus finds its Redis primary.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum RedisEndpoint {
    /// One server: `redis://`, `rediss://` (TLS) or `redis+unix://`, including user, password
    /// and database as redis-rs reads them (`redis://user:pass@host:6379/2`).
    Direct(ConnectionInfo),
    /// The primary that Redis Sentinel names, asked again at every (re)connect, so a failover
    /// is followed.
    Sentinel {
        /// The sentinels, tried in order.
        sentinels: Vec<ConnectionInfo>,
        /// The monitored master's name.
        master_name: String,
        /// Credentials, database and protocol for the primary itself.
        primary: RedisConnectionInfo,
        /// Whether the primary is reached over TLS (`rediss+sentinel://`).
        tls: bool,
    },
}

/// Options of a [`RedisBus`](crate::RedisBus). Build with [`RedisBusOptions::new`] or
/// [`RedisBusOptions::from_url`], then adjust the public fields.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct RedisBusOptions {
    /// Where the primary is.
    pub endpoint: RedisEndpoint,
    /// The stream key (default [`DEFAULT_STREAM_KEY`]); the version counter and the epoch live
    /// in keys of the same hash slot (see [`RedisBusOptions::version_key`]), so the bus works on
    /// cluster-mode Redis too. The stream must be written only by this bus.
    pub stream_key: String,
    /// Approximate stream length cap (default [`DEFAULT_MAX_LEN`]).
    pub max_len: u64,
    /// This node's id, stamped as `origin` on published events.
    pub node_id: String,
    /// Bound on one publish (default [`DEFAULT_PUBLISH_TIMEOUT`]).
    pub publish_timeout: Duration,
    /// `XREAD BLOCK` time (default [`DEFAULT_BLOCK_TIMEOUT`]).
    pub block_timeout: Duration,
    /// First reconnect delay (default [`DEFAULT_RECONNECT_MIN`]).
    pub reconnect_min: Duration,
    /// Longest reconnect delay (default [`DEFAULT_RECONNECT_MAX`]).
    pub reconnect_max: Duration,
    /// Most entries per read (default [`DEFAULT_READ_COUNT`]).
    pub read_count: usize,
    /// Replicas that must hold a publish (`WAIT`, within half the publish timeout) before it
    /// resolves `Ok`; fewer fail it. Default 1 behind Sentinel, 0 for one server (URL
    /// `min_replica_acks=N`). It keeps a primary that was cut off from its replicas and
    /// sentinels (a split brain) from acknowledging events that its demotion will discard:
    /// such a primary has no replica to acknowledge them.
    pub min_replica_acks: usize,
}

impl RedisBusOptions {
    /// Options for one server at `url` (`redis://`, `rediss://`, `redis+unix://`) with every
    /// default; fails with [`BusError::Config`] on a bad URL.
    pub fn new(url: &str, node_id: &str) -> Result<Self, BusError> {
        let connection = url.into_connection_info().map_err(|e| BusError::Config(format!("redis url: {e}")))?;
        Ok(Self::with_endpoint(RedisEndpoint::Direct(connection), node_id))
    }

    /// Options for `endpoint` with every default.
    pub fn with_endpoint(endpoint: RedisEndpoint, node_id: &str) -> Self {
        let min_replica_acks = usize::from(matches!(endpoint, RedisEndpoint::Sentinel { .. }));
        RedisBusOptions {
            min_replica_acks,
            endpoint,
            stream_key: DEFAULT_STREAM_KEY.to_owned(),
            max_len: DEFAULT_MAX_LEN,
            node_id: node_id.to_owned(),
            publish_timeout: DEFAULT_PUBLISH_TIMEOUT,
            block_timeout: DEFAULT_BLOCK_TIMEOUT,
            reconnect_min: DEFAULT_RECONNECT_MIN,
            reconnect_max: DEFAULT_RECONNECT_MAX,
            read_count: DEFAULT_READ_COUNT,
        }
    }

    /// Options from a URL. One server: `redis://…` or `rediss://…` as redis-rs reads it.
    /// Sentinel: `redis+sentinel://[user:password@]host:port[,host:port…]/MASTER_NAME[/DB]`
    /// (`rediss+sentinel://` for TLS), where the credentials and database are the primary's;
    /// `sentinel_username=` and `sentinel_password=` set the sentinels' own. Either form takes
    /// `stream=KEY`, `maxlen=N` and `min_replica_acks=N`; a plain URL passes every other
    /// parameter to redis-rs (e.g. `protocol=resp3`), a Sentinel URL refuses unknown ones.
    ///
    /// ```
    /// use mcp_fleet_bus_redis::{RedisBusOptions, RedisEndpoint};
    /// let o = RedisBusOptions::from_url("redis://127.0.0.1:6379/2?stream=fleet-a&maxlen=500", "n1").unwrap();
    /// assert_eq!((o.stream_key.as_str(), o.max_len), ("fleet-a", 500));
    /// let s = RedisBusOptions::from_url("redis+sentinel://:pw@10.0.0.1:26379,10.0.0.2:26379/mymaster", "n1").unwrap();
    /// assert!(matches!(s.endpoint, RedisEndpoint::Sentinel { ref sentinels, .. } if sentinels.len() == 2));
    /// ```
    pub fn from_url(url: &str, node_id: &str) -> Result<Self, BusError> {
        let (base, query) = url.split_once('?').unwrap_or((url, ""));
        let mut params = QueryParams::parse(query)?;
        let mut options = match sentinel_scheme(base) {
            Some(tls) => {
                let endpoint = parse_sentinel(base, tls, &mut params)?;
                params.refuse_rest()?;
                Self::with_endpoint(endpoint, node_id)
            }
            None => Self::new(&params.rebuild(base), node_id)?,
        };
        options.stream_key = params.stream.unwrap_or(options.stream_key);
        options.max_len = params.max_len.unwrap_or(options.max_len);
        options.min_replica_acks = params.min_replica_acks.unwrap_or(options.min_replica_acks);
        Ok(options)
    }

    /// The same options with another stream key.
    pub fn with_stream_key(mut self, stream_key: impl Into<String>) -> Self {
        self.stream_key = stream_key.into();
        self
    }

    /// The key of the version counter, in the stream key's hash slot.
    pub fn version_key(&self) -> String {
        self.sibling_key("version")
    }

    /// The key of the epoch record (epoch and the primary's replication id), in the stream
    /// key's hash slot.
    pub fn epoch_key(&self) -> String {
        self.sibling_key("epoch")
    }

    /// The key of the membership hash, in the stream key's hash slot.
    pub fn members_key(&self) -> String {
        self.sibling_key("members")
    }

    /// The prefix of the keyspace `name`'s keys, `<stream slot>:ks:<name>:`, in the stream key's
    /// hash slot: a record is `<prefix><key>` (a hash `{v, r}`), the revision counter
    /// `<prefix>#rev` (`#` is no key character, so no record collides with it).
    pub fn keyspace_prefix(&self, name: &str) -> String {
        self.sibling_key(&format!("ks:{name}:"))
    }

    /// `<hash tag of the stream key>:<suffix>`: a key Redis Cluster places in the same slot as
    /// the stream, so the scripts touching both run on one shard. A stream key that already has
    /// a hash tag (`{fleet}:events`) keeps it; any other is wrapped whole (`{mcp-fleet:events}`),
    /// which hashes exactly like the bare key.
    fn sibling_key(&self, suffix: &str) -> String {
        if has_hash_tag(&self.stream_key) {
            format!("{}:{suffix}", self.stream_key)
        } else {
            format!("{{{}}}:{suffix}", self.stream_key)
        }
    }

    /// The `CLIENT SETNAME` of this node's tailing connections, so an operator (or a test) can
    /// find them in `CLIENT LIST`. Spaces are replaced, as Redis forbids them in names.
    pub fn tail_client_name(&self) -> String {
        format!("mcp-fleet-tail:{}:{}", self.stream_key, self.node_id).replace([' ', '\n'], "_")
    }

    pub(crate) fn validate(&self) -> Result<(), BusError> {
        if self.stream_key.is_empty() {
            return Err(BusError::Config("empty redis stream key".into()));
        }
        if self.stream_key.contains('}') && !has_hash_tag(&self.stream_key) {
            // `{key}` would hash only the part before the `}`: another slot than the stream.
            return Err(BusError::Config(format!(
                "redis stream key {:?} has a `}}` but no hash tag: use a key like \"{{fleet}}:events\"",
                self.stream_key
            )));
        }
        if self.publish_timeout.is_zero() || self.block_timeout.is_zero() || self.read_count == 0 {
            return Err(BusError::Config("redis timeouts and read count must be positive".into()));
        }
        if let RedisEndpoint::Sentinel { sentinels, master_name, .. } = &self.endpoint
            && (sentinels.is_empty() || master_name.is_empty())
        {
            return Err(BusError::Config("a sentinel URL needs at least one sentinel and a master name".into()));
        }
        Ok(())
    }
}

/// Whether `key` holds a Redis Cluster hash tag: a `{` followed later by a `}` with at least
/// one character between them (the first such pair decides the slot).
fn has_hash_tag(key: &str) -> bool {
    key.find('{').is_some_and(|open| key[open + 1..].find('}').is_some_and(|len| len > 0))
}

/// `Some(tls)` for the Sentinel schemes.
fn sentinel_scheme(base: &str) -> Option<bool> {
    if base.starts_with("redis+sentinel://") {
        Some(false)
    } else if base.starts_with("rediss+sentinel://") {
        Some(true)
    } else {
        None
    }
}

/// The query parameters the bus reads itself; the rest is kept for redis-rs.
#[derive(Default)]
struct QueryParams {
    stream: Option<String>,
    max_len: Option<u64>,
    min_replica_acks: Option<usize>,
    sentinel_username: Option<String>,
    sentinel_password: Option<String>,
    rest: Vec<String>,
}

impl QueryParams {
    fn parse(query: &str) -> Result<Self, BusError> {
        let mut params = QueryParams::default();
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            match pair.split_once('=') {
                Some(("stream", key)) if !key.is_empty() => params.stream = Some(key.to_owned()),
                Some(("maxlen", n)) => {
                    let n = n.parse().map_err(|_| BusError::Config(format!("invalid redis URL maxlen {n:?}")))?;
                    params.max_len = Some(n);
                }
                Some(("min_replica_acks", n)) => {
                    let invalid = || BusError::Config(format!("invalid redis URL min_replica_acks {n:?}"));
                    params.min_replica_acks = Some(n.parse().map_err(|_| invalid())?);
                }
                Some(("sentinel_username", user)) => params.sentinel_username = Some(user.to_owned()),
                Some(("sentinel_password", password)) => params.sentinel_password = Some(password.to_owned()),
                _ => params.rest.push(pair.to_owned()),
            }
        }
        Ok(params)
    }

    /// `base` with the parameters redis-rs should see.
    fn rebuild(&self, base: &str) -> String {
        if self.rest.is_empty() { base.to_owned() } else { format!("{base}?{}", self.rest.join("&")) }
    }

    fn refuse_rest(&self) -> Result<(), BusError> {
        match self.rest.first() {
            Some(pair) => Err(BusError::Config(format!("unknown redis sentinel URL parameter {pair:?}"))),
            None => Ok(()),
        }
    }
}

/// Parse `redis+sentinel://[user:password@]h1:p1,h2:p2/MASTER[/DB]`.
fn parse_sentinel(base: &str, tls: bool, params: &mut QueryParams) -> Result<RedisEndpoint, BusError> {
    let invalid = |why: &str| BusError::Config(format!("invalid redis sentinel URL: {why}"));
    let rest = base.split_once("://").map(|(_, rest)| rest).ok_or_else(|| invalid("no scheme"))?;
    let (userinfo, rest) = match rest.rsplit_once('@') {
        Some((userinfo, rest)) => (Some(userinfo), rest),
        None => (None, rest),
    };
    let (hosts, path) = rest.split_once('/').ok_or_else(|| invalid("no /MASTER_NAME"))?;
    let mut path = path.split('/').filter(|s| !s.is_empty());
    let master_name = path.next().ok_or_else(|| invalid("no master name"))?.to_owned();
    let db =
        path.next().map(|db| db.parse::<i64>().map_err(|_| invalid("the database is not a number"))).transpose()?;
    let mut primary = RedisConnectionInfo::default().set_db(db.unwrap_or(0));
    if let Some((user, password)) = userinfo.map(|u| u.split_once(':').unwrap_or((u, ""))) {
        if !user.is_empty() {
            primary = primary.set_username(user);
        }
        if !password.is_empty() {
            primary = primary.set_password(password);
        }
    }
    let scheme = if tls { "rediss" } else { "redis" };
    let sentinels = hosts
        .split(',')
        .filter(|h| !h.is_empty())
        .map(|host| sentinel_info(&format!("{scheme}://{host}"), params))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(RedisEndpoint::Sentinel { sentinels, master_name, primary, tls })
}

fn sentinel_info(url: &str, params: &QueryParams) -> Result<ConnectionInfo, BusError> {
    let info =
        url.into_connection_info().map_err(|e| BusError::Config(format!("redis sentinel address {url}: {e}")))?;
    let mut settings = info.redis_settings().clone();
    if let Some(user) = &params.sentinel_username {
        settings = settings.set_username(user);
    }
    if let Some(password) = &params.sentinel_password {
        settings = settings.set_password(password);
    }
    Ok(info.set_redis_settings(settings))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_output_never_shows_a_password() {
        let direct = RedisBusOptions::new("redis://u:hunter22@example.invalid:6380/3", "n").expect("valid url");
        let url = "redis+sentinel://app:pr1mary@s1:26379/mymaster?sentinel_password=sent1nel";
        let sentinel = RedisBusOptions::from_url(url, "n").expect("valid sentinel url");
        for printed in [format!("{direct:?}"), format!("{sentinel:?}")] {
            assert!(
                !printed.contains("hunter22") && !printed.contains("pr1mary") && !printed.contains("sent1nel"),
                "{printed}"
            );
            assert!(printed.contains("redacted"), "{printed}");
        }
    }

    #[test]
    fn parses_urls_with_credentials_and_db() {
        let o = RedisBusOptions::new("redis://u:p@example.invalid:6380/3", "n 1").expect("valid url");
        let RedisEndpoint::Direct(info) = &o.endpoint else { panic!("direct") };
        assert_eq!(info.redis_settings().db(), 3);
        assert_eq!(o.tail_client_name(), "mcp-fleet-tail:mcp-fleet:events:n_1");
        assert!(RedisBusOptions::new("http://x", "n").is_err());
    }

    #[test]
    fn sentinel_urls_name_sentinels_master_and_primary_credentials() {
        let url = "redis+sentinel://app:secret@s1:26379,s2:26380/mymaster/4?stream=k&sentinel_password=sp&maxlen=9";
        let o = RedisBusOptions::from_url(url, "n").expect("valid sentinel url");
        let RedisEndpoint::Sentinel { sentinels, master_name, primary, tls } = &o.endpoint else { panic!("sentinel") };
        assert_eq!((master_name.as_str(), *tls, o.stream_key.as_str(), o.max_len), ("mymaster", false, "k", 9));
        assert_eq!((primary.username(), primary.password(), primary.db()), (Some("app"), Some("secret"), 4));
        assert_eq!(sentinels.len(), 2);
        assert_eq!(sentinels[1].addr().to_string(), "s2:26380");
        assert_eq!(sentinels[0].redis_settings().password(), Some("sp"));
        assert_eq!(o.min_replica_acks, 1, "behind Sentinel, a publish waits for a replica");
        let lone = RedisBusOptions::from_url("redis://h/0?min_replica_acks=2", "n").expect("url");
        assert_eq!(
            (lone.min_replica_acks, RedisBusOptions::new("redis://h", "n").expect("url").min_replica_acks),
            (2, 0)
        );
        let opt_out = RedisBusOptions::from_url("redis+sentinel://s1:26379/m?min_replica_acks=0", "n").expect("url");
        assert_eq!(opt_out.min_replica_acks, 0);
        assert!(RedisBusOptions::from_url("redis+sentinel://s1:26379", "n").is_err(), "no master name");
        assert!(RedisBusOptions::from_url("redis+sentinel://s1:26379/m?strem=x", "n").is_err(), "typo");
        let tls = RedisBusOptions::from_url("rediss+sentinel://s1:26379/m", "n").expect("tls sentinel");
        assert!(matches!(tls.endpoint, RedisEndpoint::Sentinel { tls: true, .. }));
    }

    #[test]
    fn sibling_keys_share_the_stream_keys_hash_slot() {
        let plain = RedisBusOptions::new("redis://h", "n").expect("url");
        assert_eq!(plain.version_key(), "{mcp-fleet:events}:version");
        assert_eq!(plain.epoch_key(), "{mcp-fleet:events}:epoch");
        assert_eq!(plain.keyspace_prefix("sessions"), "{mcp-fleet:events}:ks:sessions:");
        let tagged = plain.clone().with_stream_key("{fleet}:events");
        assert_eq!(tagged.version_key(), "{fleet}:events:version");
        assert!(plain.clone().with_stream_key("a{}b").validate().is_err(), "`{{a{{}}b}}` would hash `a{{`");
        let open_only = plain.with_stream_key("a{b");
        assert_eq!(open_only.version_key(), "{a{b}:version");
        assert!(open_only.validate().is_ok());
    }
}
