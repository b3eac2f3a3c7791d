//! `WWW-Authenticate` pieces shared by every authenticator: RFC 9110 quoting, the
//! `Bearer resource_metadata="…"` prefix of a protected resource's challenges (RFC 9728 §5.1),
//! and the 403 `insufficient_scope` challenge an operation (a tool requiring scopes) answers
//! with. Public so that an authenticator of another crate (`mcp-fleet-oauth`'s, or your own)
//! writes its challenges exactly as the handler writes a tool's 403.

use super::AuthError;

/// 403 `Bearer [resource_metadata="…", ]error="insufficient_scope", scope="…"` naming exactly
/// `scopes`. `base` is the authenticator's `Bearer resource_metadata="…"` prefix
/// ([`resource_metadata_base`]), if any.
///
/// ```
/// use mcp_fleet_server::auth::www_authenticate::{insufficient_scope, resource_metadata_base};
/// let base = resource_metadata_base("https://mcp.example.com/.well-known/oauth-protected-resource/mcp");
/// let refusal = insufficient_scope(Some(&base), &["mcp:use", "files:write"]);
/// assert_eq!(refusal.status(), http::StatusCode::FORBIDDEN);
/// assert_eq!(
///     refusal.challenge(),
///     "Bearer resource_metadata=\"https://mcp.example.com/.well-known/oauth-protected-resource/mcp\", \
///      error=\"insufficient_scope\", scope=\"mcp:use files:write\"",
/// );
/// let bare = insufficient_scope(None, &["files:write"]);
/// assert_eq!(bare.challenge(), "Bearer error=\"insufficient_scope\", scope=\"files:write\"");
/// ```
pub fn insufficient_scope(base: Option<&str>, scopes: &[&str]) -> AuthError {
    let scope = quote(&scopes.join(" "));
    AuthError::forbidden(match base {
        Some(base) => format!("{base}, error=\"insufficient_scope\", scope={scope}"),
        None => format!("Bearer error=\"insufficient_scope\", scope={scope}"),
    })
}

/// The `Bearer resource_metadata="<url>"` prefix of every challenge of a protected resource;
/// `metadata_url` is its RFC 9728 document's URL
/// ([`ProtectedResourceMetadata::metadata_url`](super::ProtectedResourceMetadata::metadata_url)).
///
/// ```
/// use mcp_fleet_server::auth::www_authenticate::resource_metadata_base;
/// assert_eq!(
///     resource_metadata_base("https://mcp.example.com/.well-known/oauth-protected-resource"),
///     "Bearer resource_metadata=\"https://mcp.example.com/.well-known/oauth-protected-resource\"",
/// );
/// ```
pub fn resource_metadata_base(metadata_url: &str) -> String {
    format!("Bearer resource_metadata={}", quote(metadata_url))
}

/// An RFC 9110 §5.6.4 quoted-string: `"` and `\` escaped; anything that may not appear in a
/// header value (controls, non-ASCII) replaced by `?` so the challenge always serialises.
///
/// ```
/// use mcp_fleet_server::auth::www_authenticate::quote;
/// assert_eq!(quote(r#"a"b\c"#), r#""a\"b\\c""#);
/// assert_eq!(quote("x\r\ny\u{e9}"), "\"x??y?\"");
/// assert!(http::HeaderValue::from_str(&quote("any\0thing")).is_ok());
/// ```
pub fn quote(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 2);
    out.push('"');
    for c in value.chars() {
        match c {
            '"' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            ' ' | '\t' => out.push(c),
            c if c.is_ascii_graphic() => out.push(c),
            _ => out.push('?'),
        }
    }
    out.push('"');
    out
}
