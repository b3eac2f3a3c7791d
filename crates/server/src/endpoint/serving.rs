//! Serving the handler: [`McpHandler::serve_until`], the one-liner (serve until a signal, then
//! drain), [`McpHandler::serve`] and [`McpHandler::handle`], one
//! request from any server — both answered by the HTTP side (`crate::http`); the handler as a
//! service other servers can mount: a `tower::Service` (axum's `Router` takes it with
//! `route_service`, any tower stack can wrap it) and a hyper `Service` (for a hand-written
//! hyper server); and [`McpHandler::draining`], the future to give the embedding server's
//! graceful shutdown so it drains when the handler does.
//!
//! The service never fails (`Infallible`): every problem is an HTTP or JSON-RPC error
//! response. It is always ready: backpressure is the handler's own limits (per-principal
//! rate, stream quotas), answered with 429 or 503 rather than by not polling ready.

use std::convert::Infallible;
use std::task::{Context, Poll};

use bytes::Bytes;
use futures_util::future::BoxFuture;
use http::{Request, Response};
use http_body::Body;

use tokio::net::TcpListener;

use super::handler::McpHandler;
use crate::error::ServerError;
use crate::http::ResponseBody;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

impl<B> tower_service::Service<Request<B>> for McpHandler
where
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    type Response = Response<ResponseBody>;
    type Error = Infallible;
    type Future = BoxFuture<'static, Result<Response<ResponseBody>, Infallible>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request<B>) -> Self::Future {
        answer(self.clone(), req)
    }
}

impl<B> hyper::service::Service<Request<B>> for McpHandler
where
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    type Response = Response<ResponseBody>;
    type Error = Infallible;
    type Future = BoxFuture<'static, Result<Response<ResponseBody>, Infallible>>;

    fn call(&self, req: Request<B>) -> Self::Future {
        answer(self.clone(), req)
    }
}

fn answer<B>(handler: McpHandler, req: Request<B>) -> BoxFuture<'static, Result<Response<ResponseBody>, Infallible>>
where
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    Box::pin(async move { Ok(handler.handle(req).await) })
}

impl McpHandler {
    /// Serve the endpoint on `listener` until [`McpHandler::shutdown`] is called; then stop
    /// accepting and drain open connections (listen streams end with their completion result)
    /// within the shutdown deadline, aborting whatever is still open after it. Called after
    /// `shutdown()`, it returns at once.
    pub async fn serve(&self, listener: TcpListener) -> Result<(), ServerError> {
        self.shared.serve(listener).await
    }

    /// Serve the endpoint on `listener` until `stop` resolves — give it
    /// [`shutdown_signal`](crate::shutdown_signal) for SIGINT and SIGTERM — then drain as
    /// [`McpHandler::shutdown`] does, and return once the serve loop has ended. If something
    /// else calls `shutdown()` first, it returns when that drain has ended the loop.
    ///
    /// ```no_run
    /// use mcp_fleet_server::{create_mcp_handler, shutdown_signal, HandlerOptions, McpServer};
    /// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
    /// let handler = create_mcp_handler(McpServer::builder("demo", "1.0.0").build(), HandlerOptions::default()).await?;
    /// let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
    /// handler.serve_until(listener, shutdown_signal()).await?;
    /// # Ok(()) }
    /// ```
    pub async fn serve_until(&self, listener: TcpListener, stop: impl Future<Output = ()>) -> Result<(), ServerError> {
        let serving = self.serve(listener);
        tokio::pin!(serving);
        tokio::select! {
            result = &mut serving => return result,
            () = stop => {}
        }
        // Polled together: the drain waits for the serve loop, which is what drains.
        let (result, ()) = tokio::join!(serving, self.shutdown());
        result
    }

    /// Answer one HTTP request to the MCP endpoint. Use it from your own hyper or tower
    /// service; [`McpHandler::serve`] uses it too.
    pub async fn handle<B>(&self, req: Request<B>) -> Response<ResponseBody>
    where
        B: Body<Data = Bytes>,
        B::Error: Into<BoxError>,
    {
        self.shared.handle(req).await
    }

    /// Resolves once [`McpHandler::shutdown`] has begun — listen streams are closing with their
    /// completion result, new listens are refused. Give it to the server the handler is
    /// mounted in (axum's `with_graceful_shutdown`, hyper-util's `GracefulShutdown`), so that
    /// server stops accepting and drains as the handler does, and no open SSE stream holds
    /// its drain forever.
    pub fn draining(&self) -> impl Future<Output = ()> + Send + 'static {
        let mut stop = self.shared.shutdown.subscribe();
        async move { stop.recv().await }
    }
}

#[cfg(test)]
mod tests {
    use http_body_util::{BodyExt, Full};
    use serde_json::{Value, json};
    use tower_service::Service;

    use crate::{HandlerOptions, McpServer, create_mcp_handler};

    #[tokio::test]
    async fn the_handler_answers_as_a_tower_service_and_drains_on_shutdown() {
        let server = McpServer::builder("embed", "1").build();
        let mut handler = create_mcp_handler(server, HandlerOptions::default()).await.expect("handler");
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover",
            "params": {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}}});
        let req = http::Request::post("/mcp")
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "server/discover")
            .body(Full::new(bytes::Bytes::from(body.to_string())))
            .expect("a valid request");
        std::future::poll_fn(|cx| Service::<http::Request<Full<bytes::Bytes>>>::poll_ready(&mut handler, cx))
            .await
            .expect("always ready");
        let response = Service::call(&mut handler, req).await.expect("infallible");
        let bytes = response.into_body().collect().await.expect("a complete body").to_bytes();
        let answer: Value = serde_json::from_slice(&bytes).expect("JSON");
        assert_eq!(answer["result"]["supportedVersions"], json!(["2026-07-28"]), "{answer}");

        let draining = tokio::spawn(handler.draining());
        tokio::task::yield_now().await;
        assert!(!draining.is_finished(), "not before shutdown");
        handler.shutdown().await;
        draining.await.expect("resolves once shutdown began");
    }

    #[tokio::test]
    async fn serve_until_serves_then_drains_when_told_to_stop() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let handler = create_mcp_handler(McpServer::builder("until", "1").build(), HandlerOptions::default())
            .await
            .expect("handler");
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let serving = tokio::spawn({
            let handler = handler.clone();
            async move { handler.serve_until(listener, async { stopped.await.unwrap_or(()) }).await }
        });
        // Served: a GET without a session is answered (405 or 400), not refused at the socket.
        let mut socket = tokio::net::TcpStream::connect(addr).await.expect("connect while serving");
        socket.write_all(b"GET /mcp HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n").await.expect("write");
        let mut reply = Vec::new();
        socket.read_to_end(&mut reply).await.expect("read");
        assert!(reply.starts_with(b"HTTP/1.1 4"), "{}", String::from_utf8_lossy(&reply));
        assert!(!handler.is_draining());

        stop.send(()).expect("still serving");
        let done = tokio::time::timeout(std::time::Duration::from_secs(10), serving).await;
        done.expect("returns once drained").expect("task").expect("served without error");
        assert!(handler.is_draining(), "stopping drained the handler");
        assert!(tokio::net::TcpStream::connect(addr).await.is_err(), "the listener is closed");
    }
}
