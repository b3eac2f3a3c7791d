//! Wire types of 2026-07-28 results (spec digest §8–§13): tools, content blocks, resources,
//! prompts, cache hints, and the result stamping every response goes through.
//!
//! These are plain serde structs with builder-style constructors; the server framework fills
//! them in and serializes them, clients may deserialize them.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::envelope::SERVER_INFO_KEY;

/// A server or client identity (`Implementation`): `name` and `version` are required.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Implementation {
    /// Programmatic name.
    pub name: String,
    /// Version string.
    pub version: String,
    /// Optional display name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it is, for people.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub description: Option<String>,
    /// Its home page.
    #[serde(rename = "websiteUrl", skip_serializing_if = "Option::is_none", default)]
    pub website_url: Option<String>,
    /// Icons a host may show for it.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub icons: Vec<Icon>,
}

impl Implementation {
    /// An identity with a name and a version.
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        Implementation {
            name: name.into(),
            version: version.into(),
            title: None,
            description: None,
            website_url: None,
            icons: Vec::new(),
        }
    }
}

/// An icon (`Icon`): an image a host may show beside a tool, resource, prompt or server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Icon {
    /// An `https:` or `data:` URI of the image.
    pub src: String,
    /// Its MIME type, when the URI does not say (`image/png`, `image/svg+xml`, …).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub mime_type: Option<String>,
    /// Sizes it suits, e.g. `["48x48"]` or `["any"]` for a scalable image.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub sizes: Vec<String>,
    /// The background it is drawn for: `light` or `dark`.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub theme: Option<IconTheme>,
}

impl Icon {
    /// An icon at `src`.
    pub fn new(src: impl Into<String>) -> Self {
        Icon { src: src.into(), mime_type: None, sizes: Vec::new(), theme: None }
    }
}

/// Which background an [`Icon`] is drawn for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum IconTheme {
    /// A light background.
    Light,
    /// A dark background.
    Dark,
}

/// Who a cached result may be shared with (CACHE-1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CacheScope {
    /// No user-specific data; any cache may share it.
    Public,
    /// Reusable only within the same authorization context.
    Private,
}

/// Freshness hint stamped on cacheable results: `ttlMs` and `cacheScope`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheHint {
    /// Milliseconds of freshness.
    pub ttl_ms: u64,
    /// Who may share it.
    pub scope: CacheScope,
}

impl CacheHint {
    /// The conservative default: not cached, private (CACHE-6).
    pub const NONE: CacheHint = CacheHint { ttl_ms: 0, scope: CacheScope::Private };

    /// Write `ttlMs`/`cacheScope` into a result object unless the handler set valid ones.
    pub fn apply(&self, result: &mut Map<String, Value>) {
        if !result.get("ttlMs").is_some_and(Value::is_u64) {
            result.insert("ttlMs".into(), Value::from(self.ttl_ms));
        }
        if !matches!(result.get("cacheScope").and_then(Value::as_str), Some("public" | "private")) {
            let scope = match self.scope {
                CacheScope::Public => "public",
                CacheScope::Private => "private",
            };
            result.insert("cacheScope".into(), Value::from(scope));
        }
    }
}

/// Stamp `resultType: "complete"` (when absent) and `_meta.serverInfo` (when absent) on a
/// result object (RES-1, RES-2).
pub fn stamp_result(result: &mut Map<String, Value>, server_info: &Value) {
    // Looked up before inserting: `Map::entry` takes an owned key, a copy per call even
    // when the member is there already.
    if !result.contains_key("resultType") {
        result.insert("resultType".to_owned(), Value::from("complete"));
    }
    match result.get_mut("_meta") {
        Some(Value::Object(meta)) => {
            if !meta.contains_key(SERVER_INFO_KEY) {
                meta.insert(SERVER_INFO_KEY.to_owned(), server_info.clone());
            }
        }
        Some(_) => {}
        None => {
            let mut meta = Map::new();
            meta.insert(SERVER_INFO_KEY.to_owned(), server_info.clone());
            result.insert("_meta".to_owned(), Value::Object(meta));
        }
    }
}

/// A complete `tools/call` result as its stamped wire object: what [`stamp_result`] gives for
/// `result` turned into a map (`resultType: "complete"`, `_meta.serverInfo` beside the result's
/// own `_meta`, whose own `serverInfo` wins), written without building that map.
///
/// ```
/// use mcp_fleet_protocol::types::{CallToolResult, StampedToolResult};
/// let info = serde_json::json!({"name": "demo", "version": "1.0.0"});
/// let result = CallToolResult::text("hi");
/// let wire = serde_json::to_value(StampedToolResult { result: &result, server_info: &info }).unwrap();
/// assert_eq!(wire["resultType"], "complete");
/// assert_eq!(wire["_meta"]["io.modelcontextprotocol/serverInfo"], info);
/// ```
#[derive(Debug, Clone, Copy)]
pub struct StampedToolResult<'a> {
    /// The handler's result.
    pub result: &'a CallToolResult,
    /// The server's `serverInfo`.
    pub server_info: &'a Value,
}

impl Serialize for StampedToolResult<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap as _;
        let r = self.result;
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("content", &r.content)?;
        if let Some(structured) = &r.structured_content {
            map.serialize_entry("structuredContent", structured)?;
        }
        if r.is_error {
            map.serialize_entry("isError", &true)?;
        }
        map.serialize_entry("resultType", "complete")?;
        map.serialize_entry("_meta", &MetaWithServerInfo { meta: r.meta.as_ref(), server_info: self.server_info })?;
        map.end()
    }
}

/// A result's `_meta` with the server's `serverInfo` added when it has none.
struct MetaWithServerInfo<'a> {
    meta: Option<&'a Map<String, Value>>,
    server_info: &'a Value,
}

impl Serialize for MetaWithServerInfo<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap as _;
        let mut map = serializer.serialize_map(None)?;
        let own = self.meta.into_iter().flatten();
        for (key, value) in own {
            map.serialize_entry(key, value)?;
        }
        if !self.meta.is_some_and(|m| m.contains_key(SERVER_INFO_KEY)) {
            map.serialize_entry(SERVER_INFO_KEY, self.server_info)?;
        }
        map.end()
    }
}

/// A tool definition as listed by `tools/list`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Tool {
    /// Unique name (keep it ≤ 64 chars of `[A-Za-z0-9_./-]`).
    pub name: String,
    /// Display name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the tool does (clients and the conformance suite expect one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// JSON Schema of the arguments, passed through untouched; `"type":"object"` at the root.
    pub input_schema: Value,
    /// JSON Schema of `structuredContent`, passed through untouched.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// Behaviour hints.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Value>,
    /// Icons a host may show for it.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub icons: Vec<Icon>,
    /// Extension metadata (`_meta`), e.g. MCP Apps' `{"ui": {"resourceUri": …}}`.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none", default)]
    pub meta: Option<Map<String, Value>>,
}

impl Tool {
    /// A tool taking no arguments.
    pub fn new(name: impl Into<String>, description: impl Into<String>) -> Self {
        Tool {
            name: name.into(),
            title: None,
            description: Some(description.into()),
            input_schema: serde_json::json!({"type": "object", "properties": {}}),
            output_schema: None,
            annotations: None,
            icons: Vec::new(),
            meta: None,
        }
    }

    /// Set the input schema.
    pub fn input_schema(mut self, schema: Value) -> Self {
        self.input_schema = schema;
        self
    }

    /// Set the output schema.
    pub fn output_schema(mut self, schema: Value) -> Self {
        self.output_schema = Some(schema);
        self
    }
}

/// `title`, `icons` and `_meta` setters shared by every listed definition.
macro_rules! definition_metadata {
    ($($t:ty),+) => {$(
        impl $t {
            /// Set the display name.
            pub fn title(mut self, title: impl Into<String>) -> Self {
                self.title = Some(title.into());
                self
            }

            /// Add an icon.
            pub fn icon(mut self, icon: Icon) -> Self {
                self.icons.push(icon);
                self
            }

            /// Set one `_meta` entry (e.g. `"ui"` → `{"resourceUri": "ui://…"}` for MCP Apps).
            pub fn meta(mut self, key: impl Into<String>, value: Value) -> Self {
                self.meta.get_or_insert_with(Map::new).insert(key.into(), value);
                self
            }
        }
    )+};
}

definition_metadata!(Tool, Resource, ResourceTemplate, Prompt);

/// Optional annotations on a content block.
pub type Annotations = Value;

/// A content block in a tool result or prompt message (TOOL-8).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Content {
    /// Plain text.
    Text {
        /// The text.
        text: String,
    },
    /// Base64 image data.
    Image {
        /// Base64 bytes.
        data: String,
        /// e.g. `image/png`.
        #[serde(rename = "mimeType")]
        mime_type: String,
    },
    /// Base64 audio data.
    Audio {
        /// Base64 bytes.
        data: String,
        /// e.g. `audio/wav`.
        #[serde(rename = "mimeType")]
        mime_type: String,
    },
    /// A link to a resource.
    ResourceLink {
        /// The resource URI.
        uri: String,
        /// Its name.
        name: String,
        /// Optional description.
        #[serde(skip_serializing_if = "Option::is_none")]
        description: Option<String>,
        /// Optional MIME type.
        #[serde(rename = "mimeType", skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
    },
    /// An embedded resource.
    Resource {
        /// The contents.
        resource: ResourceContents,
    },
}

impl Content {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        Content::Text { text: text.into() }
    }
}

/// The contents of one resource: text or base64 blob.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceContents {
    /// The resource URI.
    pub uri: String,
    /// MIME type.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Text contents.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Base64 binary contents.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub blob: Option<String>,
    /// Metadata of these contents (`_meta`, on `ResourceContents` in the 2026-07-28 schema),
    /// e.g. MCP Apps' `{"ui": {"csp": …}}` on a UI resource's HTML.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none", default)]
    pub meta: Option<Map<String, Value>>,
}

impl ResourceContents {
    /// Text contents.
    pub fn text(uri: impl Into<String>, mime_type: impl Into<String>, text: impl Into<String>) -> Self {
        let text = Some(text.into());
        ResourceContents { uri: uri.into(), mime_type: Some(mime_type.into()), text, blob: None, meta: None }
    }

    /// Binary contents (already base64).
    pub fn blob(uri: impl Into<String>, mime_type: impl Into<String>, base64: impl Into<String>) -> Self {
        let blob = Some(base64.into());
        ResourceContents { uri: uri.into(), mime_type: Some(mime_type.into()), text: None, blob, meta: None }
    }

    /// Set one `_meta` entry of these contents.
    ///
    /// ```
    /// use mcp_fleet_protocol::types::ResourceContents;
    /// let c = ResourceContents::text("ui://a", "text/html", "<p/>").meta("ui", serde_json::json!({"prefersBorder": true}));
    /// assert_eq!(serde_json::to_value(&c).unwrap()["_meta"]["ui"]["prefersBorder"], true);
    /// ```
    pub fn meta(mut self, key: impl Into<String>, value: Value) -> Self {
        self.meta.get_or_insert_with(Map::new).insert(key.into(), value);
        self
    }
}

/// The result of `tools/call`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallToolResult {
    /// Content blocks.
    pub content: Vec<Content>,
    /// Structured output conforming to the tool's output schema.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    /// An execution error the model can see and fix.
    #[serde(skip_serializing_if = "std::ops::Not::not", default)]
    pub is_error: bool,
    /// Result metadata (`_meta`); the server adds its `serverInfo` beside what is here.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none", default)]
    pub meta: Option<Map<String, Value>>,
}

impl CallToolResult {
    /// A result with one text block.
    pub fn text(text: impl Into<String>) -> Self {
        CallToolResult { content: vec![Content::text(text)], ..Default::default() }
    }

    /// A structured result: `value` as `structuredContent`, and as JSON text in one text
    /// block for clients that read only `content` (the spec's SHOULD).
    pub fn structured(value: Value) -> Self {
        CallToolResult {
            content: vec![Content::text(value.to_string())],
            structured_content: Some(value),
            ..Default::default()
        }
    }

    /// An execution error (`isError: true`) with an explanation.
    pub fn error(text: impl Into<String>) -> Self {
        CallToolResult { content: vec![Content::text(text)], is_error: true, ..Default::default() }
    }

    /// The execution error for arguments that do not fit the tool (the model's mistake, which
    /// it can fix), naming where: `Invalid arguments at /path: why`.
    ///
    /// ```
    /// use mcp_fleet_protocol::{schema::Violation, types::CallToolResult};
    /// let bad = CallToolResult::invalid_arguments(&Violation { path: "/n".into(), message: "not a number".into() });
    /// assert!(bad.is_error);
    /// ```
    pub fn invalid_arguments(violation: &crate::schema::Violation) -> Self {
        CallToolResult::error(format!("Invalid arguments {violation}"))
    }
}

/// A listed resource.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Resource {
    /// Its URI.
    pub uri: String,
    /// Its name.
    pub name: String,
    /// Display name.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub title: Option<String>,
    /// Description.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// MIME type.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Its size in bytes (raw, before any encoding), when known.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub size: Option<u64>,
    /// `audience`, `priority`, `lastModified`.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub annotations: Option<Annotations>,
    /// Icons a host may show for it.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub icons: Vec<Icon>,
    /// Extension metadata (`_meta`), e.g. MCP Apps' `{"ui": {"resourceUri": …}}`.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none", default)]
    pub meta: Option<Map<String, Value>>,
}

impl Resource {
    /// A resource with a URI, name, description and MIME type.
    pub fn new(
        uri: impl Into<String>,
        name: impl Into<String>,
        description: impl Into<String>,
        mime: impl Into<String>,
    ) -> Self {
        Resource {
            uri: uri.into(),
            name: name.into(),
            description: Some(description.into()),
            mime_type: Some(mime.into()),
            ..Resource::default()
        }
    }

    /// Set its size in bytes.
    pub fn size(mut self, bytes: u64) -> Self {
        self.size = Some(bytes);
        self
    }

    /// Set its annotations (`audience`, `priority`, `lastModified`).
    pub fn annotations(mut self, annotations: Annotations) -> Self {
        self.annotations = Some(annotations);
        self
    }
}

impl ResourceTemplate {
    /// A template with a URI template, name, description and MIME type.
    pub fn new(
        uri_template: impl Into<String>,
        name: impl Into<String>,
        description: impl Into<String>,
        mime: impl Into<String>,
    ) -> Self {
        ResourceTemplate {
            uri_template: uri_template.into(),
            name: name.into(),
            description: Some(description.into()),
            mime_type: Some(mime.into()),
            ..ResourceTemplate::default()
        }
    }
}

impl Prompt {
    /// A prompt with a name, a description and `arguments`.
    pub fn new(name: impl Into<String>, description: impl Into<String>, arguments: Vec<PromptArgument>) -> Self {
        Prompt { name: name.into(), description: Some(description.into()), arguments, ..Prompt::default() }
    }
}

/// A listed resource template (RFC 6570).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceTemplate {
    /// The URI template, e.g. `test://template/{id}/data`.
    pub uri_template: String,
    /// Its name.
    pub name: String,
    /// Display name.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub title: Option<String>,
    /// Description.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// MIME type.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// `audience`, `priority`, `lastModified`.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub annotations: Option<Annotations>,
    /// Icons a host may show for it.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub icons: Vec<Icon>,
    /// Extension metadata (`_meta`), e.g. MCP Apps' `{"ui": {"resourceUri": …}}`.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none", default)]
    pub meta: Option<Map<String, Value>>,
}

/// A prompt argument.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PromptArgument {
    /// Name.
    pub name: String,
    /// Display name (`title`, from `BaseMetadata`).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub title: Option<String>,
    /// Description.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Whether it must be given.
    #[serde(default)]
    pub required: bool,
}

impl PromptArgument {
    /// An optional argument named `name`.
    ///
    /// ```
    /// use mcp_fleet_protocol::types::PromptArgument;
    /// let a = PromptArgument::new("city").title("City").description("Where").required(true);
    /// assert_eq!(serde_json::to_value(&a).unwrap(), serde_json::json!({"name": "city", "title": "City", "description": "Where", "required": true}));
    /// ```
    pub fn new(name: impl Into<String>) -> Self {
        PromptArgument { name: name.into(), title: None, description: None, required: false }
    }

    /// Set the display name.
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// Set the description.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Whether it must be given.
    pub fn required(mut self, required: bool) -> Self {
        self.required = required;
        self
    }
}

/// A listed prompt.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Prompt {
    /// Name.
    pub name: String,
    /// Display name.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub title: Option<String>,
    /// Description.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Arguments.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub arguments: Vec<PromptArgument>,
    /// Icons a host may show for it.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub icons: Vec<Icon>,
    /// Extension metadata (`_meta`), e.g. MCP Apps' `{"ui": {"resourceUri": …}}`.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none", default)]
    pub meta: Option<Map<String, Value>>,
}

/// Who speaks a prompt message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The user.
    User,
    /// The assistant.
    Assistant,
}

/// One prompt message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PromptMessage {
    /// Speaker.
    pub role: Role,
    /// Content block.
    pub content: Content,
}

/// The result of `prompts/get`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct GetPromptResult {
    /// Description.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Messages.
    pub messages: Vec<PromptMessage>,
    /// Result metadata (`_meta`); the server adds its `serverInfo` beside what is here.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none", default)]
    pub meta: Option<Map<String, Value>>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The stamped writer gives what stamping the result's map gives.
    #[test]
    fn a_stamped_tool_result_is_the_stamped_map() {
        let info = json!({"name": "s", "version": "2"});
        let own_meta = json!({"progress": 1}).as_object().unwrap().clone();
        let own_info = json!({SERVER_INFO_KEY: {"name": "x", "version": "1"}}).as_object().unwrap().clone();
        let results = [
            CallToolResult::text("hello"),
            CallToolResult::error("bad"),
            CallToolResult::structured(json!({"n": 1})),
            CallToolResult { meta: Some(own_meta), ..CallToolResult::text("m") },
            CallToolResult { meta: Some(own_info), ..CallToolResult::default() },
        ];
        for result in results {
            let Value::Object(mut map) = serde_json::to_value(&result).unwrap() else { panic!("an object") };
            map.insert("resultType".into(), json!("complete"));
            stamp_result(&mut map, &info);
            let written = serde_json::to_value(StampedToolResult { result: &result, server_info: &info }).unwrap();
            assert_eq!(written, Value::Object(map), "{result:?}");
        }
    }

    #[test]
    fn stamping_keeps_handler_values() {
        let mut r = json!({"resultType": "input_required", "_meta": {SERVER_INFO_KEY: {"name":"x","version":"1"}}});
        stamp_result(r.as_object_mut().unwrap(), &json!({"name":"s","version":"2"}));
        assert_eq!(r["resultType"], "input_required");
        assert_eq!(r["_meta"][SERVER_INFO_KEY]["name"], "x");
        let mut r = json!({});
        stamp_result(r.as_object_mut().unwrap(), &json!({"name":"s","version":"2"}));
        assert_eq!(r["resultType"], "complete");
        assert_eq!(r["_meta"], json!({SERVER_INFO_KEY: {"name":"s","version":"2"}}));
        let mut r = json!({"_meta": {"progress": 1}});
        stamp_result(r.as_object_mut().unwrap(), &json!({"name":"s","version":"2"}));
        assert_eq!(r["_meta"], json!({"progress": 1, SERVER_INFO_KEY: {"name":"s","version":"2"}}));
        CacheHint { ttl_ms: 5, scope: CacheScope::Public }.apply(r.as_object_mut().unwrap());
        assert_eq!((r["ttlMs"].clone(), r["cacheScope"].clone()), (json!(5), json!("public")));
    }

    #[test]
    fn definition_metadata_round_trips_in_wire_shape() {
        let icon = Icon {
            mime_type: Some("image/png".into()),
            sizes: vec!["48x48".into()],
            theme: Some(IconTheme::Dark),
            ..Icon::new("https://x.test/i.png")
        };
        let wire_icon = json!({"src":"https://x.test/i.png","mimeType":"image/png","sizes":["48x48"],"theme":"dark"});
        let tool = Tool::new("t", "d").title("T").icon(icon.clone()).meta("ui", json!({"resourceUri": "ui://t"}));
        let resource = Resource::new("r://x", "x", "d", "text/plain")
            .title("X")
            .size(12)
            .annotations(json!({"priority": 0.5}))
            .icon(icon.clone())
            .meta("k", json!(1));
        let template = ResourceTemplate::new("r://{id}", "t", "d", "text/plain")
            .title("Tpl")
            .icon(icon.clone())
            .meta("k", json!(2));
        let prompt = Prompt::new("p", "d", Vec::new()).title("P").icon(icon.clone()).meta("k", json!(3));
        let info = Implementation {
            icons: vec![icon],
            website_url: Some("https://x.test".into()),
            ..Implementation::new("s", "1")
        };
        let tool_wire = serde_json::to_value(&tool).unwrap();
        assert_eq!(
            (&tool_wire["title"], &tool_wire["icons"][0], &tool_wire["_meta"]["ui"]["resourceUri"]),
            (&json!("T"), &wire_icon, &json!("ui://t"))
        );
        let resource_wire = serde_json::to_value(&resource).unwrap();
        assert_eq!(
            (&resource_wire["size"], &resource_wire["annotations"]["priority"], &resource_wire["title"]),
            (&json!(12), &json!(0.5), &json!("X"))
        );
        assert_eq!(serde_json::to_value(&info).unwrap()["websiteUrl"], "https://x.test");
        assert_eq!(serde_json::from_value::<Tool>(tool_wire).unwrap(), tool);
        assert_eq!(serde_json::from_value::<Resource>(resource_wire).unwrap(), resource);
        assert_eq!(
            serde_json::from_value::<ResourceTemplate>(serde_json::to_value(&template).unwrap()).unwrap(),
            template
        );
        assert_eq!(serde_json::from_value::<Prompt>(serde_json::to_value(&prompt).unwrap()).unwrap(), prompt);
        assert_eq!(serde_json::from_value::<Implementation>(serde_json::to_value(&info).unwrap()).unwrap(), info);
        // Nothing set, nothing on the wire.
        assert_eq!(
            serde_json::to_value(Prompt::new("p", "d", Vec::new())).unwrap(),
            json!({"name":"p","description":"d"})
        );
    }

    #[test]
    fn content_serializes_to_wire_shape() {
        let c = Content::Image { data: "AA==".into(), mime_type: "image/png".into() };
        assert_eq!(serde_json::to_value(c).unwrap(), json!({"type":"image","data":"AA==","mimeType":"image/png"}));
        let r = CallToolResult::error("bad");
        assert_eq!(serde_json::to_value(r).unwrap(), json!({"content":[{"type":"text","text":"bad"}],"isError":true}));
    }
}
