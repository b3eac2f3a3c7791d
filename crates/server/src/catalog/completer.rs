//! Argument completion (`completion/complete`): what the application's completion function
//! is asked and what it answers. Parsing the request is `methods::completion`'s job.

use std::sync::Arc;

use futures_util::future::BoxFuture;
use mcp_fleet_protocol::RpcError;
use serde_json::{Map, Value};

/// What is being completed.
#[derive(Debug, Clone, PartialEq)]
pub enum CompletionRef {
    /// A prompt argument.
    Prompt(String),
    /// A resource template (or resource URI) variable.
    Resource(String),
}

/// One completion request.
#[derive(Debug, Clone)]
pub struct CompletionRequest {
    /// The prompt or resource being completed.
    pub reference: CompletionRef,
    /// The argument's name.
    pub argument: String,
    /// What the user typed so far.
    pub value: String,
    /// Already-resolved arguments (`context.arguments`).
    pub context: Map<String, Value>,
}

/// Completion values (at most 100 are sent, best first).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CompletionValues {
    /// Suggestions.
    pub values: Vec<String>,
    /// Total number of matches, if known.
    pub total: Option<u64>,
    /// Whether more exist than were returned.
    pub has_more: Option<bool>,
}

/// One entry's completers, by argument (prompt) or variable (template) name: what the typed
/// API's `.complete(..)` registers. They answer before the server-wide function.
pub(crate) type Completers = Arc<std::collections::HashMap<String, CompletionFn>>;

/// The application's completion function, as the catalog keeps it.
pub(crate) type CompletionFn =
    Arc<dyn Fn(CompletionRequest) -> BoxFuture<'static, Result<CompletionValues, RpcError>> + Send + Sync>;
