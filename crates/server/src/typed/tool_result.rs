//! What a typed tool returns: anything [`IntoAnswer<CallToolResult>`] — text, a [`CallToolResult`] built
//! by hand, [`Json<U>`] (structured content, its `outputSchema` derived from `U`), an
//! [`Outcome`] asking for input, or a `Result` whose error is the tool's failure
//! ([`ToolError`], `String`: an `isError` result the model can read) or a protocol error
//! ([`RpcError`]: a JSON-RPC error, for a deliberate refusal).

use std::fmt;

use mcp_fleet_protocol::RpcError;
use mcp_fleet_protocol::types::{CallToolResult, Content};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use super::answer::IntoAnswer;
use crate::outcome::Outcome;

/// A structured tool result: `U` becomes `structuredContent` (wrapped as `{"result": …}` when
/// `U` is not an object) with its JSON as a text block for clients that read only `content`,
/// and the tool's `outputSchema` is derived from `U` and every result checked against it.
///
/// ```
/// use mcp_fleet_server::{McpServer, typed::{self, Json}};
/// #[derive(serde::Serialize, schemars::JsonSchema)]
/// struct Weather { celsius: f64, sky: String }
/// let server = McpServer::builder("demo", "1").build();
/// server.add(typed::tool("weather", "Today's weather", |_: typed::NoArgs| async {
///     Json(Weather { celsius: 21.5, sky: "clear".into() })
/// })).unwrap();
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Json<U>(pub U);

/// A tool's failure, answered as an `isError` result with its message (the model sees it and
/// may retry), or — made with [`ToolError::protocol`] — as a JSON-RPC error. Any error type
/// converts with `?`, so `Result<_, ToolError>` is the handler's usual return type.
///
/// ```
/// use mcp_fleet_server::typed::ToolError;
/// async fn parse(text: String) -> Result<String, ToolError> {
///     let n: i64 = text.parse()?; // a ParseIntError becomes an isError result
///     Ok((n * 2).to_string())
/// }
/// ```
pub struct ToolError(Failure);

enum Failure {
    Tool(String),
    Protocol(RpcError),
}

impl ToolError {
    /// A failure the model can read (`isError: true` with `message`).
    pub fn new(message: impl fmt::Display) -> Self {
        ToolError(Failure::Tool(message.to_string()))
    }

    /// A protocol error: the call is answered with `error` as its JSON-RPC error.
    pub fn protocol(error: RpcError) -> Self {
        ToolError(Failure::Protocol(error))
    }
}

impl<E: std::error::Error> From<E> for ToolError {
    fn from(error: E) -> Self {
        ToolError::new(error)
    }
}

impl fmt::Debug for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Failure::Tool(message) => f.debug_tuple("ToolError").field(message).finish(),
            Failure::Protocol(error) => f.debug_tuple("ToolError::Protocol").field(error).finish(),
        }
    }
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Failure::Tool(message) => f.write_str(message),
            Failure::Protocol(error) => write!(f, "{error}"),
        }
    }
}

impl IntoAnswer<CallToolResult> for String {
    fn into_answer(self) -> Result<Outcome<CallToolResult>, RpcError> {
        Ok(Outcome::Complete(CallToolResult::text(self)))
    }
}

impl IntoAnswer<CallToolResult> for &'static str {
    fn into_answer(self) -> Result<Outcome<CallToolResult>, RpcError> {
        Ok(Outcome::Complete(CallToolResult::text(self)))
    }
}

impl IntoAnswer<CallToolResult> for Content {
    fn into_answer(self) -> Result<Outcome<CallToolResult>, RpcError> {
        vec![self].into_answer()
    }
}

impl IntoAnswer<CallToolResult> for Vec<Content> {
    fn into_answer(self) -> Result<Outcome<CallToolResult>, RpcError> {
        Ok(Outcome::Complete(CallToolResult { content: self, ..CallToolResult::default() }))
    }
}

impl<U: Serialize + JsonSchema> IntoAnswer<CallToolResult> for Json<U> {
    fn output_schema() -> Option<Value> {
        Some(super::schema::schema_of::<U>())
    }

    fn into_answer(self) -> Result<Outcome<CallToolResult>, RpcError> {
        let value = serde_json::to_value(self.0)
            .map_err(|e| RpcError::internal(format!("The tool's result could not be serialized: {e}")))?;
        Ok(Outcome::Complete(CallToolResult::structured(value)))
    }
}

impl<R: IntoAnswer<CallToolResult>> IntoAnswer<CallToolResult> for Result<R, ToolError> {
    fn output_schema() -> Option<Value> {
        R::output_schema()
    }

    fn into_answer(self) -> Result<Outcome<CallToolResult>, RpcError> {
        match self {
            Ok(result) => result.into_answer(),
            Err(ToolError(Failure::Tool(message))) => Ok(Outcome::Complete(CallToolResult::error(message))),
            Err(ToolError(Failure::Protocol(error))) => Err(error),
        }
    }
}

/// The tool's failure, with a `Display` error.
macro_rules! failure {
    ($e:ty) => {
        impl<R: IntoAnswer<CallToolResult>> IntoAnswer<CallToolResult> for Result<R, $e> {
            fn output_schema() -> Option<Value> {
                R::output_schema()
            }

            fn into_answer(self) -> Result<Outcome<CallToolResult>, RpcError> {
                self.map_err(ToolError::new).into_answer()
            }
        }
    };
}

failure!(String);
failure!(Box<dyn std::error::Error + Send + Sync>);
