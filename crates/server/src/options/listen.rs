//! The listen path's limits on [`HandlerOptions`]: how many streams, how many and how long
//! their subscribed URIs, per stream, per principal and per address, and their keepalive and
//! lifetime.

use std::time::Duration;

use super::HandlerOptions;

impl HandlerOptions {
    /// Open listen streams on this node; past it a listen gets `-32603` before the ack.
    /// Default 10 000.
    pub fn max_streams(mut self, streams: usize) -> Self {
        self.listen.max_streams = streams;
        self
    }

    /// URIs in one listen's `resourceSubscriptions` (and task ids in its `taskIds`); past it
    /// `-32602`. Default 1 000.
    pub fn max_uris_per_listen(mut self, uris: usize) -> Self {
        self.listen.max_uris_per_listen = uris;
        self
    }

    /// Longest URI a listen may subscribe to, in bytes; past it `-32602` (in band) before the
    /// ack. Default 2 048 (the de facto URL limit of browsers and CDNs).
    pub fn max_uri_bytes(mut self, bytes: usize) -> Self {
        self.listen.budget.max_uri_bytes = bytes;
        self
    }

    /// Bytes of URIs and task ids one listen stream may follow (the router holds each for the
    /// stream's life); past it `-32602` (in band) before the ack. Default 128 KiB (1 000 URIs
    /// of 128 B). A task id that is not of this server's format is `-32602` too.
    pub fn max_subscription_bytes_per_stream(mut self, bytes: usize) -> Self {
        self.listen.budget.max_bytes_per_stream = bytes;
        self
    }

    /// Bytes of URIs and task ids all listen streams of one authenticated principal may hold on
    /// this node;
    /// past it 429 with `-32603` before the ack. Default 4 MiB.
    pub fn max_subscription_bytes_per_principal(mut self, bytes: usize) -> Self {
        self.listen.budget.max_bytes_per_principal = bytes;
        self
    }

    /// Listen streams one client address may hold on this node when callers are anonymous (no
    /// authenticator; IPv6 counted by /64); past it 429 with `-32603` before the ack. Behind a
    /// proxy every client has the proxy's address: raise it, or authenticate. Default 1 000.
    pub fn max_streams_per_address(mut self, streams: usize) -> Self {
        self.listen.budget.max_streams_per_address = streams;
        self
    }

    /// Whether loopback peers (a sidecar proxy, a local load test) are exempt from
    /// [`max_streams_per_address`](Self::max_streams_per_address) and from the 2025 era's
    /// [`Era2025Options::max_sessions_per_address`](crate::options::Era2025Options::max_sessions_per_address). Default `true`.
    pub fn loopback_exempt_from_address_limit(mut self, exempt: bool) -> Self {
        self.listen.budget.loopback_exempt = exempt;
        self
    }

    /// Refuse (`-32602` in band, `data.unknownUris`) a listen subscribing to a URI that names no
    /// resource of the catalog and matches none of its templates. Default `false`: clients may
    /// subscribe to resources that appear later.
    pub fn listen_uris_must_exist(mut self, required: bool) -> Self {
        self.listen.budget.uris_must_exist = required;
        self
    }

    /// Interval of `: keepalive` comments on idle listen streams; zero disables. Default 15 s.
    pub fn keepalive(mut self, every: Duration) -> Self {
        self.listen.keepalive = every;
        self
    }

    /// Close each listen stream gracefully (completion result, then end) after about this long,
    /// ±10 % so reconnects spread out; clients reconnect through the load balancer, which
    /// rebalances streams onto replicas added since. Checked every keepalive interval (or 15 s
    /// when keepalives are off). Default `None`: streams live until the client or a shutdown
    /// ends them.
    pub fn max_stream_lifetime(mut self, lifetime: Option<Duration>) -> Self {
        self.listen.max_lifetime = lifetime;
        self
    }
}
