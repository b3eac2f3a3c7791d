//! Asking the user for a typed value (MRTR elicitation, which the framework relays as a
//! server-to-client request to 2025-era sessions): [`elicitation`] builds the input request's
//! params with its `requestedSchema` derived from the type, and [`elicited`] reads the
//! answer back as that type.

use mcp_fleet_protocol::RpcError;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

use super::{arguments, schema};
use crate::context::CallContext;

/// The user's answer to an elicitation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Elicited<T> {
    /// The user filled the form in: its content as a `T`.
    Accepted(T),
    /// The user said no.
    Declined,
    /// The user dismissed it without answering.
    Cancelled,
}

/// The params of an `elicitation/create` input request asking the user for a `T`: `message`
/// and a `requestedSchema` derived from `T` (a flat object of strings, numbers, booleans and
/// enums, as elicitation allows; subschemas inlined). Ask it with
/// [`InputRequired::request`](crate::InputRequired::request) and read the answer with
/// [`elicited`].
///
/// ```
/// use mcp_fleet_server::{CallContext, InputRequired, McpServer, Outcome, typed::{self, Elicited}};
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Contact { email: String }
/// let server = McpServer::builder("demo", "1").build();
/// server.add(typed::tool("subscribe", "Subscribes the user", |_: typed::NoArgs, ctx: CallContext| async move {
///     Ok::<_, mcp_fleet_server::RpcError>(match typed::elicited::<Contact>(&ctx, "contact")? {
///         Some(Elicited::Accepted(c)) => Outcome::Complete(format!("subscribed {}", c.email)),
///         Some(_) => Outcome::Complete("not subscribed".to_owned()),
///         None => Outcome::InputRequired(InputRequired::new().request(
///             "contact", "elicitation/create", typed::elicitation::<Contact>("Where do we write to?"))),
///     })
/// })).unwrap();
/// ```
pub fn elicitation<T: JsonSchema>(message: impl Into<String>) -> Value {
    let full = schema::inline_schema_of::<T>();
    let mut requested = Map::new();
    for key in ["$schema", "type", "properties", "required"] {
        if let Some(value) = full.get(key) {
            requested.insert(key.to_owned(), value.clone());
        }
    }
    json!({"message": message.into(), "requestedSchema": requested})
}

/// The answer to the elicitation asked under `key`, once the client has sent it (`None`
/// before); `-32602` naming the failing path when accepted content is no `T`.
pub fn elicited<T: DeserializeOwned>(ctx: &CallContext, key: &str) -> Result<Option<Elicited<T>>, RpcError> {
    let Some(answer) = ctx.input_responses.as_ref().and_then(|r| r.get(key)) else { return Ok(None) };
    match answer.get("action").and_then(Value::as_str) {
        Some("accept") => {
            let content = answer.get("content").cloned().unwrap_or_else(|| json!({}));
            let value = arguments::deserialize(content).map_err(|violation| {
                RpcError::invalid_params(format!("Invalid elicitation answer {key:?} {violation}")).in_band()
            })?;
            Ok(Some(Elicited::Accepted(value)))
        }
        Some("decline") => Ok(Some(Elicited::Declined)),
        _ => Ok(Some(Elicited::Cancelled)),
    }
}
