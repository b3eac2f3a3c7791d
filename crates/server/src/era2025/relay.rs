//! [`Relay`]: the client's answers to server-to-client requests (sampling, elicitation, roots),
//! back to the call that waits for them, whichever replica the answer was POSTed to.
//!
//! Sending a request marks it as awaited in the `replies` keyspace (`w.<id>` → the session).
//! An answer POSTed to the waiting node goes straight to the waiter; one POSTed elsewhere is
//! stored as `r.<id>` and announced with a session event on the bus ([`SessionOp::Answered`]),
//! whose arrival wakes the waiter to read it ([`Wakeups`]) — pushed, not polled. A slow poll
//! (every [`FALLBACK_POLL`]) covers an announcement lost in a bus gap. An answer nobody awaits
//! (unknown id, another session's, past its timeout, or abandoned by its call) is refused with a
//! clear error instead of vanishing: HTTP 400 with a JSON-RPC error without id, as the 2025
//! transport asks of a response the server cannot accept.
//!
//! [`SessionOp::Answered`]: mcp_fleet_bus::SessionOp::Answered

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use mcp_fleet_bus::{BusError, Keyspace};
use mcp_fleet_protocol::{RequestId, RpcError};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::{Notify, oneshot};

/// How often a waiter looks for an answer POSTed to another replica without being woken: only
/// an announcement lost in a bus gap needs it, so one read a second per waiting call.
const FALLBACK_POLL: Duration = Duration::from_secs(1);

/// A client's answer: its result, or its error object.
pub(crate) type Answer = Result<Value, Value>;

/// What travels through the keyspace.
#[derive(Serialize, Deserialize)]
struct Stored {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    result: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    error: Option<Value>,
}

/// Why an answer was refused.
#[derive(Debug, thiserror::Error)]
pub(crate) enum AnswerError {
    /// No request with this id awaits an answer from this session.
    #[error("no request with id {0} is waiting for an answer from this session (it timed out, or was never sent)")]
    NotAwaited(String),
    /// The fleet's keyspace could not be reached.
    #[error(transparent)]
    Bus(#[from] BusError),
}

/// The waiters of this node, woken when the bus announces that their answer is stored. A
/// cheap clone; the session streams' intake wakes them, the relay registers them.
#[derive(Clone, Default)]
pub(crate) struct Wakeups {
    /// Request id → its waiter's bell. A std mutex held only to insert, look up or remove.
    inner: Arc<Mutex<HashMap<String, Arc<Notify>>>>,
}

impl Wakeups {
    fn register(&self, id: &str) -> Arc<Notify> {
        let bell = Arc::new(Notify::new());
        self.lock().insert(id.to_owned(), bell.clone());
        bell
    }

    /// The answer to request `id` is stored: wake its waiter, if it waits on this node.
    pub(crate) fn wake(&self, id: &str) {
        if let Some(bell) = self.lock().get(id) {
            bell.notify_one();
        }
    }

    fn remove(&self, id: &str) {
        self.lock().remove(id);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Notify>>> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Where an accepted answer went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Delivered {
    /// To a call waiting on this node.
    Here,
    /// Into the replies keyspace: announce it, so the waiting node reads it.
    Stored,
}

/// Answers to server-to-client requests, across the fleet.
#[derive(Clone)]
pub(crate) struct Relay {
    keys: Arc<dyn Keyspace>,
    /// Waiters on this node: request id → where its answer goes. A std mutex held only to
    /// insert or take.
    local: Arc<Mutex<HashMap<String, oneshot::Sender<Answer>>>>,
    wakeups: Wakeups,
    timeout: Duration,
}

/// One awaited request. Dropping it — the call answered, timed out, or was abandoned (the
/// client closed the call's stream, `notifications/cancelled` aborted it) — forgets the request
/// on this node and in the fleet, so nothing outlives it and a late answer is refused.
pub(crate) struct Awaited {
    id: String,
    rx: oneshot::Receiver<Answer>,
    bell: Arc<Notify>,
    relay: Relay,
}

impl Drop for Awaited {
    fn drop(&mut self) {
        self.relay.lock().remove(&self.id);
        self.relay.wakeups.remove(&self.id);
        let keys = self.relay.keys.clone();
        let id = std::mem::take(&mut self.id);
        // The keyspace is async; a drop outside a runtime (none here: calls run on tokio) leaves
        // the keys to their TTL (twice the request timeout).
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let _ = keys.delete(&format!("w.{id}")).await;
                let _ = keys.delete(&format!("r.{id}")).await;
            });
        }
    }
}

impl Relay {
    pub(crate) fn new(keys: Arc<dyn Keyspace>, timeout: Duration, wakeups: Wakeups) -> Self {
        Relay { keys, local: Arc::default(), wakeups, timeout }
    }

    /// A fresh request id for `session`, awaited from now on.
    pub(crate) async fn expect(&self, session: &str) -> Result<(RequestId, Awaited), BusError> {
        let id = format!("mcpf-{:032x}", rand::random::<u128>());
        let (tx, rx) = oneshot::channel();
        self.lock().insert(id.clone(), tx);
        let bell = self.wakeups.register(&id);
        if let Err(e) = self.keys.put(&format!("w.{id}"), session.as_bytes().to_vec()).await {
            self.lock().remove(&id);
            self.wakeups.remove(&id);
            return Err(e);
        }
        Ok((RequestId::String(id.clone()), Awaited { id, rx, bell, relay: self.clone() }))
    }

    /// Wait for the answer to `awaited`, up to the configured timeout (dropping the future
    /// abandons the request: see [`Awaited`]).
    pub(crate) async fn wait(&self, mut awaited: Awaited) -> Result<Answer, RpcError> {
        let deadline = tokio::time::Instant::now() + self.timeout;
        let key = format!("r.{}", awaited.id);
        loop {
            tokio::select! {
                answer = &mut awaited.rx => break answer.map_err(|_| RpcError::internal("The answer channel closed")),
                _ = awaited.bell.notified() => {}
                _ = tokio::time::sleep(FALLBACK_POLL.min(deadline.saturating_duration_since(tokio::time::Instant::now()))) => {}
            }
            match self.keys.get(&key).await {
                Ok(Some(found)) => {
                    break match serde_json::from_slice::<Stored>(&found.value) {
                        Ok(Stored { error: Some(error), .. }) => Ok(Err(error)),
                        Ok(Stored { result, .. }) => Ok(Ok(result.unwrap_or(Value::Null))),
                        Err(_) => Err(RpcError::internal("The client's answer could not be read back")),
                    };
                }
                Ok(None) => {}
                Err(e) => tracing::warn!(error = %e, "reading a relayed answer failed; retrying"),
            }
            if tokio::time::Instant::now() >= deadline {
                break Err(RpcError::internal(format!(
                    "The client did not answer the server's request within {} s",
                    self.timeout.as_secs()
                )));
            }
        }
    }

    /// Hand `answer` (POSTed by `session`) to the call that waits for it, here or on another
    /// replica.
    pub(crate) async fn answer(&self, session: &str, id: &RequestId, answer: Answer) -> Result<Delivered, AnswerError> {
        let RequestId::String(raw) = id else { return Err(AnswerError::NotAwaited(id.to_json())) };
        let not_awaited = || AnswerError::NotAwaited(id.to_json());
        if mcp_fleet_bus::check_key(&format!("w.{raw}")).is_err() {
            return Err(not_awaited());
        }
        let Some(owner) = self.keys.get(&format!("w.{raw}")).await? else { return Err(not_awaited()) };
        if owner.value != session.as_bytes() {
            return Err(not_awaited());
        }
        let local = self.lock().remove(raw);
        if let Some(tx) = local {
            // The waiter may have just timed out; then the answer has nobody left to reach.
            let _ = tx.send(answer);
            return Ok(Delivered::Here);
        }
        let stored = match answer {
            Ok(result) => Stored { result: Some(result), error: None },
            Err(error) => Stored { result: None, error: Some(error) },
        };
        // A Stored of JSON values always serializes.
        self.keys.put(&format!("r.{raw}"), serde_json::to_vec(&stored).unwrap_or_default()).await?;
        Ok(Delivered::Stored)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, oneshot::Sender<Answer>>> {
        self.local.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_fleet_bus::{MemoryBus, ServerEventBus};

    async fn relay() -> Relay {
        let keys = MemoryBus::new().keyspace("replies", Duration::from_secs(60)).await.unwrap();
        Relay::new(keys, Duration::from_secs(30), Wakeups::default())
    }

    /// Let the spawned cleanup of a dropped request run.
    async fn settle() {
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
    }

    #[tokio::test]
    async fn an_abandoned_request_is_forgotten_and_its_late_answer_refused() {
        let relay = relay().await;
        let (id, awaited) = relay.expect("s1").await.unwrap();
        let waiting = tokio::spawn({
            let relay = relay.clone();
            async move { relay.wait(awaited).await }
        });
        settle().await;
        // The client closed the call's stream (or cancelled it): the call's task is aborted.
        waiting.abort();
        assert!(waiting.await.unwrap_err().is_cancelled());
        settle().await;
        assert!(relay.lock().is_empty(), "the waiter's entry is removed");
        assert!(relay.wakeups.lock().is_empty(), "and its bell");
        let late = relay.answer("s1", &id, Ok(serde_json::json!({}))).await;
        assert!(matches!(late, Err(AnswerError::NotAwaited(_))), "a late answer is refused: {late:?}");
    }

    #[tokio::test]
    async fn an_answered_request_is_forgotten_too() {
        let relay = relay().await;
        let (id, awaited) = relay.expect("s1").await.unwrap();
        assert!(matches!(relay.answer("s2", &id, Ok(Value::Null)).await, Err(AnswerError::NotAwaited(_))));
        assert_eq!(relay.answer("s1", &id, Ok(Value::Bool(true))).await.unwrap(), Delivered::Here);
        assert_eq!(relay.wait(awaited).await.unwrap(), Ok(Value::Bool(true)));
        settle().await;
        assert!(relay.lock().is_empty() && relay.wakeups.lock().is_empty());
        assert!(matches!(relay.answer("s1", &id, Ok(Value::Null)).await, Err(AnswerError::NotAwaited(_))));
    }
}
