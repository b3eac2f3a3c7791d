//! [`RunningCalls`]: the 2025-era calls running on this node, by session and request id, so a
//! `notifications/cancelled` stops its call wherever the notification was POSTed: here
//! directly, or on the node running it through a session event on the bus.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use mcp_fleet_protocol::RequestId;
use tokio::task::AbortHandle;

type Key = (String, String);

/// The running calls of this node. Cheap to clone.
#[derive(Clone, Default)]
pub(crate) struct RunningCalls {
    /// A std mutex held only to insert, take or remove one entry.
    inner: Arc<Mutex<HashMap<Key, AbortHandle>>>,
}

/// Keeps a call registered while it runs; dropping it unregisters the call.
pub(crate) struct Registered {
    calls: RunningCalls,
    key: Key,
}

impl RunningCalls {
    /// Register the call `id` of `session`, stopped by `abort`.
    pub(crate) fn register(&self, session: &str, id: &RequestId, abort: AbortHandle) -> Registered {
        let key = (session.to_owned(), id.to_json());
        self.lock().insert(key.clone(), abort);
        Registered { calls: self.clone(), key }
    }

    /// Stop the call whose id is `id_json` (compact JSON) in `session`; answers whether it ran
    /// here.
    pub(crate) fn cancel(&self, session: &str, id_json: &str) -> bool {
        let abort = self.lock().remove(&(session.to_owned(), id_json.to_owned()));
        abort.map(|a| a.abort()).is_some()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Key, AbortHandle>> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Drop for Registered {
    fn drop(&mut self) {
        self.calls.lock().remove(&self.key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_cancelled_call_stops_and_a_finished_one_is_forgotten() {
        let calls = RunningCalls::default();
        let task = tokio::spawn(std::future::pending::<()>());
        let registered = calls.register("s1", &RequestId::from(7), task.abort_handle());
        assert!(!calls.cancel("s2", "7"), "another session's id is not this call");
        assert!(calls.cancel("s1", "7"));
        assert!(task.await.unwrap_err().is_cancelled());
        drop(registered);
        let done = tokio::spawn(async {});
        drop(calls.register("s1", &RequestId::from("a"), done.abort_handle()));
        assert!(!calls.cancel("s1", "\"a\""), "an unregistered call is not cancelled");
    }
}
