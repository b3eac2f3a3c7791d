//! Content blocks of tool results and prompt messages, and the contents `resources/read`
//! returns.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

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
