//! The connections on [`HandlerOptions`]: body size, HTTP/2 streams, read timeout, the
//! HTTP/1.1 direct path for endless streams, dead-peer detection and the drain's deadline.

use std::time::Duration;

use super::HandlerOptions;

impl HandlerOptions {
    /// Largest accepted request body; larger gets 413. Default 4 MiB.
    pub fn max_body_bytes(mut self, bytes: usize) -> Self {
        self.max_body_bytes = bytes;
        self
    }

    /// How long `shutdown()` waits for connections to drain. Default 10 s.
    pub fn shutdown_deadline(mut self, deadline: Duration) -> Self {
        self.shutdown_deadline = deadline;
        self
    }

    /// Concurrent streams (requests and listen streams) per HTTP/2 connection. Default 200.
    pub fn http2_max_concurrent_streams(mut self, streams: u32) -> Self {
        self.http2_max_concurrent_streams = streams;
        self
    }

    /// How long a client may take to send its request headers, then its body (each); past it
    /// the connection is closed (headers) or the request gets 408 (body). Default 30 s.
    pub fn request_read_timeout(mut self, timeout: Duration) -> Self {
        self.request_read_timeout = timeout;
        self
    }

    /// Write HTTP/1.1 listen streams outside hyper, straight to their sockets (see
    /// [`McpHandler::serve`](crate::McpHandler::serve)): a connection whose first request is a
    /// `subscriptions/listen` then costs no per-connection buffers and no task wake-up per
    /// delivery. `false` leaves every connection to hyper (as an embedding in another server
    /// does anyway). Default `true`.
    pub fn direct_http1_listen_streams(mut self, on: bool) -> Self {
        self.direct_http1_listen = on;
        self
    }

    /// Close connections whose peer stopped acknowledging data for this long (a vanished
    /// client would otherwise hold its listen slot until the kernel gives up, ~15 min): sets
    /// TCP keepalive and `TCP_USER_TIMEOUT`, and HTTP/2 pings. Default 60 s; `None` disables.
    pub fn dead_peer_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.dead_peer_timeout = timeout;
        self
    }
}
