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
}

impl Implementation {
    /// An identity with a name and a version.
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        Implementation { name: name.into(), version: version.into(), title: None }
    }
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
    result.entry("resultType").or_insert_with(|| Value::from("complete"));
    let meta = result.entry("_meta").or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(meta) = meta {
        meta.entry(SERVER_INFO_KEY).or_insert_with(|| server_info.clone());
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
}

impl ResourceContents {
    /// Text contents.
    pub fn text(uri: impl Into<String>, mime_type: impl Into<String>, text: impl Into<String>) -> Self {
        ResourceContents { uri: uri.into(), mime_type: Some(mime_type.into()), text: Some(text.into()), blob: None }
    }

    /// Binary contents (already base64).
    pub fn blob(uri: impl Into<String>, mime_type: impl Into<String>, base64: impl Into<String>) -> Self {
        ResourceContents { uri: uri.into(), mime_type: Some(mime_type.into()), text: None, blob: Some(base64.into()) }
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
}

impl CallToolResult {
    /// A result with one text block.
    pub fn text(text: impl Into<String>) -> Self {
        CallToolResult { content: vec![Content::text(text)], ..Default::default() }
    }

    /// An execution error (`isError: true`) with an explanation.
    pub fn error(text: impl Into<String>) -> Self {
        CallToolResult { content: vec![Content::text(text)], is_error: true, ..Default::default() }
    }
}

/// A listed resource.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Resource {
    /// Its URI.
    pub uri: String,
    /// Its name.
    pub name: String,
    /// Description.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// MIME type.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
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
        }
    }
}

/// A listed resource template (RFC 6570).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceTemplate {
    /// The URI template, e.g. `test://template/{id}/data`.
    pub uri_template: String,
    /// Its name.
    pub name: String,
    /// Description.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// MIME type.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
}

/// A prompt argument.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PromptArgument {
    /// Name.
    pub name: String,
    /// Description.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Whether it must be given.
    #[serde(default)]
    pub required: bool,
}

/// A listed prompt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Prompt {
    /// Name.
    pub name: String,
    /// Description.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Arguments.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub arguments: Vec<PromptArgument>,
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GetPromptResult {
    /// Description.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Messages.
    pub messages: Vec<PromptMessage>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn stamping_keeps_handler_values() {
        let mut r = json!({"resultType": "input_required", "_meta": {SERVER_INFO_KEY: {"name":"x","version":"1"}}});
        stamp_result(r.as_object_mut().unwrap(), &json!({"name":"s","version":"2"}));
        assert_eq!(r["resultType"], "input_required");
        assert_eq!(r["_meta"][SERVER_INFO_KEY]["name"], "x");
        let mut r = json!({});
        stamp_result(r.as_object_mut().unwrap(), &json!({"name":"s","version":"2"}));
        assert_eq!(r["resultType"], "complete");
        CacheHint { ttl_ms: 5, scope: CacheScope::Public }.apply(r.as_object_mut().unwrap());
        assert_eq!((r["ttlMs"].clone(), r["cacheScope"].clone()), (json!(5), json!("public")));
    }

    #[test]
    fn content_serializes_to_wire_shape() {
        let c = Content::Image { data: "AA==".into(), mime_type: "image/png".into() };
        assert_eq!(serde_json::to_value(c).unwrap(), json!({"type":"image","data":"AA==","mimeType":"image/png"}));
        let r = CallToolResult::error("bad");
        assert_eq!(serde_json::to_value(r).unwrap(), json!({"content":[{"type":"text","text":"bad"}],"isError":true}));
    }
}
