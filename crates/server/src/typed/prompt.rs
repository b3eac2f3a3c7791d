//! [`prompt`]: a prompt whose arguments are a Rust type. The listed `arguments` (names,
//! `required`, titles and descriptions) come from the type's schema; the wire's string values
//! are parsed into the numbers and booleans the type asks for, so no hand-written
//! deserializer is needed; the handler returns anything [`IntoAnswer<GetPromptResult>`]
//! (one text becomes one user message).

use std::sync::Arc;

use futures_util::FutureExt as _;
use mcp_fleet_protocol::RpcError;
use mcp_fleet_protocol::types::{Content, GetPromptResult, Icon, Prompt, PromptArgument, PromptMessage, Role};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::answer::IntoAnswer;
use super::completion::CompleterSet;
use super::handler::TypedHandler;
use super::{arguments, schema};
use crate::catalog::{PromptFn, PromptGet, Registration};
use crate::context::CallContext;
use crate::error::ServerError;
use crate::outcome::Outcome;

impl IntoAnswer<GetPromptResult> for Vec<PromptMessage> {
    fn into_answer(self) -> Result<Outcome<GetPromptResult>, RpcError> {
        Ok(Outcome::Complete(GetPromptResult { messages: self, ..GetPromptResult::default() }))
    }
}

impl IntoAnswer<GetPromptResult> for String {
    fn into_answer(self) -> Result<Outcome<GetPromptResult>, RpcError> {
        vec![PromptMessage { role: Role::User, content: Content::text(self) }].into_answer()
    }
}

/// A typed prompt: what [`prompt`] builds; add it with [`McpServer::add`](crate::McpServer::add).
pub struct TypedPrompt {
    def: Prompt,
    get: Result<PromptFn, ServerError>,
    completers: CompleterSet,
}

/// A prompt called `name` that `handler` answers with arguments of type `T`.
///
/// Each field of `T` is one listed argument: its serde name, `required` unless it is an
/// `Option` or has a default, its doc comment as `description` and a `#[schemars(title = …)]`
/// as `title`. Fields must be strings, numbers, booleans or enums of strings (prompt arguments
/// are strings on the wire): a nested object or list is a registration error. A value that
/// does not parse is `-32602` naming the argument.
///
/// ```
/// use mcp_fleet_server::{McpServer, typed};
/// use schemars::JsonSchema;
/// use serde::Deserialize;
///
/// #[derive(Deserialize, JsonSchema)]
/// struct Review {
///     /// The language of the code.
///     language: String,
///     /// How many findings at most.
///     max_findings: Option<u32>,
/// }
///
/// let server = McpServer::builder("reviews", "1").build();
/// server.add(typed::prompt("review", "Reviews a change", |r: Review| async move {
///     format!("Review this {} change; list at most {} findings.", r.language, r.max_findings.unwrap_or(5))
/// })).unwrap();
/// ```
pub fn prompt<T, M, H>(name: impl Into<String>, description: impl Into<String>, handler: H) -> TypedPrompt
where
    T: DeserializeOwned + JsonSchema + Send + 'static,
    H: TypedHandler<T, CallContext, M>,
    <H::Future as Future>::Output: IntoAnswer<GetPromptResult>,
{
    let name = name.into();
    let root = schema::schema_of::<T>();
    let arguments = prompt_arguments(&name, &root);
    let def = Prompt::new(name, description, arguments.as_ref().map_or_else(|_| Vec::new(), Clone::clone));
    let get = arguments.map(|_| erase(handler, Arc::new(root)));
    TypedPrompt { def, get, completers: CompleterSet::default() }
}

/// The listed arguments of a prompt whose arguments' schema is `root`.
fn prompt_arguments(prompt: &str, root: &Value) -> Result<Vec<PromptArgument>, ServerError> {
    let refuse = |why: String| ServerError::Definition(format!("prompt {prompt:?}: {why}"));
    if !schema::is_object(root) {
        return Err(refuse("its argument type is not a struct (use typed::NoArgs for none)".into()));
    }
    let required = schema::required(root);
    let names = root.get("properties").and_then(Value::as_object).map(|p| p.keys().cloned().collect::<Vec<_>>());
    let mut listed = Vec::new();
    for name in names.unwrap_or_default() {
        let property = schema::property(root, &name).unwrap_or(&Value::Null);
        let types = schema::types(property);
        if types.iter().any(|t| matches!(*t, "object" | "array")) {
            return Err(refuse(format!("argument {name:?} is a nested object or list; prompt arguments are strings")));
        }
        let text = |key: &str| property.get(key).and_then(Value::as_str).map(str::to_owned);
        listed.push(PromptArgument {
            required: required.contains(&name.as_str()),
            title: text("title"),
            description: text("description"),
            name,
        });
    }
    Ok(listed)
}

fn erase<T, M, H>(handler: H, root: Arc<Value>) -> PromptFn
where
    T: DeserializeOwned + Send + 'static,
    H: TypedHandler<T, CallContext, M>,
    <H::Future as Future>::Output: IntoAnswer<GetPromptResult>,
{
    Arc::new(move |get: PromptGet| {
        let values = Value::Object(arguments::coerce_strings(get.arguments, &root));
        let args = match arguments::deserialize::<T>(values) {
            Ok(args) => args,
            Err(violation) => {
                let error = RpcError::invalid_params(format!("Invalid prompt arguments {violation}")).in_band();
                return futures_util::future::ready(Err(error)).boxed();
            }
        };
        let answer = handler.call(args, get.ctx);
        async move { answer.await.into_answer() }.boxed()
    })
}

impl TypedPrompt {
    /// Set the display name.
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.def.title = Some(title.into());
        self
    }

    /// Add an icon.
    pub fn icon(mut self, icon: Icon) -> Self {
        self.def.icons.push(icon);
        self
    }

    /// Complete `argument` with `handler` (`|prefix: String|` or `|prefix, request|`,
    /// answering `Vec<String>` or [`CompletionValues`](crate::catalog::CompletionValues)); the prompt
    /// then advertises completions. An argument the prompt does not list is a registration
    /// error.
    ///
    /// ```
    /// use mcp_fleet_server::{McpServer, typed};
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct Review { language: String }
    /// let server = McpServer::builder("reviews", "1").build();
    /// server.add(
    ///     typed::prompt("review", "Reviews a change", |r: Review| async move { format!("Review this {}", r.language) })
    ///         .complete("language", |prefix: String| async move {
    ///             ["rust", "python", "go"].iter().filter(|l| l.starts_with(&prefix)).map(|l| l.to_string()).collect::<Vec<_>>()
    ///         }),
    /// ).unwrap();
    /// ```
    pub fn complete<M, H>(mut self, argument: &str, handler: H) -> Self
    where
        H: TypedHandler<String, crate::catalog::CompletionRequest, M>,
        <H::Future as Future>::Output: IntoAnswer<crate::catalog::CompletionValues>,
    {
        if self.def.arguments.iter().any(|a| a.name == argument) {
            self.completers.insert(argument.to_owned(), handler);
        } else if self.get.is_ok() {
            let why =
                format!("prompt {:?}: cannot complete {argument:?}, which is not one of its arguments", self.def.name);
            self.get = Err(ServerError::Definition(why));
        }
        self
    }

    /// The definition as it will be listed (its derived arguments included).
    pub fn definition(&self) -> &Prompt {
        &self.def
    }
}

impl From<TypedPrompt> for Registration {
    fn from(prompt: TypedPrompt) -> Self {
        match prompt.get {
            Ok(get) => Registration::prompt(prompt.def, get, prompt.completers.into_completers()),
            Err(error) => Registration::failed(error),
        }
    }
}
