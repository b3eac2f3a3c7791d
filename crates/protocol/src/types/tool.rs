//! Tools: the definition `tools/list` lists, and the result of `tools/call`.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{Content, Icon};

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
