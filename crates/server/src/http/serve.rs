//! Serving a handler over TCP with hyper: HTTP/1.1 and h2c on one port, `TCP_NODELAY` on every
//! socket, accept errors backed off, and a graceful drain with a deadline on shutdown.

use std::sync::Arc;
use std::time::Duration;

use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::TcpListener;

use super::service::ServiceResult;
use crate::error::ServerError;
use crate::handler::McpHandler;

/// How long to wait after a failed `accept` (e.g. out of file descriptors) before retrying.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

impl McpHandler {
    /// Serve the endpoint on `listener` until [`McpHandler::shutdown`] is called; then stop
    /// accepting and drain open connections (listen streams end with their completion result)
    /// within the shutdown deadline.
    pub async fn serve(&self, listener: TcpListener) -> Result<(), ServerError> {
        let mut builder = auto::Builder::new(TokioExecutor::new());
        // One flattened buffer per chunk: a chunked SSE frame is one write, not a writev of 3.
        builder.http1().writev(false);
        builder.http2().max_concurrent_streams(self.shared.options.http2_max_concurrent_streams);
        let builder = Arc::new(builder);
        let graceful = GracefulShutdown::new();
        let mut stop = self.shared.shutdown.subscribe();
        self.shared.serving.send_modify(|n| *n += 1);
        loop {
            tokio::select! {
                accepted = listener.accept() => match accepted {
                    Ok((stream, _)) => {
                        // Without TCP_NODELAY, SSE frames stall ~40 ms behind Nagle + delayed ACK.
                        let _ = stream.set_nodelay(true);
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
