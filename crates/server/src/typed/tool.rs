//! [`tool`]: a tool whose arguments are a Rust type. Its `inputSchema` is derived from the
//! type once, at registration; each call's arguments are checked against it (as every tool's
//! are), then deserialized once into the type; the handler's return value becomes the result
//! ([`IntoAnswer<CallToolResult>`]), its `outputSchema` derived from a [`Json<U>`](super::Json) result.

use std::sync::Arc;

use futures_util::FutureExt as _;
use mcp_fleet_protocol::RpcError;
use mcp_fleet_protocol::types::{CallToolResult, Icon, Tool};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::answer::IntoAnswer;
use super::handler::TypedHandler;
use super::{arguments, schema};
use crate::catalog::TaskSupport;
use crate::catalog::{Registration, ToolCall, ToolFn};
use crate::context::CallContext;
use crate::error::ServerError;
use crate::outcome::Outcome;

/// A typed tool: what [`tool`] builds; add it with [`McpServer::add`](crate::McpServer::add).
/// Its setters shape the listed definition and how its calls run.
pub struct TypedTool {
    def: Tool,
    run: Result<ToolFn, ServerError>,
    task_support: TaskSupport,
    scopes: Vec<String>,
}

/// A tool called `name` that `handler` answers with arguments of type `T` — see
/// [`TypedHandler`] for the handler's shapes and [`IntoAnswer<CallToolResult>`] for what it may return.
///
/// `T`'s schema must describe an object (a struct, or a map): anything else is a
/// registration error. Arguments that do not fit `T` are answered as the schema check answers
/// them: an `isError` result naming the failing path, which the model can fix.
///
/// ```
/// use mcp_fleet_server::{McpServer, typed::{self, ToolError}};
/// use schemars::JsonSchema;
/// use serde::Deserialize;
///
/// #[derive(Deserialize, JsonSchema)]
/// struct Lookup {
///     /// The order's id, as printed on the invoice.
///     id: String,
/// }
///
/// let server = McpServer::builder("orders", "1").build();
/// server.add(
///     typed::tool("lookup", "Finds an order", |args: Lookup| async move {
///         if args.id.is_empty() {
///             return Err(ToolError::new("an order id is never empty"));
///         }
///         Ok(format!("order {} ships tomorrow", args.id))
///     })
///     .title("Order lookup")
///     .read_only(),
/// ).unwrap();
/// ```
pub fn tool<T, M, H>(name: impl Into<String>, description: impl Into<String>, handler: H) -> TypedTool
where
    T: DeserializeOwned + JsonSchema + Send + 'static,
    H: TypedHandler<T, CallContext, M>,
    <H::Future as Future>::Output: IntoAnswer<CallToolResult>,
{
    let mut def = Tool::new(name, description);
    let input = schema::schema_of::<T>();
    let run = match schema::is_object(&input) {
        true => {
            def.input_schema = input;
            let wrapped =
                <<H::Future as Future>::Output as IntoAnswer<CallToolResult>>::output_schema().map(|output| {
                    let (output, wrapped) = schema::output_schema(output);
                    def.output_schema = Some(output);
                    wrapped
                });
            Ok(erase(handler, wrapped == Some(true)))
        }
        false => Err(ServerError::Definition(format!(
            "tool {:?}: its argument type {} is not a JSON object; use a struct (or typed::NoArgs for none)",
            def.name,
            std::any::type_name::<T>()
        ))),
    };
    TypedTool { def, run, task_support: TaskSupport::default(), scopes: Vec::new() }
}

/// `handler` behind the catalog's tool function: deserialize, run, convert, wrap a non-object
/// structured result as `{"result": …}` when `wrap`.
fn erase<T, M, H>(handler: H, wrap: bool) -> ToolFn
where
    T: DeserializeOwned + Send + 'static,
    H: TypedHandler<T, CallContext, M>,
    <H::Future as Future>::Output: IntoAnswer<CallToolResult>,
{
    Arc::new(move |call: ToolCall| {
        let args = match arguments::deserialize::<T>(Value::Object(call.arguments)) {
            Ok(args) => args,
            Err(violation) => {
                let result = CallToolResult::invalid_arguments(&violation);
                return futures_util::future::ready(Ok(Outcome::Complete(result))).boxed();
            }
        };
        let answer = handler.call(args, call.ctx);
        async move {
            let mut outcome = answer.await.into_answer()?;
            if wrap && let Outcome::Complete(result) = &mut outcome {
                result.structured_content = result.structured_content.take().map(|value| json!({ "result": value }));
            }
            Ok::<_, RpcError>(outcome)
        }
        .boxed()
    })
}

impl TypedTool {
    /// Set the display name.
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.def.title = Some(title.into());
        self
    }

    /// Set one annotation (`readOnlyHint`, `destructiveHint`, …, or one of your own).
    pub fn annotation(mut self, key: &str, value: Value) -> Self {
        let annotations = self.def.annotations.get_or_insert_with(|| json!({}));
        if let Value::Object(map) = annotations {
            map.insert(key.to_owned(), value);
        }
        self
    }

    /// `readOnlyHint: true`: the tool does not change its environment.
    pub fn read_only(self) -> Self {
        self.annotation("readOnlyHint", Value::Bool(true))
    }

    /// `destructiveHint`: whether the tool may destroy data (the spec's default is `true`).
    pub fn destructive(self, destructive: bool) -> Self {
        self.annotation("destructiveHint", Value::Bool(destructive))
    }

    /// `idempotentHint: true`: calling it twice with the same arguments does no more.
    pub fn idempotent(self) -> Self {
        self.annotation("idempotentHint", Value::Bool(true))
    }

    /// `openWorldHint`: whether the tool reaches outside entities (the web, say).
    pub fn open_world(self, open: bool) -> Self {
        self.annotation("openWorldHint", Value::Bool(open))
    }

    /// Add an icon.
    pub fn icon(mut self, icon: Icon) -> Self {
        self.def.icons.push(icon);
        self
    }

    /// Set one `_meta` entry of the definition.
    pub fn meta(mut self, key: impl Into<String>, value: Value) -> Self {
        self.def = self.def.meta(key, value);
        self
    }

    /// Let its calls become tasks (the tasks extension; see [`TaskSupport`]).
    pub fn task_support(mut self, support: TaskSupport) -> Self {
        self.task_support = support;
        self
    }

    /// Require OAuth scopes of its callers (see [`CatalogEdit::require_scopes`](crate::catalog::CatalogEdit::require_scopes)).
    pub fn require_scopes<S: Into<String>>(mut self, scopes: impl IntoIterator<Item = S>) -> Self {
        self.scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// The definition as it will be listed (its derived schemas included).
    pub fn definition(&self) -> &Tool {
        &self.def
    }
}

impl From<TypedTool> for Registration {
    fn from(tool: TypedTool) -> Self {
        match tool.run {
            Ok(run) => Registration::tool(tool.def, run, tool.task_support, tool.scopes),
            Err(error) => Registration::failed(error),
        }
    }
}
