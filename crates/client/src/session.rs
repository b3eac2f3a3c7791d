//! [`Session`]: how this client talks to a server of the 2025 era (revision 2025-11-25):
//! `initialize` first (the answer carries the capabilities and an `Mcp-Session-Id`), then
//! `notifications/initialized`; every later request names the session, and change
//! notifications arrive on the session's `GET` stream instead of `subscriptions/listen`.
//!
//! An [`RpcClient`](crate::RpcClient) made with [`RpcClient::era_2025`](crate::RpcClient::era_2025)
//! holds one, shared by its clones; everything above it — snapshots, the listener, the
//! watcher's state machine — is the same for both eras. A 404 for a request naming the
//! session means it ended or expired: the client initializes a new one and retries once.

use std::sync::Mutex;

use serde_json::Value;

/// The 2025-era revision this client speaks.
pub const LEGACY_VERSION: &str = "2025-11-25";

/// The session header (2025-11-25, Session Management).
pub const SESSION_HEADER: &str = "mcp-session-id";

/// One 2025-era session: its id and the capabilities `initialize` answered with.
///
/// The locks are plain mutexes held only to copy a value in or out, never across an
/// `.await`. Two requests that both find no session may each initialize one; the later id
/// wins and the other session simply expires on the server.
#[derive(Debug, Default)]
pub struct Session {
    id: Mutex<Option<String>>,
    initialize_result: Mutex<Option<Value>>,
}

impl Session {
    /// The session id, once `initialize` answered with one.
    pub fn id(&self) -> Option<String> {
        self.id.lock().ok().and_then(|id| id.clone())
    }

    /// The `initialize` result of the current session.
    pub fn initialize_result(&self) -> Option<Value> {
        self.initialize_result.lock().ok().and_then(|r| r.clone())
    }

    /// Record a new session.
    pub(crate) fn set(&self, id: String, result: Value) {
        if let Ok(mut held) = self.id.lock() {
            *held = Some(id);
        }
        if let Ok(mut held) = self.initialize_result.lock() {
            *held = Some(result);
        }
    }

    /// Forget the session (the server answered 404 for it).
    pub(crate) fn clear(&self) {
        if let Ok(mut held) = self.id.lock() {
            *held = None;
        }
    }
}
