//! What handlers return: a complete result, or (MRTR) a request for more input from the client.

use serde_json::{Map, Value};

/// A handler's answer: complete, or `input_required` (only `tools/call`, `prompts/get` and
/// `resources/read` may answer the latter; spec digest §16).
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome<T> {
    /// The final result.
    Complete(T),
    /// An interim result asking the client for input, then a retry.
    InputRequired(InputRequired),
}

impl<T> From<T> for Outcome<T> {
    fn from(value: T) -> Self {
        Outcome::Complete(value)
    }
}

/// An `InputRequiredResult`: at least one of `input_requests` (non-empty) and `request_state`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct InputRequired {
    /// Server-chosen keys → `InputRequest` objects (`{method, params}`).
    pub input_requests: Map<String, Value>,
    /// Opaque state the client echoes on the retry (always signed by the framework; see
    /// `HandlerOptions::request_state_keys`).
    pub request_state: Option<Value>,
}

impl InputRequired {
    /// An empty request; add entries with [`InputRequired::request`].
    pub fn new() -> Self {
        Self::default()
    }

    /// Ask for one input under `key`.
    pub fn request(mut self, key: impl Into<String>, method: &str, params: Value) -> Self {
        self.input_requests.insert(key.into(), serde_json::json!({"method": method, "params": params}));
        self
    }

    /// Carry state to the retry.
    pub fn state(mut self, state: Value) -> Self {
        self.request_state = Some(state);
        self
    }
}
