//! `WWW-Authenticate` pieces shared by every authenticator: RFC 9110 quoting and the 403
//! `insufficient_scope` challenge an operation (a tool requiring scopes) answers with.

use super::AuthError;

/// 403 `Bearer [resource_metadata="…", ]error="insufficient_scope", scope="…"` naming exactly
/// `scopes`. `base` is the authenticator's `Bearer resource_metadata="…"` prefix, if any.
pub(crate) fn insufficient_scope(base: Option<&str>, scopes: &[&str]) -> AuthError {
    let scope = quote(&scopes.join(" "));
    AuthError::forbidden(match base {
        Some(base) => format!("{base}, error=\"insufficient_scope\", scope={scope}"),
        None => format!("Bearer error=\"insufficient_scope\", scope={scope}"),
    })
}

/// The `Bearer resource_metadata="<url>"` prefix of every challenge of a protected resource.
pub(crate) fn resource_metadata_base(metadata_url: &str) -> String {
    format!("Bearer resource_metadata={}", quote(metadata_url))
}

/// An RFC 9110 §5.6.4 quoted-string: `"` and `\` escaped; anything that may not appear in a
/// header value (controls, non-ASCII) replaced by `?` so the challenge always serialises.
pub(crate) fn quote(value: &str) -> String {
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
