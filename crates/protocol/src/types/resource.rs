//! Resources: the listed resources and resource templates (RFC 6570).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{Annotations, Icon};

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
