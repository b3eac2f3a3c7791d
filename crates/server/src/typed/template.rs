//! [`template`]: a resource template whose `{variables}` are parsed into a Rust type. The
//! template's variables and the type's fields are checked against each other at registration
//! (a typo is an error then, not a silent `None` later); each read's variables are parsed as
//! the type's schema asks (numbers, booleans) and deserialized once.

use std::sync::Arc;

use futures_util::FutureExt as _;
use mcp_fleet_protocol::RpcError;
use mcp_fleet_protocol::types::{ResourceContents, ResourceTemplate};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::answer::IntoAnswer;
use super::completion::CompleterSet;
use super::handler::TypedHandler;
use super::{arguments, schema};
use crate::catalog::{Registration, ResourceFn, ResourceRead, UriTemplate};
use crate::error::ServerError;
use crate::outcome::Outcome;

impl IntoAnswer<Vec<ResourceContents>> for ResourceContents {
    fn into_answer(self) -> Result<Outcome<Vec<ResourceContents>>, RpcError> {
        Ok(Outcome::Complete(vec![self]))
    }
}

/// A typed resource template: what [`template`] builds; add it with
/// [`McpServer::add`](crate::McpServer::add).
pub struct TypedTemplate {
    def: ResourceTemplate,
    /// The template's variables, in order (empty when it does not parse: `read` says why).
    variables: Vec<String>,
    read: Result<ResourceFn, ServerError>,
    completers: CompleterSet,
}

/// A resource template `uri_template` (RFC 6570 level 1, `orders://{id}/lines/{line}`) called
/// `name`, whose matches `handler` reads with the variables as a `T` and the read itself
/// ([`ResourceRead`]: the URI and the call's context).
///
/// Every variable must be a field of `T` and every required field of `T` a variable. A value
/// that does not parse (`orders://abc` for a numeric `id`) is `-32602` naming the variable.
///
/// ```
/// use mcp_fleet_server::{McpServer, catalog::ResourceRead, typed, types::ResourceContents};
/// use schemars::JsonSchema;
/// use serde::Deserialize;
///
/// #[derive(Deserialize, JsonSchema)]
/// struct OrderLine { order: u64, line: u32 }
///
/// let server = McpServer::builder("orders", "1").build();
/// server.add(
///     typed::template("orders://{order}/lines/{line}", "order-line", |at: OrderLine, read: ResourceRead| async move {
///         ResourceContents::text(read.uri, "text/plain", format!("line {} of order {}", at.line, at.order))
///     })
///     .description("One line of an order")
///     .mime_type("text/plain"),
/// ).unwrap();
/// ```
pub fn template<T, M, H>(uri_template: impl Into<String>, name: impl Into<String>, handler: H) -> TypedTemplate
where
    T: DeserializeOwned + JsonSchema + Send + 'static,
    H: TypedHandler<T, ResourceRead, M>,
    <H::Future as Future>::Output: IntoAnswer<Vec<ResourceContents>>,
{
    let def = ResourceTemplate { uri_template: uri_template.into(), name: name.into(), ..ResourceTemplate::default() };
    let root = schema::schema_of::<T>();
    let variables = UriTemplate::parse(&def.uri_template).map(|t| t.variables().map(str::to_owned).collect::<Vec<_>>());
    let read = match &variables {
        Ok(variables) => fields_match(&def.uri_template, variables, &root).map(|()| erase(handler, Arc::new(root))),
        Err(error) => Err(ServerError::Definition(error.to_string())),
    };
    TypedTemplate { def, variables: variables.unwrap_or_default(), read, completers: CompleterSet::default() }
}

/// The template's variables and `root`'s properties agree: each variable a property, each
/// required property a variable.
fn fields_match(template: &str, variables: &[String], root: &Value) -> Result<(), ServerError> {
    let refuse = |why: String| ServerError::Definition(format!("resource template {template:?}: {why}"));
    if !schema::is_object(root) {
        return Err(refuse("its variables' type is not a struct".into()));
    }
    if let Some(unknown) = variables.iter().find(|v| schema::property(root, v).is_none()) {
        return Err(refuse(format!("variable {{{unknown}}} is not a field of its type")));
    }
    if let Some(missing) = schema::required(root).into_iter().find(|f| !variables.contains(&(*f).to_owned())) {
        return Err(refuse(format!("field {missing:?} is required but no {{{missing}}} variable sets it")));
    }
    Ok(())
}

fn erase<T, M, H>(handler: H, root: Arc<Value>) -> ResourceFn
where
    T: DeserializeOwned + Send + 'static,
    H: TypedHandler<T, ResourceRead, M>,
    <H::Future as Future>::Output: IntoAnswer<Vec<ResourceContents>>,
{
    Arc::new(move |mut read: ResourceRead| {
        let values = Value::Object(arguments::coerce_strings(std::mem::take(&mut read.variables), &root));
        let variables = match arguments::deserialize::<T>(values) {
            Ok(variables) => variables,
            Err(violation) => {
                let error = RpcError::invalid_params(format!("Invalid URI {} {violation}", read.uri))
                    .with_data(serde_json::json!({"uri": read.uri}))
                    .in_band();
                return futures_util::future::ready(Err(error)).boxed();
            }
        };
        let answer = handler.call(variables, read);
        async move { answer.await.into_answer() }.boxed()
    })
}

impl TypedTemplate {
    /// Set the description.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.def.description = Some(description.into());
        self
    }

    /// Set the MIME type of what it reads.
    pub fn mime_type(mut self, mime: impl Into<String>) -> Self {
        self.def.mime_type = Some(mime.into());
        self
    }

    /// Set the display name.
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.def.title = Some(title.into());
        self
    }

    /// Complete the variable `variable` with `handler` (as
    /// [`TypedPrompt::complete`](super::TypedPrompt::complete)). A name that is not one of the
    /// template's variables is a registration error.
    pub fn complete<M, H>(mut self, variable: &str, handler: H) -> Self
    where
        H: TypedHandler<String, crate::catalog::CompletionRequest, M>,
        <H::Future as Future>::Output: IntoAnswer<crate::catalog::CompletionValues>,
    {
        if self.variables.iter().any(|v| v == variable) {
            self.completers.insert(variable.to_owned(), handler);
        } else if self.read.is_ok() {
            let why = format!("resource template {:?}: it has no {{{variable}}} to complete", self.def.uri_template);
            self.read = Err(ServerError::Definition(why));
        }
        self
    }

    /// The definition as it will be listed.
    pub fn definition(&self) -> &ResourceTemplate {
        &self.def
    }
}

impl From<TypedTemplate> for Registration {
    fn from(template: TypedTemplate) -> Self {
        match template.read {
            Ok(read) => Registration::template(template.def, read, template.completers.into_completers()),
            Err(error) => Registration::failed(error),
        }
    }
}
