//! Claims → [`Principal`]: `sub` is the id, `scope` (space-separated) or `scp` (array or
//! string) the OAuth scopes, and a configurable claim the tenant scope that decides which
//! scoped change events the caller's listen streams receive.

use mcp_fleet_server::Principal;
use serde_json::{Map, Value};

use super::TokenError;

/// The principal a verified token describes.
pub(crate) fn principal(claims: &Map<String, Value>, tenant_claim: Option<&str>) -> Result<Principal, TokenError> {
    let id = subject(claims)?;
    let tenant = match tenant_claim {
        // A configured tenant claim is mandatory: a token without one must not silently
        // become "no tenant", which some handlers could read as "every tenant".
        Some(path) => Some(tenant(claims, path).ok_or(TokenError::MissingTenant)?),
        None => None,
    };
    Ok(Principal::new(id, tenant).with_scopes(scopes(claims)))
}

/// `sub`: a non-empty string (RFC 9068 §2.2 makes it required in access tokens).
fn subject(claims: &Map<String, Value>) -> Result<String, TokenError> {
    match claims.get("sub") {
        Some(Value::String(sub)) if !sub.is_empty() => Ok(sub.clone()),
        _ => Err(TokenError::MissingClaim("sub")),
    }
}

/// `scope` (RFC 8693 §4.2 / RFC 9068 §2.2.3: space-separated), else `scp` (an array in some
/// issuers, a space-separated string in others). Anything else grants nothing.
fn scopes(claims: &Map<String, Value>) -> Vec<String> {
    let value = claims.get("scope").or_else(|| claims.get("scp"));
    match value {
        Some(Value::String(s)) => s.split(' ').filter(|s| !s.is_empty()).map(str::to_owned).collect(),
        Some(Value::Array(items)) => items.iter().filter_map(Value::as_str).map(str::to_owned).collect(),
        _ => Vec::new(),
    }
}

/// The tenant at `path`: a top-level claim of that exact name first (claim names are often
/// URLs, full of dots), else the dotted path through nested objects. Strings and integers
/// count; an empty string does not.
fn tenant(claims: &Map<String, Value>, path: &str) -> Option<String> {
    let value = claims.get(path).or_else(|| {
        let mut segments = path.split('.');
        let first = claims.get(segments.next()?)?;
        segments.try_fold(first, |v, segment| v.as_object()?.get(segment))
    })?;
    match value {
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        Value::Number(n) if n.is_i64() || n.is_u64() => Some(n.to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn claims(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(map) => map,
            _ => unreachable!("test claims are objects"),
        }
    }

    #[test]
    fn id_scopes_and_tenant() {
        let c = claims(json!({"sub": "u1", "scope": "mcp:read  mcp:write", "tenant": "acme"}));
        let p = principal(&c, Some("tenant")).unwrap();
        assert_eq!(p, Principal::new("u1", Some("acme".into())).with_scopes(["mcp:read", "mcp:write"]));
    }

    #[test]
    fn scp_as_array_or_string_and_scope_wins() {
        assert_eq!(scopes(&claims(json!({"scp": ["a", "b", 3]}))), ["a", "b"]);
        assert_eq!(scopes(&claims(json!({"scp": "a b"}))), ["a", "b"]);
        assert_eq!(scopes(&claims(json!({"scope": "x", "scp": ["a"]}))), ["x"]);
        assert!(scopes(&claims(json!({"scope": 7}))).is_empty());
        assert!(scopes(&claims(json!({}))).is_empty());
    }

    #[test]
    fn tenant_paths() {
        let c = claims(json!({
            "org": {"id": "acme", "n": 42, "deep": {"x": "y"}},
            "https://example.com/tenant": "t9",
            "empty": "",
        }));
        assert_eq!(tenant(&c, "org.id").as_deref(), Some("acme"));
        assert_eq!(tenant(&c, "org.n").as_deref(), Some("42"));
        assert_eq!(tenant(&c, "org.deep.x").as_deref(), Some("y"));
        assert_eq!(tenant(&c, "https://example.com/tenant").as_deref(), Some("t9"));
        for missing in ["org", "org.missing", "org.id.x", "empty", "nope"] {
            assert_eq!(tenant(&c, missing), None, "{missing}");
        }
    }

    #[test]
    fn missing_sub_or_tenant_is_refused() {
        for bad in [json!({}), json!({"sub": ""}), json!({"sub": 12})] {
            assert_eq!(principal(&claims(bad), None), Err(TokenError::MissingClaim("sub")));
        }
        let c = claims(json!({"sub": "u1"}));
        assert_eq!(principal(&c, Some("tenant")), Err(TokenError::MissingTenant));
        assert_eq!(principal(&c, None), Ok(Principal::new("u1", None)));
    }
}
