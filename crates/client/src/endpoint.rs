//! [`Endpoint`]: where an MCP server lives (`http://host:port/path`) and the extra headers
//! every request to it carries (an `Authorization` token, a tenant header).
//!
//! Only cleartext `http://` is supported: the client speaks HTTP/1.1 or h2c (HTTP/2 with
//! prior knowledge). TLS is left to a proxy or to a later transport.

use http::{HeaderMap, HeaderName, HeaderValue, Uri};

use crate::error::ClientError;

/// An MCP endpoint URL plus headers sent with every request. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Endpoint {
    uri: Uri,
    authority: String,
    headers: HeaderMap,
}

impl Endpoint {
    /// Parse `http://host:port/path` (port 80 when omitted).
    ///
    /// ```
    /// let e = mcp_fleet_client::Endpoint::parse("http://127.0.0.1:8080/mcp").unwrap();
    /// assert_eq!(e.authority(), "127.0.0.1:8080");
    /// assert!(mcp_fleet_client::Endpoint::parse("https://example.com/mcp").is_err());
    /// ```
    pub fn parse(url: &str) -> Result<Endpoint, ClientError> {
        let invalid = |reason: &str| ClientError::InvalidEndpoint { url: url.to_owned(), reason: reason.to_owned() };
        let uri: Uri = url.parse().map_err(|e: http::uri::InvalidUri| invalid(&e.to_string()))?;
        if uri.scheme_str() != Some("http") {
            return Err(invalid("only http:// (HTTP/1.1 or h2c) is supported"));
        }
        let host = uri.host().ok_or_else(|| invalid("no host"))?;
        let authority = format!("{host}:{}", uri.port_u16().unwrap_or(80));
        Ok(Endpoint { uri, authority, headers: HeaderMap::new() })
    }

    /// The same endpoint, sending `name: value` with every request (e.g. `x-tenant`).
    pub fn with_header(mut self, name: &str, value: &str) -> Result<Endpoint, ClientError> {
        let invalid = |reason: String| ClientError::InvalidEndpoint { url: format!("{name}: {value}"), reason };
        let name = HeaderName::try_from(name).map_err(|e| invalid(e.to_string()))?;
        let value = HeaderValue::try_from(value).map_err(|e| invalid(e.to_string()))?;
        self.headers.insert(name, value);
        Ok(self)
    }

    /// The same endpoint, sending `Authorization: Bearer <token>` with every request.
    pub fn with_bearer_token(self, token: &str) -> Result<Endpoint, ClientError> {
        self.with_header("authorization", &format!("Bearer {token}"))
    }

    /// The full URL.
    pub fn uri(&self) -> &Uri {
        &self.uri
    }

    /// `host:port` to connect to.
    pub fn authority(&self) -> &str {
        &self.authority
    }

    /// The extra headers sent with every request.
    pub fn headers(&self) -> &HeaderMap {
        &self.headers
    }
}
