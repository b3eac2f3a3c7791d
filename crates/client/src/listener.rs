//! [`Listener`]: a listen stream that stays open — it reconnects with exponential backoff
//! after failures, right away (with a little jitter) after the server's graceful close, and
//! treats a stream silent for longer than the idle timeout as dead.
//!
//! Pull-based and cancel-safe: [`Listener::next_event`] keeps its in-progress connect and
//! backoff timer in `self`, so it can sit in a `tokio::select!` beside other work (the
//! [`CatalogWatcher`](crate::CatalogWatcher) does) without losing progress when another
//! branch wins.

use std::future::Future;
use std::pin::Pin;
use std::time::{Duration, Instant};

use mcp_fleet_protocol::SubscriptionFilter;
use serde_json::json;
use tokio::time::Sleep;

use crate::backoff::ReconnectPolicy;
use crate::error::ClientError;
use crate::listen::ListenStream;
use crate::message::{ListenMessage, Notification};
use crate::rpc::RpcClient;

/// What happened on a [`Listener`].
#[derive(Debug)]
pub enum ListenEvent {
    /// A stream is open and acknowledged. After a reconnect, notifications sent while the
    /// client was away are lost: a host must re-list everything it follows.
    Connected {
        /// The honoured filter from the acknowledgement (LSTN-4): what the server will
        /// actually send, possibly less than was asked for.
        honoured: SubscriptionFilter,
        /// Whether an earlier stream of this listener was open before.
        reconnect: bool,
    },
    /// A change notification.
    Changed(Notification),
    /// A message that is not a listen message this client can read was dropped (and
    /// counted, [`Listener::malformed_frames`]); the stream stays open. Tearing it down would
    /// force a full re-list for one bad frame.
    Malformed {
        /// Why it could not be read.
        reason: String,
    },
    /// The stream ended or could not be opened; the listener reconnects after `retry_in`.
    Disconnected {
        /// Why; `None` when the server closed the stream gracefully (LSTN-13).
        error: Option<ClientError>,
        /// The backoff before the next attempt.
        retry_in: Duration,
    },
}

/// Options of a [`Listener`].
#[derive(Debug, Clone, Copy)]
pub struct ListenerOptions {
    /// Backoff between attempts.
    pub reconnect: ReconnectPolicy,
    /// A stream with no bytes at all (not even a keep-alive) for this long is considered
    /// dead and reopened. Default 45 s (three of the server's default 15 s keep-alives);
    /// `None` never gives up on a silent stream.
    pub idle_timeout: Option<Duration>,
    /// How long opening a stream (up to its acknowledgement) may take. Default 10 s.
    pub open_timeout: Duration,
}

impl Default for ListenerOptions {
    fn default() -> Self {
        ListenerOptions {
            reconnect: ReconnectPolicy::default(),
            idle_timeout: Some(Duration::from_secs(45)),
            open_timeout: Duration::from_secs(10),
        }
    }
}

type OpenFuture = Pin<Box<dyn Future<Output = Result<ListenStream, ClientError>> + Send>>;

enum State {
    /// Waiting before the next attempt (no timer: connect now).
    Waiting(Option<Pin<Box<Sleep>>>),
    /// Opening a stream.
    Connecting(OpenFuture),
    /// Reading an open stream (boxed: its SSE decoder dwarfs the other states).
    Open(Box<ListenStream>),
}

/// A self-reconnecting listen stream.
pub struct Listener {
    rpc: RpcClient,
    filter: SubscriptionFilter,
    options: ListenerOptions,
    state: State,
    failures: u32,
    connected_before: bool,
    malformed: u64,
}

impl std::fmt::Debug for Listener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Listener").field("filter", &self.filter).field("failures", &self.failures).finish()
    }
}

impl Listener {
    /// A listener for `filter` through `rpc`; it connects on the first
    /// [`Listener::next_event`].
    pub fn new(rpc: RpcClient, filter: SubscriptionFilter, options: ListenerOptions) -> Listener {
        Listener {
            rpc,
            filter,
            options,
            state: State::Waiting(None),
            failures: 0,
            connected_before: false,
            malformed: 0,
        }
    }

    /// The filter asked for.
    pub fn filter(&self) -> &SubscriptionFilter {
        &self.filter
    }

    /// Messages dropped as unreadable so far, over every stream of this listener.
    pub fn malformed_frames(&self) -> u64 {
        self.malformed
    }

    /// The next event; never ends (it reconnects forever). Cancel-safe.
    pub async fn next_event(&mut self) -> ListenEvent {
        loop {
            match &mut self.state {
                State::Waiting(timer) => {
                    if let Some(timer) = timer {
                        timer.as_mut().await;
                    }
                    self.state = State::Connecting(self.open());
                }
                State::Connecting(opening) => {
                    let outcome = opening.as_mut().await;
                    return match outcome {
                        Ok(stream) => self.connected(stream),
                        Err(error) => self.failed(Some(error), None),
                    };
                }
                State::Open(stream) => {
                    let opened_at = stream.opened_at();
                    match read(stream, self.options.idle_timeout).await {
                        Ok(ListenMessage::Changed(n)) => return ListenEvent::Changed(n),
                        Ok(ListenMessage::Completed) => return self.failed(None, Some(opened_at)),
                        Ok(ListenMessage::Error { code, message }) => {
                            return self.failed(Some(ClientError::Rpc { code, message, data: None }), Some(opened_at));
                        }
                        Ok(ListenMessage::Acknowledged { .. } | ListenMessage::Other) => continue,
                        // Only parsing a message yields a protocol error here: drop the frame.
                        Err(ClientError::Protocol(reason)) => {
                            self.malformed += 1;
                            return ListenEvent::Malformed { reason };
                        }
                        Err(error) => return self.failed(Some(error), Some(opened_at)),
                    }
                }
            }
        }
    }

    fn open(&self) -> OpenFuture {
        let (rpc, filter, timeout) = (self.rpc.clone(), self.filter.clone(), self.options.open_timeout);
        Box::pin(async move {
            let id = json!(rpc.next_id());
            let open = async {
                match rpc.session() {
                    Some(_) => ListenStream::open_session(&rpc, &filter).await,
                    None => ListenStream::open(&rpc, &id, &filter).await,
                }
            };
            tokio::time::timeout(timeout, open)
                .await
                .map_err(|_| ClientError::Timeout { what: "listen open", after: timeout })?
        })
    }

    fn connected(&mut self, stream: ListenStream) -> ListenEvent {
        let event = ListenEvent::Connected { honoured: stream.honoured().clone(), reconnect: self.connected_before };
        self.connected_before = true;
        self.state = State::Open(Box::new(stream));
        event
    }

    /// Schedule the next attempt. A graceful close (`error == None`) or a stream that stayed
    /// up past `stable_after` resets the failure count.
    fn failed(&mut self, error: Option<ClientError>, opened_at: Option<Instant>) -> ListenEvent {
        let stable = opened_at.is_some_and(|t| t.elapsed() >= self.options.reconnect.stable_after);
        if error.is_none() || stable {
            self.failures = 0;
        }
        let retry_in = self.options.reconnect.delay(self.failures);
        if error.is_some() {
            self.failures = self.failures.saturating_add(1);
        }
        self.state = State::Waiting(Some(Box::pin(tokio::time::sleep(retry_in))));
        ListenEvent::Disconnected { error, retry_in }
    }
}

/// The next message of an open stream, or why it is over (ended, broken, or idle too long).
async fn read(stream: &mut ListenStream, idle_timeout: Option<Duration>) -> Result<ListenMessage, ClientError> {
    let Some(idle) = idle_timeout else {
        return stream.next().await?.ok_or(ClientError::StreamLost("ended without a completion result"));
    };
    loop {
        let deadline = stream.last_activity() + idle;
        tokio::select! {
            message = stream.next() => return message?.ok_or(ClientError::StreamLost("ended without a completion result")),
            () = tokio::time::sleep_until(deadline.into()) => {
                // Keep-alives move `last_activity` without producing a message.
                if stream.last_activity() + idle <= Instant::now() {
                    return Err(ClientError::StreamLost("no bytes within the idle timeout"));
                }
            }
        }
    }
}
