//! [`IntoAnswer`]: what a typed handler may return, for each kind of entry (`T`: a tool's
//! [`CallToolResult`](crate::types::CallToolResult), a prompt's
//! [`GetPromptResult`](crate::types::GetPromptResult), a template's contents). The kinds share
//! two conversions, here: an [`Outcome`] asking for input, and a `Result` whose error is a
//! JSON-RPC error. Each kind's own conversions live beside it (`tool_result`, `prompt`,
//! `template`).

use mcp_fleet_protocol::RpcError;
use serde_json::Value;

use crate::outcome::Outcome;

/// What a typed handler may return as a `T`: for tools `String`, `&'static str`,
/// `CallToolResult`, `Content`, `Vec<Content>`, [`Json<U>`](super::Json) and
/// `Result<_, ToolError | String | Box<dyn Error>>`; for prompts `String` (one user
/// message), `Vec<PromptMessage>`, `GetPromptResult`; for templates `ResourceContents` and
/// `Vec<ResourceContents>`; for all, [`Outcome<R>`] and `Result<R, RpcError>` (a protocol
/// error). Implement it for a type of your own to return that type directly.
///
/// ```
/// use mcp_fleet_server::{McpServer, RpcError, Outcome, typed::{self, IntoAnswer}, types::CallToolResult};
/// struct Celsius(f64);
/// impl IntoAnswer<CallToolResult> for Celsius {
///     fn into_answer(self) -> Result<Outcome<CallToolResult>, RpcError> {
///         Ok(Outcome::Complete(CallToolResult::text(format!("{:.1} °C", self.0))))
///     }
/// }
/// let server = McpServer::builder("demo", "1").build();
/// server.add(typed::tool("temperature", "Now", |_: typed::NoArgs| async { Celsius(21.0) })).unwrap();
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not something a typed handler can answer with",
    note = "a tool returns String, CallToolResult, Json<T> or Result<_, ToolError>; a prompt String or GetPromptResult; a template ResourceContents"
)]
pub trait IntoAnswer<T> {
    /// The schema of the answer's structured content, when it has one ([`Json<U>`](super::Json)'s
    /// `U`); a tool's `outputSchema` is derived from it.
    fn output_schema() -> Option<Value>
    where
        Self: Sized,
    {
        None
    }

    /// The answer, a request for input, or a protocol error.
    fn into_answer(self) -> Result<Outcome<T>, RpcError>;
}

impl<T, R: IntoAnswer<T>> IntoAnswer<T> for Outcome<R> {
    fn output_schema() -> Option<Value> {
        R::output_schema()
    }

    fn into_answer(self) -> Result<Outcome<T>, RpcError> {
        match self {
            Outcome::Complete(answer) => answer.into_answer(),
            Outcome::InputRequired(input) => Ok(Outcome::InputRequired(input)),
        }
    }
}

impl<T, R: IntoAnswer<T>> IntoAnswer<T> for Result<R, RpcError> {
    fn output_schema() -> Option<Value> {
        R::output_schema()
    }

    fn into_answer(self) -> Result<Outcome<T>, RpcError> {
        self?.into_answer()
    }
}

/// `T` itself, complete.
macro_rules! complete {
    ($t:ty) => {
        impl IntoAnswer<$t> for $t {
            fn into_answer(self) -> Result<Outcome<$t>, RpcError> {
                Ok(Outcome::Complete(self))
            }
        }
    };
}

complete!(mcp_fleet_protocol::types::CallToolResult);
complete!(mcp_fleet_protocol::types::GetPromptResult);
complete!(Vec<mcp_fleet_protocol::types::ResourceContents>);
complete!(crate::catalog::CompletionValues);
