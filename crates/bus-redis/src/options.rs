//! [`RedisBusOptions`]: where the Redis bus connects and the limits it keeps. Parsing the URL
//! is redis-rs's job; this file only holds the knobs and their defaults.

use std::time::Duration;

use mcp_fleet_bus::BusError;

/// Default stream key. Every replica of a fleet must use the same one.
pub const DEFAULT_STREAM_KEY: &str = "mcp-fleet:events";
/// Default approximate cap on the stream length (`XADD MAXLEN ~`): how much history a node
/// that was disconnected may catch up on before it sees a gap.
pub const DEFAULT_MAX_LEN: u64 = 100_000;
/// Default bound on one publish (connect + script round trip).
pub const DEFAULT_PUBLISH_TIMEOUT: Duration = Duration::from_secs(2);
/// Default `XREAD BLOCK` time: how long one tailing read waits for new entries.
pub const DEFAULT_BLOCK_TIMEOUT: Duration = Duration::from_secs(5);
/// Default first delay before reconnecting the tailing connection (doubles up to the max).
pub const DEFAULT_RECONNECT_MIN: Duration = Duration::from_millis(100);
/// Default longest delay between reconnect attempts.
pub const DEFAULT_RECONNECT_MAX: Duration = Duration::from_secs(5);
/// Default most entries read per `XREAD`.
pub const DEFAULT_READ_COUNT: usize = 512;

/// Options of a [`RedisBus`](crate::RedisBus). Build with [`RedisBusOptions::new`], then
/// adjust the public fields.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct RedisBusOptions {
    /// The parsed `redis://`, `rediss://` (TLS) or `redis+unix://` address, including user,
    /// password and database as redis-rs reads them (`redis://user:pass@host:6379/2`).
    pub connection: redis::ConnectionInfo,
    /// The stream key (default [`DEFAULT_STREAM_KEY`]); the version counter lives at
    /// `<stream_key>:version`. The stream must be written only by this bus.
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
}

impl RedisBusOptions {
    /// Options for `url` with every default; fails with [`BusError::Config`] on a bad URL.
    pub fn new(url: &str, node_id: &str) -> Result<Self, BusError> {
        let connection = redis::IntoConnectionInfo::into_connection_info(url)
            .map_err(|e| BusError::Config(format!("redis url: {e}")))?;
        Ok(RedisBusOptions {
            connection,
            stream_key: DEFAULT_STREAM_KEY.to_owned(),
            max_len: DEFAULT_MAX_LEN,
            node_id: node_id.to_owned(),
            publish_timeout: DEFAULT_PUBLISH_TIMEOUT,
            block_timeout: DEFAULT_BLOCK_TIMEOUT,
            reconnect_min: DEFAULT_RECONNECT_MIN,
            reconnect_max: DEFAULT_RECONNECT_MAX,
            read_count: DEFAULT_READ_COUNT,
        })
    }

    /// Options from a URL whose query may also set `stream=KEY` and `maxlen=N` (every other
    /// parameter goes to redis-rs, e.g. `protocol=resp3`).
    ///
    /// ```
    /// let o = mcp_fleet_bus_redis::RedisBusOptions::from_url("redis://127.0.0.1:6379/2?stream=fleet-a&maxlen=500", "n1").unwrap();
    /// assert_eq!((o.stream_key.as_str(), o.max_len), ("fleet-a", 500));
    /// ```
    pub fn from_url(url: &str, node_id: &str) -> Result<Self, BusError> {
        let (base, query) = url.split_once('?').unwrap_or((url, ""));
        let (mut stream, mut max_len, mut rest) = (None, None, Vec::new());
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            match pair.split_once('=') {
                Some(("stream", key)) if !key.is_empty() => stream = Some(key.to_owned()),
                Some(("maxlen", n)) => {
                    max_len = Some(n.parse().map_err(|_| BusError::Config(format!("invalid redis URL maxlen {n:?}")))?);
                }
                _ => rest.push(pair),
            }
        }
        let redis_url = if rest.is_empty() { base.to_owned() } else { format!("{base}?{}", rest.join("&")) };
        let mut options = RedisBusOptions::new(&redis_url, node_id)?;
        options.stream_key = stream.unwrap_or(options.stream_key);
        options.max_len = max_len.unwrap_or(options.max_len);
        Ok(options)
    }

    /// The same options with another stream key.
    pub fn with_stream_key(mut self, stream_key: impl Into<String>) -> Self {
        self.stream_key = stream_key.into();
        self
    }

    /// The key of the version counter (`<stream_key>:version`).
    pub fn version_key(&self) -> String {
        format!("{}:version", self.stream_key)
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
        if self.publish_timeout.is_zero() || self.block_timeout.is_zero() || self.read_count == 0 {
            return Err(BusError::Config("redis timeouts and read count must be positive".into()));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_urls_with_credentials_and_db() {
        let o = RedisBusOptions::new("redis://u:p@example.invalid:6380/3", "n 1").expect("valid url");
        assert_eq!(o.connection.redis_settings().db(), 3);
        assert_eq!(o.tail_client_name(), "mcp-fleet-tail:mcp-fleet:events:n_1");
        assert!(RedisBusOptions::new("http://x", "n").is_err());
    }
}
