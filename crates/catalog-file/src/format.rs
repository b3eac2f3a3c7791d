//! The file format as serde structs — what a catalog file may contain, key by key, and
//! nothing else: every struct denies unknown keys, so a typo (`descripton`) is a load error
//! instead of a silently dropped field. Both TOML and JSON map onto these same structs, with
//! the same snake_case keys.
//!
//! These structs only mirror the file; `validate` turns them into a checked
//! [`Catalog`](crate::Catalog). The format is documented for users in the crate root.

use std::collections::BTreeMap;
use std::path::PathBuf;

use mcp_fleet_server::types::{IconTheme, Role};
use serde::Deserialize;
use serde_json::{Map, Value};

/// The whole file: four lists, each optional.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileCatalog {
    #[serde(default)]
    pub(crate) tools: Vec<FileTool>,
    #[serde(default)]
    pub(crate) resources: Vec<FileResource>,
    #[serde(default)]
    pub(crate) resource_templates: Vec<FileResourceTemplate>,
    #[serde(default)]
    pub(crate) prompts: Vec<FilePrompt>,
}

/// `[[tools]]`: exactly one of `text` or `http` says how it answers.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileTool {
    pub(crate) name: String,
    pub(crate) title: Option<String>,
    pub(crate) description: Option<String>,
    /// Defaults to `{"type": "object", "properties": {}}` (no arguments).
    pub(crate) input_schema: Option<Value>,
    pub(crate) output_schema: Option<Value>,
    pub(crate) annotations: Option<FileToolAnnotations>,
    /// OAuth scopes a caller must hold to see and call the tool.
    #[serde(default)]
    pub(crate) required_scopes: Vec<String>,
    pub(crate) text: Option<String>,
    pub(crate) http: Option<FileHttp>,
    /// Icons a host may show (`[{ src, mime_type, sizes, theme }]`).
    #[serde(default)]
    pub(crate) icons: Vec<FileIcon>,
    /// The wire's `_meta`, passed through as is (e.g. `_meta = { ui = { resourceUri = "ui://x" } }`).
    #[serde(rename = "_meta")]
    pub(crate) meta: Option<Map<String, Value>>,
}

/// One icon: `src` is an `https:` or `data:` URI.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileIcon {
    pub(crate) src: String,
    pub(crate) mime_type: Option<String>,
    #[serde(default)]
    pub(crate) sizes: Vec<String>,
    pub(crate) theme: Option<IconTheme>,
}

/// A resource's or template's annotations, snake_case in the file (camelCase on the wire).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileResourceAnnotations {
    pub(crate) audience: Option<Vec<Role>>,
    /// 0 (least important) to 1 (most).
    pub(crate) priority: Option<f64>,
    /// ISO 8601, e.g. `2026-01-12T15:00:58Z`.
    pub(crate) last_modified: Option<String>,
}

/// A tool's behaviour hints, written snake_case in the file (sent camelCase on the wire).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileToolAnnotations {
    pub(crate) title: Option<String>,
    pub(crate) read_only_hint: Option<bool>,
    pub(crate) destructive_hint: Option<bool>,
    pub(crate) idempotent_hint: Option<bool>,
    pub(crate) open_world_hint: Option<bool>,
}

/// `http = { url, timeout_ms, headers, redirects, forward_identity }`: forward the arguments
/// as a JSON POST.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileHttp {
    pub(crate) url: String,
    pub(crate) timeout_ms: Option<u64>,
    /// Values may reference `${ENV_VAR}`s.
    #[serde(default)]
    pub(crate) headers: BTreeMap<String, String>,
    #[serde(default)]
    pub(crate) redirects: Redirects,
    pub(crate) forward_identity: Option<FileForwardIdentity>,
}

/// Which redirects an http tool follows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Redirects {
    /// None: a 3xx answer is the tool's (error) result.
    #[default]
    None,
    /// Those to the URL's own scheme, host and port (at most 5).
    SameOrigin,
}

/// `forward_identity = { subject = "X-Caller", tenant = "X-Tenant" }`: the headers that carry
/// the authenticated caller's subject and tenant to the backend.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileForwardIdentity {
    pub(crate) subject: Option<String>,
    pub(crate) tenant: Option<String>,
}

/// `[[resources]]`: exactly one of inline `text` or a `file` read at each request.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileResource {
    pub(crate) uri: String,
    pub(crate) name: String,
    pub(crate) title: Option<String>,
    pub(crate) description: Option<String>,
    pub(crate) mime_type: Option<String>,
    /// Bytes; stated by the file (a `file` resource may change size between reads).
    pub(crate) size: Option<u64>,
    pub(crate) annotations: Option<FileResourceAnnotations>,
    pub(crate) text: Option<String>,
    /// Relative paths are relative to the catalog file's directory.
    pub(crate) file: Option<PathBuf>,
    /// Icons a host may show (`[{ src, mime_type, sizes, theme }]`).
    #[serde(default)]
    pub(crate) icons: Vec<FileIcon>,
    /// The wire's `_meta`, passed through as is (e.g. `_meta = { ui = { resourceUri = "ui://x" } }`).
    #[serde(rename = "_meta")]
    pub(crate) meta: Option<Map<String, Value>>,
    /// `_meta` of the contents each read returns (the 2026-07-28 `ResourceContents._meta`),
    /// e.g. `contents_meta = { ui = { prefersBorder = true } }`.
    pub(crate) contents_meta: Option<Map<String, Value>>,
}

/// `[[resource_templates]]`: a `text` template over the URI template's variables.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileResourceTemplate {
    pub(crate) uri_template: String,
    pub(crate) name: String,
    pub(crate) title: Option<String>,
    pub(crate) description: Option<String>,
    pub(crate) mime_type: Option<String>,
    pub(crate) annotations: Option<FileResourceAnnotations>,
    pub(crate) text: String,
    /// Icons a host may show (`[{ src, mime_type, sizes, theme }]`).
    #[serde(default)]
    pub(crate) icons: Vec<FileIcon>,
    /// The wire's `_meta`, passed through as is (e.g. `_meta = { ui = { resourceUri = "ui://x" } }`).
    #[serde(rename = "_meta")]
    pub(crate) meta: Option<Map<String, Value>>,
    /// `_meta` of the contents each read returns (the 2026-07-28 `ResourceContents._meta`),
    /// e.g. `contents_meta = { ui = { prefersBorder = true } }`.
    pub(crate) contents_meta: Option<Map<String, Value>>,
}

/// `[[prompts]]`: exactly one of `text` (one user message) or `messages`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FilePrompt {
    pub(crate) name: String,
    pub(crate) title: Option<String>,
    pub(crate) description: Option<String>,
    /// Icons a host may show (`[{ src, mime_type, sizes, theme }]`).
    #[serde(default)]
    pub(crate) icons: Vec<FileIcon>,
    /// The wire's `_meta`, passed through as is (e.g. `_meta = { ui = { resourceUri = "ui://x" } }`).
    #[serde(rename = "_meta")]
    pub(crate) meta: Option<Map<String, Value>>,
    #[serde(default)]
    pub(crate) arguments: Vec<FilePromptArgument>,
    pub(crate) text: Option<String>,
    pub(crate) messages: Option<Vec<FilePromptMessage>>,
}

/// One declared prompt argument.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FilePromptArgument {
    pub(crate) name: String,
    pub(crate) title: Option<String>,
    pub(crate) description: Option<String>,
    #[serde(default)]
    pub(crate) required: bool,
}

/// One prompt message: `role = "user" | "assistant"` and a `text` template.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FilePromptMessage {
    pub(crate) role: Role,
    pub(crate) text: String,
}
