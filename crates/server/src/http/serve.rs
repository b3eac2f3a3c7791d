//! Serving a handler over TCP with hyper: HTTP/1.1 and h2c on one port, `TCP_NODELAY` on every
//! socket, accept errors backed off, and a graceful drain with a deadline on shutdown.

use std::sync::Arc;
use std::time::Duration;

use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::TcpListener;

use super::service::ServiceResult;
use crate::error::ServerError;
use crate::handler::McpHandler;
use crate::options::HandlerOptions;

/// How long to wait after a failed `accept` (e.g. out of file descriptors) before retrying.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

impl McpHandler {
    /// Serve the endpoint on `listener` until [`McpHandler::shutdown`] is called; then stop
    /// accepting and drain open connections (listen streams end with their completion result)
    /// within the shutdown deadline.
    pub async fn serve(&self, listener: TcpListener) -> Result<(), ServerError> {
        let builder = Arc::new(connection_builder(&self.shared.options));
        let graceful = GracefulShutdown::new();
        let mut stop = self.shared.shutdown.subscribe();
        self.shared.serving.send_modify(|n| *n += 1);
        loop {
            tokio::select! {
                accepted = listener.accept() => match accepted {
                    Ok((stream, _)) => {
                        tune_socket(&stream, self.shared.options.dead_peer_timeout);
                        self.spawn_connection(&builder, &graceful, stream);
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "accept failed; backing off");
                        tokio::time::sleep(ACCEPT_BACKOFF).await;
                    }
                },
                _ = crate::shutdown::signalled(&mut stop) => break,
            }
        }
        drop(listener);
        if tokio::time::timeout(self.shared.options.shutdown_deadline, graceful.shutdown()).await.is_err() {
            tracing::warn!("shutdown deadline passed; closing remaining connections");
        }
        self.shared.serving.send_modify(|n| *n -= 1);
        Ok(())
    }

    fn spawn_connection(
        &self,
        builder: &Arc<auto::Builder<TokioExecutor>>,
        graceful: &GracefulShutdown,
        stream: tokio::net::TcpStream,
    ) {
        let handler = self.clone();
        let service = service_fn(move |req| {
            let handler = handler.clone();
            async move { ServiceResult::Ok(handler.handle(req).await) }
        });
        let builder = builder.clone();
        let watcher = graceful.watcher();
        tokio::spawn(async move {
            let conn = builder.serve_connection_with_upgrades(TokioIo::new(stream), service);
            // A connection error ends that connection only.
            if let Err(e) = watcher.watch(conn).await {
                tracing::debug!(error = %e, "connection ended with an error");
            }
        });
    }
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
fn tune_socket(stream: &tokio::net::TcpStream, dead_peer_timeout: Option<Duration>) {
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
