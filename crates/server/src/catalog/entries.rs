//! Catalog entries: a wire definition plus the async function that serves it.

use std::future::Future;
use std::sync::Arc;

use futures_util::FutureExt;
use mcp_fleet_protocol::RpcError;
use mcp_fleet_protocol::headers::ParamHeader;
use mcp_fleet_protocol::types::{
    CallToolResult, GetPromptResult, Prompt, Resource, ResourceContents, ResourceTemplate, Tool,
};
use serde_json::{Map, Value};

use crate::context::CallContext;
use crate::outcome::Outcome;

/// A boxed future returned by handlers.
pub type HandlerFuture<T> = futures_util::future::BoxFuture<'static, Result<Outcome<T>, RpcError>>;

/// Arguments of one `tools/call`.
#[derive(Debug, Clone)]
pub struct ToolCall {
    /// The `arguments` object (empty when the client sent none).
    pub arguments: Map<String, Value>,
    /// The call's context.
    pub ctx: CallContext,
}

/// One `resources/read` of a static resource or a template match.
#[derive(Debug, Clone)]
pub struct ResourceRead {
    /// The requested URI.
    pub uri: String,
    /// Template variables, when served by a template (`{id}` → value).
    pub variables: Map<String, Value>,
    /// The call's context.
    pub ctx: CallContext,
}

/// One `prompts/get`.
#[derive(Debug, Clone)]
pub struct PromptGet {
    /// String arguments.
    pub arguments: Map<String, Value>,
    /// The call's context.
    pub ctx: CallContext,
}

pub(crate) type ToolFn = Arc<dyn Fn(ToolCall) -> HandlerFuture<CallToolResult> + Send + Sync>;
pub(crate) type ResourceFn = Arc<dyn Fn(ResourceRead) -> HandlerFuture<Vec<ResourceContents>> + Send + Sync>;
pub(crate) type PromptFn = Arc<dyn Fn(PromptGet) -> HandlerFuture<GetPromptResult> + Send + Sync>;

/// Box a user handler, turning a panic into `-32603` instead of a dropped connection.
pub(crate) fn boxed<A, T, R, F, Fut>(f: F) -> Arc<dyn Fn(A) -> HandlerFuture<T> + Send + Sync>
where
    A: Send + 'static,
    T: 'static,
    R: Into<Outcome<T>>,
    F: Fn(A) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<R, RpcError>> + Send + 'static,
{
    Arc::new(move |arg| {
        std::panic::AssertUnwindSafe(f(arg))
            .catch_unwind()
            .map(|r| match r {
                Ok(r) => r.map(Into::into),
                Err(_) => Err(RpcError::internal("The handler failed unexpectedly")),
            })
            .boxed()
    })
}

/// A registered tool.
#[derive(Clone)]
pub(crate) struct ToolEntry {
    pub(crate) def: Tool,
    pub(crate) enabled: bool,
    pub(crate) required_capabilities: Option<Value>,
    pub(crate) param_headers: Vec<ParamHeader>,
    pub(crate) run: ToolFn,
}

/// A registered static resource.
#[derive(Clone)]
pub(crate) struct ResourceEntry {
    pub(crate) def: Resource,
    pub(crate) enabled: bool,
    pub(crate) read: ResourceFn,
}

/// A registered resource template.
#[derive(Clone)]
pub(crate) struct TemplateEntry {
    pub(crate) def: ResourceTemplate,
    pub(crate) enabled: bool,
    pub(crate) pattern: super::template::UriTemplate,
    pub(crate) read: ResourceFn,
}

/// A registered prompt.
#[derive(Clone)]
pub(crate) struct PromptEntry {
    pub(crate) def: Prompt,
    pub(crate) enabled: bool,
    pub(crate) get: PromptFn,
}

/// Anything listed by name in a catalog list.
pub(crate) trait Listed {
    fn key(&self) -> &str;
    fn is_enabled(&self) -> bool;
    fn set_enabled(&mut self, on: bool);
    fn wire(&self) -> Value;
}

macro_rules! listed {
    ($t:ty, $key:ident) => {
        impl Listed for $t {
            fn key(&self) -> &str {
                &self.def.$key
            }
            fn is_enabled(&self) -> bool {
                self.enabled
            }
            fn set_enabled(&mut self, on: bool) {
                self.enabled = on;
            }
            fn wire(&self) -> Value {
                // Serializing these plain wire structs cannot fail.
                serde_json::to_value(&self.def).unwrap_or(Value::Null)
            }
        }
    };
}

listed!(ToolEntry, name);
listed!(ResourceEntry, uri);
listed!(TemplateEntry, uri_template);
listed!(PromptEntry, name);
