//! The typed way to write a server: tools, prompts and resource templates whose arguments are
//! Rust types. The schema is derived from the type (JSON Schema 2020-12 through `schemars`:
//! doc comments become descriptions, serde attributes shape it), the arguments are checked
//! against it and deserialized once, and the handler's return value becomes the wire result.
//! The untyped API ([`McpServer::tool`](crate::McpServer::tool) and friends) stays for
//! catalogs built at run time; both give the same wire.
//!
//! - [`tool`], [`prompt`], [`template`]: build an entry; add it with
//!   [`McpServer::add`](crate::McpServer::add) (a duplicate name is an error, never a silent
//!   replacement). The `#[server]` macro (feature `macros`) writes these calls for you.
//! - [`TypedHandler`]: the handler's shapes, `|args: T|` or `|args: T, ctx|`.
//! - [`IntoAnswer`], with [`Json`] and [`ToolError`]: what handlers may return.
//! - [`NoArgs`]: the arguments of a tool or prompt that takes none.
//! - [`elicitation`] and [`elicited`]: ask the user for a typed value (MRTR, relayed to 2025
//!   sessions) and read the answer as that type. `.complete(..)` on a typed prompt or template
//!   completes its arguments.
//!
//! Layering: `typed` builds [`Registration`](crate::catalog::Registration)s out of the catalog's
//! handler types; the catalog never names it.
//!
//! ```
//! use mcp_fleet_server::{McpServer, typed::{self, Json, ToolError}};
//! use schemars::JsonSchema;
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(Deserialize, JsonSchema)]
//! struct Divide {
//!     /// The dividend.
//!     a: f64,
//!     /// The divisor; never zero.
//!     b: f64,
//! }
//!
//! #[derive(Serialize, JsonSchema)]
//! struct Quotient {
//!     value: f64,
//! }
//!
//! let server = McpServer::builder("calculator", "1.0.0").build();
//! server.add(typed::tool("divide", "Divides a by b", |d: Divide| async move {
//!     if d.b == 0.0 {
//!         return Err(ToolError::new("cannot divide by zero"));
//!     }
//!     Ok(Json(Quotient { value: d.a / d.b }))
//! }))?;
//! # Ok::<(), mcp_fleet_server::ServerError>(())
//! ```

mod answer;
mod arguments;
mod completion;
mod elicitation;
mod handler;
mod prompt;
mod schema;
mod template;
mod tool;
mod tool_result;

pub use answer::IntoAnswer;
pub use elicitation::{Elicited, elicitation, elicited};
pub use handler::TypedHandler;
pub use prompt::{TypedPrompt, prompt};
pub use template::{TypedTemplate, template};
pub use tool::{TypedTool, tool};
pub use tool_result::{Json, ToolError};

#[cfg(feature = "events")]
pub(crate) use schema::schema_of;

/// The arguments of a tool or prompt that takes none: its schema is an object with no
/// properties, and whatever object the client sends deserializes.
///
/// ```
/// use mcp_fleet_server::{McpServer, typed::{self, NoArgs}};
/// let server = McpServer::builder("demo", "1").build();
/// server.add(typed::tool("now", "The server's clock", |_: NoArgs| async {
///     format!("{:?}", std::time::SystemTime::now())
/// })).unwrap();
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Deserialize)]
pub struct NoArgs {}

impl schemars::JsonSchema for NoArgs {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "NoArgs".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({"type": "object", "properties": {}})
    }
}
