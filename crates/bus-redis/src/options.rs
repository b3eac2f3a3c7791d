//! [`RedisBusOptions`]: where the Redis bus connects (one server, the primary that Redis
//! Sentinel names, or a Redis Cluster) and the limits it keeps: the knobs, their defaults and
//! the key layout. Reading a URL is `crate::url`'s job.

use std::time::Duration;

use mcp_fleet_bus::BusError;
use mcp_fleet_bus::shard::Routing;
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
/// Default number of event streams on a Redis Cluster (see [`RedisBusOptions::shards`]): enough
/// to spread the bus over a few masters; one server and Sentinel default to 1.
pub const DEFAULT_CLUSTER_SHARDS: usize = 8;
/// Most event streams a bus may be split into: every node tails each one on its own connection.
pub const MAX_SHARDS: usize = 256;

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
    /// A Redis Cluster: any of its nodes (credentials included); redis-rs's cluster client
    /// learns the slot map from them and follows `MOVED`, `ASK` and failovers.
    Cluster {
        /// Nodes to start from.
        nodes: Vec<ConnectionInfo>,
        /// Whether the nodes are reached over TLS (`rediss+cluster://`).
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
    /// Event streams the bus is split into (URL `shards=N`, default 1, or
    /// [`DEFAULT_CLUSTER_SHARDS`] on a cluster; at most [`MAX_SHARDS`]). An event goes to the
    /// stream of its scope, or of its URI when unscoped, or to the first for fleet-wide changes,
    /// so a cluster spreads the bus over its masters. With more than one the bus keeps order per
    /// scope or URI only: its events are unpositioned (version 0) and it names no position (see
    /// the crate docs). Every replica must use the same number.
    pub shards: usize,
    /// Which shards this node reads (URL `routing=interest`; default [`Routing::All`]). With
    /// [`Routing::Interest`] a node consumes the fleet-wide events and the shards its streams
    /// follow a scope or URI on, so a tenant's events cost only the nodes serving it; replicas
    /// may differ.
    pub routing: Routing,
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
        let replicated = matches!(endpoint, RedisEndpoint::Sentinel { .. } | RedisEndpoint::Cluster { .. });
        let shards = if matches!(endpoint, RedisEndpoint::Cluster { .. }) { DEFAULT_CLUSTER_SHARDS } else { 1 };
        RedisBusOptions {
            min_replica_acks: usize::from(replicated),
            shards,
            routing: Routing::All,
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

    /// Shard `index`'s options: the same, with that shard's stream key — the stream key itself
    /// when there is one shard, else `{<stream key without braces>#<index>}`, a hash tag of its
    /// own so Redis Cluster spreads the shards over its slots. Membership and keyspaces stay at
    /// the unsharded key's slot.
    pub(crate) fn shard(&self, index: usize) -> RedisBusOptions {
        let stream_key = match self.shards {
            1 => self.stream_key.clone(),
            _ => format!("{{{}#{index}}}", self.stream_key.replace(['{', '}'], "")),
        };
        RedisBusOptions { stream_key, ..self.clone() }
    }

    /// The stream key `event` is appended to: with shards, the one of its scope or URI (see
    /// the crate docs), for an operator looking for a tenant's events with `XRANGE`.
    ///
    /// ```
    /// use mcp_fleet_bus::{Change, EventEnvelope, EventKind};
    /// let mut o = mcp_fleet_bus_redis::RedisBusOptions::new("redis://h", "n").unwrap();
    /// let event = EventEnvelope::new(Change::list(EventKind::ToolsListChanged).in_scope("t1"), "n");
    /// assert_eq!(o.stream_of(&event), "mcp-fleet:events");
    /// o.shards = 8;
    /// assert!(o.stream_of(&event).starts_with("{mcp-fleet:events#"));
    /// ```
    pub fn stream_of(&self, event: &mcp_fleet_bus::EventEnvelope) -> String {
        self.shard(mcp_fleet_bus::shard::shard_of(event, self.shards)).stream_key
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
        if self.shards == 0 || self.shards > MAX_SHARDS {
            return Err(BusError::Config(format!("redis shards must be 1 to {MAX_SHARDS}, not {}", self.shards)));
        }
        if matches!(&self.endpoint, RedisEndpoint::Cluster { nodes, .. } if nodes.is_empty()) {
            return Err(BusError::Config("a cluster URL needs at least one node".into()));
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

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn shards_have_hash_tags_of_their_own() {
        let one = RedisBusOptions::new("redis://h", "n").expect("url");
        assert_eq!(one.shard(0).stream_key, "mcp-fleet:events");
        let mut many = one.with_stream_key("{fleet}:events");
        many.shards = 4;
        let third = many.shard(3);
        assert_eq!(
            (third.stream_key.as_str(), third.version_key()),
            ("{fleet:events#3}", "{fleet:events#3}:version".into())
        );
        assert_eq!(many.members_key(), "{fleet}:events:members");
        many.shards = 0;
        assert!(many.validate().is_err());
        many.shards = MAX_SHARDS + 1;
        assert!(many.validate().is_err());
    }
}
