//! Serving over TCP with hyper: HTTP/1.1 and h2c on one port, `TCP_NODELAY` and dead-peer
//! detection on every socket, accept errors backed off, and a drain with a deadline — after it,
//! connections still open (a client that stopped reading, say) are aborted, so a shutdown always
//! ends. [`McpHandler::serve`] serves the MCP endpoint this way, its HTTP/1.1 listen streams
//! written outside hyper (see `h1`); [`serve_http`] serves any other hyper service (an admin
//! port) the same way.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::{GracefulShutdown, Watcher};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;

use crate::error::ServerError;
use crate::options::HandlerOptions;
use crate::shared::HandlerShared;

/// How long to wait after a failed `accept` (e.g. out of file descriptors) before retrying.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);
/// Default dead-peer timeout and request read timeout of [`serve_http`].
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

impl HandlerShared {
    /// Serve the endpoint on `listener` until the drain begins (what `McpHandler::serve`
    /// does); then stop accepting and drain open connections within the shutdown deadline,
    /// aborting whatever is still open after it.
    pub(crate) async fn serve(self: &Arc<Self>, listener: TcpListener) -> Result<(), ServerError> {
        let options = &self.options;
        let mut stop = self.shutdown.subscribe();
        // Counted before the flag is read, so `shutdown()` either sees this loop and waits for
        // it, or this loop sees the flag and never serves.
        self.serving.send_modify(|n| *n += 1);
        if !stop.is_shutdown() {
            let (handler, builder) = (self.clone(), Arc::new(connection_builder(options)));
            // HTTP/1.1 listen streams leave hyper here; everything else is hyper's (`h1`).
            let connect = move |stream, peer, watcher| {
                super::h1::serve_connection(handler.clone(), builder.clone(), stream, peer, watcher)
            };
            let stopped = stop.recv();
            // Calls still running at the deadline are answered with the drain error then
            // (`endpoint::drain`): their answers get a moment to leave before the abort.
            let tuning =
                Tuning { deadline: options.shutdown_deadline + crate::shared::ANSWER_GRACE, ..Tuning::of(options) };
            accept_loop(listener, connect, tuning, stopped).await;
        }
        self.serving.send_modify(|n| *n -= 1);
        Ok(())
    }
}

/// Serve `service` (any hyper service: an admin port, a health port) on `listener` with the
/// same connection handling as the MCP endpoint until `stop` resolves; then stop accepting,
/// let open connections finish within `deadline`, and abort the rest.
///
/// ```no_run
/// use std::convert::Infallible;
/// use std::time::Duration;
/// # async fn run() -> std::io::Result<()> {
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:9090").await?;
/// let ok = |_req: http::Request<hyper::body::Incoming>| async {
///     Ok::<_, Infallible>(http::Response::new(http_body_util::Full::new(bytes::Bytes::from_static(b"ok"))))
/// };
/// mcp_fleet_server::serve_http(listener, ok, mcp_fleet_server::shutdown_signal(), Duration::from_secs(5)).await;
/// # Ok(()) }
/// ```
pub async fn serve_http<S, Fut, B>(
    listener: TcpListener,
    service: S,
    stop: impl Future<Output = ()>,
    deadline: Duration,
) where
    S: Fn(Request<Incoming>) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Result<Response<B>, Infallible>> + Send + 'static,
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder.http1().timer(TokioTimer::new()).header_read_timeout(DEFAULT_TIMEOUT);
    let tuning = Tuning { dead_peer_timeout: Some(DEFAULT_TIMEOUT), deadline };
    let builder = Arc::new(builder);
    let connect = move |stream: TcpStream, peer, watcher| {
        let (builder, service) = (builder.clone(), service.clone());
        async move { serve_with_hyper(&builder, stream, peer, service, watcher).await }
    };
    accept_loop(listener, connect, tuning, stop).await;
}

/// Serve one connection (`io`: the socket, or one whose first bytes were read already) with
/// hyper until it ends, every request carrying the connection's peer (per-address budgets).
pub(super) async fn serve_with_hyper<I, S, Fut, B>(
    builder: &auto::Builder<TokioExecutor>,
    io: I,
    peer: SocketAddr,
    service: S,
    watcher: Watcher,
) where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    S: Fn(Request<Incoming>) -> Fut + Send + 'static,
    Fut: Future<Output = Result<Response<B>, Infallible>> + Send + 'static,
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let service = move |mut req: Request<Incoming>| {
        req.extensions_mut().insert(crate::context::ClientAddr(peer));
        service(req)
    };
    let conn = builder.serve_connection_with_upgrades(TokioIo::new(io), service_fn(service));
    // A connection error ends that connection only.
    if let Err(e) = watcher.watch(conn).await {
        tracing::debug!(error = %e, "connection ended with an error");
    }
}

/// Resolves on Ctrl-C (SIGINT) or SIGTERM, whichever comes first: what a process waits for
/// before calling [`McpHandler::shutdown`](crate::McpHandler::shutdown).
pub async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! { _ = ctrl_c => {}, _ = term => {} }
}

/// Per-socket and drain settings.
#[derive(Debug, Clone, Copy)]
struct Tuning {
    dead_peer_timeout: Option<Duration>,
    deadline: Duration,
}

impl Tuning {
    fn of(options: &HandlerOptions) -> Tuning {
        Tuning { dead_peer_timeout: options.dead_peer_timeout, deadline: options.shutdown_deadline }
    }
}

/// Accept and serve until `stop` (each connection served by `connect`, in a task of its own),
/// then drain (see the module docs).
async fn accept_loop<C, F>(listener: TcpListener, connect: C, tuning: Tuning, stop: impl Future<Output = ()>)
where
    C: Fn(TcpStream, SocketAddr, Watcher) -> F,
    F: Future<Output = ()> + Send + 'static,
{
    let graceful = GracefulShutdown::new();
    let mut connections = JoinSet::new();
    tokio::pin!(stop);
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    tune_socket(&stream, tuning.dead_peer_timeout);
                    connections.spawn(connect(stream, peer, graceful.watcher()));
                }
                Err(e) => {
                    tracing::warn!(error = %e, "accept failed; backing off");
                    tokio::time::sleep(ACCEPT_BACKOFF).await;
                }
            },
            // Reap finished connections so the set stays as large as what is open.
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
            () = &mut stop => break,
        }
    }
    drop(listener);
    drain(graceful, connections, tuning.deadline).await;
}

/// Ask every hyper connection to close gracefully and wait for every connection (listen
/// streams written outside hyper end once the router closed them); abort those still open after
/// `deadline`.
async fn drain(graceful: GracefulShutdown, mut connections: JoinSet<()>, deadline: Duration) {
    let all_closed = async {
        graceful.shutdown().await;
        while connections.join_next().await.is_some() {}
    };
    if tokio::time::timeout(deadline, all_closed).await.is_err() {
        tracing::warn!(open = connections.len(), "shutdown deadline passed; aborting the connections still open");
        connections.abort_all();
    }
    while connections.join_next().await.is_some() {}
}

/// HTTP/1.1 and h2c on one port, with the handler's limits and timeouts.
fn connection_builder(options: &HandlerOptions) -> auto::Builder<TokioExecutor> {
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        // One flattened buffer per chunk: a chunked SSE frame is one write, not a writev of 3.
        .writev(false)
        .timer(TokioTimer::new())
        .header_read_timeout(options.request_read_timeout);
    let mut http2 = builder.http2();
    http2.max_concurrent_streams(options.http2_max_concurrent_streams).timer(TokioTimer::new());
    if let Some(dead) = options.dead_peer_timeout {
        http2.keep_alive_interval(dead / 2).keep_alive_timeout(dead / 2);
    }
    builder
}

/// Per-socket options of an accepted connection.
fn tune_socket(stream: &TcpStream, dead_peer_timeout: Option<Duration>) {
    // Without TCP_NODELAY, SSE frames stall ~40 ms behind Nagle + delayed ACK.
    let _ = stream.set_nodelay(true);
    let Some(dead) = dead_peer_timeout else { return };
    let socket = socket2::SockRef::from(stream);
    let probe = (dead / 4).max(Duration::from_secs(1));
    let keepalive = socket2::TcpKeepalive::new().with_time(probe).with_interval(probe);
    if let Err(e) = socket.set_tcp_keepalive(&keepalive) {
        tracing::debug!(error = %e, "could not enable TCP keepalive");
    }
    #[cfg(any(target_os = "linux", target_os = "android", target_os = "fuchsia"))]
    if let Err(e) = socket.set_tcp_user_timeout(Some(dead)) {
        tracing::debug!(error = %e, "could not set TCP_USER_TIMEOUT");
    }
}
