//! Who is speaking: a server or client identity ([`Implementation`]) and the icons a host may
//! show for it or for a listed definition.

use serde::{Deserialize, Serialize};

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
