//! The catalog's entries: a wire definition, whether it is enabled, and the handler that
//! serves it; and [`Listed`], what a list needs of its entries.

use mcp_fleet_protocol::headers::ParamHeader;
use mcp_fleet_protocol::schema::ToolSchemas;
use mcp_fleet_protocol::types::{
    CallToolResult, GetPromptResult, Prompt, Resource, ResourceContents, ResourceTemplate, Tool,
};
use serde::Serialize;
use serde_json::Value;

use super::completer::Completers;
use super::entry_handler::{PromptGet, ResourceRead, SharedHandler, ToolCall};
use super::template::UriTemplate;
use crate::context::Principal;

pub(crate) type ToolFn = SharedHandler<ToolCall, CallToolResult>;
pub(crate) type ResourceFn = SharedHandler<ResourceRead, Vec<ResourceContents>>;
pub(crate) type PromptFn = SharedHandler<PromptGet, GetPromptResult>;

/// The revision of a definition (a tool, prompt, resource or template as listed): 16 hex
/// digits of the SHA-256 of its canonical JSON. Equal on every replica serving the same
/// definition; any change to it (description, schema, annotations, …) changes it. Computed
/// once, when the definition is set, and carried by the signed `requestState` minted for it.
pub(crate) fn definition_revision(def: &impl Serialize) -> DefinitionRevision {
    use sha2::Digest as _;
    // Wire structs with string keys and no custom serializers: serializing cannot fail.
    let definition = serde_json::to_value(def).unwrap_or(Value::Null);
    let digest = sha2::Sha256::digest(mcp_fleet_protocol::jsonrpc::value_bytes(&definition));
    digest[..8].iter().map(|b| format!("{b:02x}")).collect::<String>().into()
}

/// A definition's revision ([`definition_revision`]), shared by the entry and its calls.
pub(crate) type DefinitionRevision = std::sync::Arc<str>;

/// A registered tool.
#[derive(Clone)]
pub(crate) struct ToolEntry {
    pub(crate) def: Tool,
    /// `def`'s revision, computed when the definition was set.
    pub(crate) revision: DefinitionRevision,
    /// `def`'s input and output schemas, compiled when the definition was set (so once per
    /// tool and revision, never per call).
    pub(crate) schemas: ToolSchemas,
    pub(crate) enabled: bool,
    pub(crate) required_capabilities: Option<Value>,
    pub(crate) param_headers: Vec<ParamHeader>,
    /// OAuth scopes a principal needs to see and call it (empty: none).
    pub(crate) required_scopes: Vec<String>,
    /// Whether its calls may become tasks (the tasks extension).
    pub(crate) task_support: super::task_support::TaskSupport,
    /// How its results may be cached (`None`: private, CACHE-6), for interceptors.
    pub(crate) cache_hint: Option<mcp_fleet_protocol::types::CacheHint>,
    pub(crate) run: ToolFn,
}

impl ToolEntry {
    /// Whether `principal` holds every scope the tool requires (anyone, when it requires none).
    pub(crate) fn allows(&self, principal: Option<&Principal>) -> bool {
        self.required_scopes.is_empty() || principal.is_some_and(|p| p.has_scopes(&self.required_scopes))
    }
}

/// A registered static resource.
#[derive(Clone)]
pub(crate) struct ResourceEntry {
    pub(crate) def: Resource,
    /// `def`'s revision, computed when the definition was set.
    pub(crate) revision: DefinitionRevision,
    pub(crate) enabled: bool,
    pub(crate) read: ResourceFn,
}

/// A registered resource template.
#[derive(Clone)]
pub(crate) struct TemplateEntry {
    pub(crate) def: ResourceTemplate,
    /// `def`'s revision, computed when the definition was set.
    pub(crate) revision: DefinitionRevision,
    pub(crate) enabled: bool,
    pub(crate) pattern: UriTemplate,
    pub(crate) read: ResourceFn,
    /// Its variables' completers (typed templates).
    pub(crate) completers: Completers,
}

/// A registered prompt.
#[derive(Clone)]
pub(crate) struct PromptEntry {
    pub(crate) def: Prompt,
    /// `def`'s revision, computed when the definition was set.
    pub(crate) revision: DefinitionRevision,
    pub(crate) enabled: bool,
    pub(crate) get: PromptFn,
    /// Its arguments' completers (typed prompts).
    pub(crate) completers: Completers,
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
                // These wire structs have string keys and no custom serializers, so turning
                // them into a `Value` cannot fail; `Null` is unreachable.
                serde_json::to_value(&self.def).unwrap_or(Value::Null)
            }
        }
    };
}

listed!(ToolEntry, name);
listed!(ResourceEntry, uri);
listed!(TemplateEntry, uri_template);
listed!(PromptEntry, name);
