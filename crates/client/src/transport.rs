//! [`Transport`]: how requests reach a server — hyper-util's pooled client (HTTP/1.1
//! keep-alive, or h2c on one connection per host), or a [`SharedH2`] connection that a group
//! of clients multiplexes on (what a host behind an HTTP/2 proxy, or a load tester packing
//! many listen streams per connection, does).
//!
//! [`SharedH2`] keeps its connection in one task that owns the I/O: it connects, publishes
//! the request handle through a `watch` channel, waits for the connection to end and then
//! reconnects with backoff. The task ends when the last handle is dropped.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::client::conn::http2;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::net::TcpStream;
use tokio::sync::watch;

use crate::backoff::ReconnectPolicy;
use crate::error::ClientError;

/// How requests are sent. Cheap to clone; clones share connections.
#[derive(Debug, Clone)]
pub enum Transport {
    /// hyper-util's pooled client (behind an `Arc`: the client itself is ~300 bytes and
    /// every simulated host holds a clone).
    Pooled(Arc<Client<HttpConnector, Full<Bytes>>>),
    /// One h2c connection shared by every clone.
    Shared(SharedH2),
}

impl Transport {
    /// HTTP/1.1 with a keep-alive pool: each concurrent request (and each open listen
    /// stream) holds its own connection; idle ones are reused.
    pub fn http1() -> Transport {
        Transport::Pooled(Arc::new(Client::builder(TokioExecutor::new()).build(connector())))
    }

    /// h2c (HTTP/2 prior knowledge) through hyper-util's pool: one connection per host,
    /// every request a stream on it (at most the server's concurrent-stream limit at once;
    /// the rest wait for a free stream).
    pub fn h2c() -> Transport {
        Transport::Pooled(Arc::new(Client::builder(TokioExecutor::new()).http2_only(true).build(connector())))
    }

    /// Send one request; resolves with the response head (the body streams).
    pub async fn send(&self, request: Request<Full<Bytes>>) -> Result<Response<Incoming>, ClientError> {
        match self {
            Transport::Pooled(client) => Ok(client.request(request).await?),
            Transport::Shared(shared) => shared.send(request).await,
        }
    }
}

fn connector() -> HttpConnector {
    let mut connector = HttpConnector::new();
    // SSE frames are small and latency matters more than packet count (PERFORMANCE.md:
    // without TCP_NODELAY, Nagle + delayed ACK stall events by 100–550 ms).
    connector.set_nodelay(true);
    connector
}

type H2Sender = http2::SendRequest<Full<Bytes>>;

/// What the connection task currently offers.
#[derive(Debug, Clone)]
enum ConnState {
    /// A connection attempt is under way.
    Connecting,
    /// Connected: requests go here.
    Ready(H2Sender),
    /// The last attempt failed with this message; the task retries after a backoff.
    Failed(String),
}

/// One h2c connection to `host:port`, shared by every clone, reconnected by its own task.
#[derive(Debug, Clone)]
pub struct SharedH2 {
    addr: String,
    state: watch::Receiver<ConnState>,
}

impl SharedH2 {
    /// Start the connection task for `addr` (`host:port`); it connects right away and
    /// reconnects with `policy` whenever the connection ends. Must be called inside a tokio
    /// runtime.
    pub fn start(addr: &str, policy: ReconnectPolicy) -> SharedH2 {
        let (tx, rx) = watch::channel(ConnState::Connecting);
        tokio::spawn(run_connection(addr.to_owned(), policy, tx));
        SharedH2 { addr: addr.to_owned(), state: rx }
    }

    /// Send one request as a new stream of the shared connection. Waits while the first
    /// connection is being made; fails at once while the task is backing off after a failure.
    pub async fn send(&self, request: Request<Full<Bytes>>) -> Result<Response<Incoming>, ClientError> {
        let mut sender = self.ready_sender().await?;
        sender.ready().await?;
        Ok(sender.send_request(request).await?)
    }

    async fn ready_sender(&self) -> Result<H2Sender, ClientError> {
        let mut state = self.state.clone();
        loop {
            match &*state.borrow_and_update() {
                ConnState::Ready(sender) if !sender.is_closed() => return Ok(sender.clone()),
                ConnState::Failed(message) => {
                    let source = std::io::Error::new(std::io::ErrorKind::NotConnected, message.clone());
                    return Err(ClientError::Connect { addr: self.addr.clone(), source });
                }
                ConnState::Ready(_) | ConnState::Connecting => {}
            }
            if state.changed().await.is_err() {
                let source = std::io::Error::new(std::io::ErrorKind::NotConnected, "connection task ended");
                return Err(ClientError::Connect { addr: self.addr.clone(), source });
            }
        }
    }
}

/// The task owning one shared connection: connect, serve until it ends, reconnect with
/// backoff; stop once every [`SharedH2`] handle is gone.
async fn run_connection(addr: String, policy: ReconnectPolicy, tx: watch::Sender<ConnState>) {
    let mut failures = 0u32;
    loop {
        let attempt = tokio::select! {
            attempt = connect_h2(&addr) => attempt,
            () = tx.closed() => return,
        };
        match attempt {
            Ok((sender, connection)) => {
                failures = 0;
                tx.send_replace(ConnState::Ready(sender));
                tokio::select! {
                    _ = connection => {}
                    () = tx.closed() => return,
                }
                tx.send_replace(ConnState::Connecting);
            }
            Err(e) => {
                tx.send_replace(ConnState::Failed(e.to_string()));
                let delay = policy.delay(failures);
                failures = failures.saturating_add(1);
                tokio::select! {
                    () = tokio::time::sleep(delay) => {}
                    () = tx.closed() => return,
                }
                tx.send_replace(ConnState::Connecting);
            }
        }
    }
}

/// How long opening one TCP connection and the HTTP/2 handshake may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

async fn connect_h2(
    addr: &str,
) -> Result<(H2Sender, http2::Connection<TokioIo<TcpStream>, Full<Bytes>, TokioExecutor>), ClientError> {
    let connect = async {
        let stream =
            TcpStream::connect(addr).await.map_err(|source| ClientError::Connect { addr: addr.to_owned(), source })?;
        stream.set_nodelay(true).map_err(|source| ClientError::Connect { addr: addr.to_owned(), source })?;
        Ok(http2::handshake(TokioExecutor::new(), TokioIo::new(stream)).await?)
    };
    tokio::time::timeout(CONNECT_TIMEOUT, connect)
        .await
        .map_err(|_| ClientError::Timeout { what: "h2c connect", after: CONNECT_TIMEOUT })?
}
