//! OAuth 2.0 Protected Resource Metadata (RFC 9728): the JSON document that tells an MCP
//! client which authorization server issues tokens for this server, and the well-known paths
//! it is served at.
//!
//! MCP (authorization, "Authorization Server Discovery") requires the document, with at least
//! one `authorization_servers` entry, discoverable through `resource_metadata` in the 401
//! challenge and/or at `/.well-known/oauth-protected-resource[/<mcp path>]`. This module only
//! builds the document and answers "is this path one of mine"; the HTTP service serves it.
//! No extra dependencies, so it lives here: any authenticator's server serves it, and
//! `mcp-fleet-oauth` derives it from its bearer configuration.

use http::Uri;
use serde_json::{Map, Value, json};

/// The RFC 9728 well-known path prefix (§3).
const WELL_KNOWN_PROTECTED_RESOURCE: &str = "/.well-known/oauth-protected-resource";

/// A resource URL or endpoint path that cannot be described.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MetadataError {
    /// The resource is not an absolute `http(s)` URL without query and fragment (RFC 8707 §2,
    /// RFC 9728 §1.2).
    #[error("resource {0:?} must be an absolute http(s) URL without query or fragment")]
    InvalidResource(String),
    /// The authorization server is not an absolute `http(s)` URL.
    #[error("authorization server {0:?} must be an absolute http(s) URL")]
    InvalidAuthorizationServer(String),
    /// The endpoint path does not start with `/`.
    #[error("endpoint path {0:?} must start with '/'")]
    InvalidEndpointPath(String),
}

/// The protected-resource metadata of one MCP endpoint.
///
/// ```
/// use mcp_fleet_server::auth::ProtectedResourceMetadata;
/// let metadata = ProtectedResourceMetadata::new("https://mcp.example.com/mcp", "https://auth.example.com")?
///     .with_scopes_supported(["mcp:read", "mcp:write"])
///     .with_resource_name("Example MCP");
/// assert_eq!(
///     metadata.well_known_paths(),
///     ["/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"],
/// );
/// assert_eq!(metadata.metadata_url(), "https://mcp.example.com/.well-known/oauth-protected-resource/mcp");
/// let doc = metadata.response_for("/.well-known/oauth-protected-resource").unwrap();
/// assert_eq!(doc["authorization_servers"][0], "https://auth.example.com");
/// assert_eq!(doc["bearer_methods_supported"][0], "header");
/// assert!(metadata.response_for("/mcp").is_none());
/// # Ok::<(), mcp_fleet_server::auth::MetadataError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProtectedResourceMetadata {
    resource: String,
    /// `scheme://authority` of the resource, to build the metadata URL.
    origin: String,
    /// The MCP endpoint's path (`/mcp`), or empty for an endpoint at the root.
    endpoint_path: String,
    authorization_servers: Vec<String>,
    scopes_supported: Vec<String>,
    resource_name: Option<String>,
}

impl ProtectedResourceMetadata {
    /// The RFC 9728 well-known path prefix (§3); the document is served below it.
    pub const WELL_KNOWN_PREFIX: &str = WELL_KNOWN_PROTECTED_RESOURCE;

    /// The metadata of `resource` (the server's canonical URL, the token audience), whose
    /// tokens `authorization_server` (the issuer) issues. The endpoint path defaults to the
    /// resource URL's path.
    pub fn new(resource: &str, authorization_server: &str) -> Result<Self, MetadataError> {
        let (origin, path) =
            split_http_url(resource).ok_or_else(|| MetadataError::InvalidResource(resource.to_owned()))?;
        if split_http_url(authorization_server).is_none() {
            return Err(MetadataError::InvalidAuthorizationServer(authorization_server.to_owned()));
        }
        Ok(ProtectedResourceMetadata {
            resource: resource.to_owned(),
            origin,
            endpoint_path: trim_root(&path).to_owned(),
            authorization_servers: vec![authorization_server.to_owned()],
            scopes_supported: Vec::new(),
            resource_name: None,
        })
    }

    /// Advertise `scopes` in `scopes_supported`. `offline_access` is left out: MCP servers
    /// SHOULD NOT advertise it (authorization, "Refresh Tokens").
    pub fn with_scopes_supported<S: Into<String>>(mut self, scopes: impl IntoIterator<Item = S>) -> Self {
        self.scopes_supported = scopes.into_iter().map(Into::into).filter(|s| s != "offline_access").collect();
        self
    }

    /// A human-readable `resource_name`.
    pub fn with_resource_name(mut self, name: impl Into<String>) -> Self {
        self.resource_name = Some(name.into());
        self
    }

    /// Serve the path-suffixed document for an endpoint at `path` on this node, when it differs
    /// from the resource URL's path (a proxy rewriting paths, say).
    pub fn with_endpoint_path(mut self, path: &str) -> Result<Self, MetadataError> {
        if !path.starts_with('/') {
            return Err(MetadataError::InvalidEndpointPath(path.to_owned()));
        }
        self.endpoint_path = trim_root(path).to_owned();
        Ok(self)
    }

    /// The resource identifier.
    pub fn resource(&self) -> &str {
        &self.resource
    }

    /// The document (RFC 9728 §2).
    pub fn to_json(&self) -> Value {
        let mut doc = Map::new();
        doc.insert("resource".into(), json!(self.resource));
        doc.insert("authorization_servers".into(), json!(self.authorization_servers));
        if !self.scopes_supported.is_empty() {
            doc.insert("scopes_supported".into(), json!(self.scopes_supported));
        }
        // Tokens only in the Authorization header: never in a query string or a form body
        // (MCP authorization, "Access Token Usage").
        doc.insert("bearer_methods_supported".into(), json!(["header"]));
        if let Some(name) = &self.resource_name {
            doc.insert("resource_name".into(), json!(name));
        }
        Value::Object(doc)
    }

    /// The paths to serve the document at, most specific first: the well-known prefix with
    /// the endpoint path appended (RFC 9728 §3.1), then the bare prefix (MCP lets clients
    /// fall back to it). One path when the endpoint is at the root.
    pub fn well_known_paths(&self) -> Vec<String> {
        if self.endpoint_path.is_empty() {
            return vec![WELL_KNOWN_PROTECTED_RESOURCE.to_owned()];
        }
        vec![format!("{WELL_KNOWN_PROTECTED_RESOURCE}{}", self.endpoint_path), WELL_KNOWN_PROTECTED_RESOURCE.to_owned()]
    }

    /// The URL to put in `resource_metadata="…"` challenges: the most specific well-known
    /// path on the resource's origin.
    pub fn metadata_url(&self) -> String {
        format!("{}{WELL_KNOWN_PROTECTED_RESOURCE}{}", self.origin, self.endpoint_path)
    }

    /// The document if `path` (a request path, no query) is one of [`well_known_paths`];
    /// `None` otherwise.
    ///
    /// [`well_known_paths`]: ProtectedResourceMetadata::well_known_paths
    pub fn response_for(&self, path: &str) -> Option<Value> {
        let rest = path.strip_prefix(WELL_KNOWN_PROTECTED_RESOURCE)?;
        (rest.is_empty() || rest == self.endpoint_path).then(|| self.to_json())
    }
}

/// `(scheme://authority, path)` of an absolute http(s) URL without query or fragment.
fn split_http_url(url: &str) -> Option<(String, String)> {
    if url.contains('#') {
        return None;
    }
    let uri: Uri = url.parse().ok()?;
    let scheme = uri.scheme_str().filter(|s| s.eq_ignore_ascii_case("https") || s.eq_ignore_ascii_case("http"))?;
    let authority = uri.authority()?;
    if uri.query().is_some() || authority.host().is_empty() {
        return None;
    }
    Some((format!("{scheme}://{authority}"), uri.path().to_owned()))
}

/// `/` alone means the root: no path suffix (RFC 9728 §3.1 drops a terminating slash after
/// the host).
fn trim_root(path: &str) -> &str {
    if path == "/" { "" } else { path }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn document_fields() {
        let metadata = ProtectedResourceMetadata::new("https://mcp.example.com/mcp", "https://auth.example.com/t1")
            .unwrap()
            .with_scopes_supported(["mcp:read", "offline_access"]);
        assert_eq!(
            metadata.to_json(),
            json!({
                "resource": "https://mcp.example.com/mcp",
                "authorization_servers": ["https://auth.example.com/t1"],
                "scopes_supported": ["mcp:read"],
                "bearer_methods_supported": ["header"],
            })
        );
        let named = metadata.with_resource_name("Fleet");
        assert_eq!(named.to_json()["resource_name"], "Fleet");
    }

    #[test]
    fn paths_for_an_endpoint_at_mcp() {
        let metadata = ProtectedResourceMetadata::new("https://mcp.example.com:8443/mcp", "https://a.example").unwrap();
        assert_eq!(metadata.metadata_url(), "https://mcp.example.com:8443/.well-known/oauth-protected-resource/mcp");
        for path in ["/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"] {
            assert_eq!(metadata.response_for(path), Some(metadata.to_json()), "{path}");
        }
        for path in [
            "/.well-known/oauth-protected-resource/other",
            "/.well-known/oauth-protected-resource/",
            "/.well-known/oauth-protected-resourcex",
            "/.well-known/oauth-authorization-server",
            "/mcp",
        ] {
            assert_eq!(metadata.response_for(path), None, "{path}");
        }
    }

    #[test]
    fn nested_endpoint_and_root_endpoint() {
        let nested = ProtectedResourceMetadata::new("https://example.com/public/mcp", "https://a.example").unwrap();
        assert_eq!(nested.well_known_paths()[0], "/.well-known/oauth-protected-resource/public/mcp");
        for resource in ["https://mcp.example.com", "https://mcp.example.com/"] {
            let root = ProtectedResourceMetadata::new(resource, "https://a.example").unwrap();
            assert_eq!(root.well_known_paths(), ["/.well-known/oauth-protected-resource"]);
            assert_eq!(root.metadata_url(), "https://mcp.example.com/.well-known/oauth-protected-resource");
        }
    }

    #[test]
    fn endpoint_path_override() {
        let metadata = ProtectedResourceMetadata::new("https://example.com/public/mcp", "https://a.example")
            .unwrap()
            .with_endpoint_path("/mcp")
            .unwrap();
        assert!(metadata.response_for("/.well-known/oauth-protected-resource/mcp").is_some());
        assert!(metadata.response_for("/.well-known/oauth-protected-resource/public/mcp").is_none());
        assert!(matches!(
            ProtectedResourceMetadata::new("https://example.com/mcp", "https://a.example")
                .unwrap()
                .with_endpoint_path("mcp"),
            Err(MetadataError::InvalidEndpointPath(_))
        ));
    }

    #[test]
    fn invalid_urls_are_refused() {
        for resource in
            ["mcp.example.com", "https://mcp.example.com/mcp#frag", "https://x/mcp?a=b", "ftp://x/mcp", "/mcp"]
        {
            assert_eq!(
                ProtectedResourceMetadata::new(resource, "https://a.example"),
                Err(MetadataError::InvalidResource(resource.to_owned())),
                "{resource}"
            );
        }
        assert!(matches!(
            ProtectedResourceMetadata::new("https://x/mcp", "auth.example"),
            Err(MetadataError::InvalidAuthorizationServer(_))
        ));
    }
}
