//! Request metadata headers (spec digest §4): `MCP-Protocol-Version`, `Mcp-Method`,
//! `Mcp-Name` and the tool-declared `Mcp-Param-*` headers, with the Base64 sentinel encoding.
//!
//! Header names compare case-insensitively (the `http` crate lowercases them); values are
//! case-sensitive after optional whitespace is trimmed. Any disagreement is 400 `-32020`.

use std::borrow::Cow;

use base64::Engine as _;
use http::HeaderMap;
use http::header::{AsHeaderName, HeaderName};
use serde_json::Value;

use crate::error::RpcError;

/// `MCP-Protocol-Version`.
pub const PROTOCOL_VERSION_HEADER: &str = "mcp-protocol-version";
/// `Mcp-Method`.
pub const METHOD_HEADER: &str = "mcp-method";
/// `Mcp-Name`.
pub const NAME_HEADER: &str = "mcp-name";
/// [`PROTOCOL_VERSION_HEADER`] as a header name, for lookups that parse nothing.
pub static PROTOCOL_VERSION_NAME: HeaderName = HeaderName::from_static(PROTOCOL_VERSION_HEADER);
/// [`METHOD_HEADER`] as a header name.
pub static METHOD_NAME: HeaderName = HeaderName::from_static(METHOD_HEADER);
/// [`NAME_HEADER`] as a header name.
pub static NAME_NAME: HeaderName = HeaderName::from_static(NAME_HEADER);
/// Prefix of tool-declared parameter headers.
pub const PARAM_HEADER_PREFIX: &str = "mcp-param-";

const SENTINEL_PREFIX: &str = "=?base64?";
const SENTINEL_SUFFIX: &str = "?=";

/// Read one header as trimmed text. `Ok(None)` when absent; `-32020` when repeated or when the
/// value holds bytes other than visible ASCII, space and tab (HDR-5).
/// `name` is a `&str` or, cheaper (nothing to parse per lookup), a `&HeaderName`.
pub fn header_text<K>(headers: &HeaderMap, name: K) -> Result<Option<&str>, RpcError>
where
    K: AsHeaderName + AsRef<str> + Copy,
{
    let mut values = headers.get_all(name).iter();
    let Some(value) = values.next() else { return Ok(None) };
    if values.next().is_some() {
        return Err(RpcError::header_mismatch(name.as_ref(), Some("(repeated)"), None));
    }
    let text =
        value.to_str().map_err(|_| RpcError::header_mismatch(name.as_ref(), Some("(not visible ASCII)"), None))?;
    Ok(Some(text.trim_matches([' ', '\t'])))
}

/// Decode a header value that may use the Base64 sentinel (`=?base64?…?=`): the middle must be
/// canonical, padded standard Base64 of UTF-8 bytes. A value without both prefix and suffix is
/// a literal, borrowed as it is (no copy on the common path).
pub fn decode_header_value(value: &str) -> Result<Cow<'_, str>, SentinelError> {
    let Some(inner) = value.strip_prefix(SENTINEL_PREFIX).and_then(|v| v.strip_suffix(SENTINEL_SUFFIX)) else {
        return Ok(Cow::Borrowed(value));
    };
    // The STANDARD engine insists on canonical padding and the standard alphabet.
    let bytes = base64::engine::general_purpose::STANDARD.decode(inner).map_err(|_| SentinelError::Base64)?;
    String::from_utf8(bytes).map(Cow::Owned).map_err(|_| SentinelError::Utf8)
}

/// Why a sentinel-encoded value could not be decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SentinelError {
    /// Not canonical standard Base64.
    #[error("invalid Base64 inside the =?base64?…?= sentinel")]
    Base64,
    /// Decoded bytes are not UTF-8.
    #[error("the =?base64?…?= sentinel does not decode to UTF-8")]
    Utf8,
}

/// Check that an optional header equals the body value (ladder step 7).
pub fn check_matches(headers: &HeaderMap, name: &str, body_value: &str) -> Result<(), RpcError> {
    match header_text(headers, name)? {
        Some(h) if h != body_value => Err(RpcError::header_mismatch(name, Some(h), Some(body_value))),
        _ => Ok(()),
    }
}

/// Require a header and check that it equals the body value (ladder step 9).
pub fn check_required(headers: &HeaderMap, name: &str, body_value: &str) -> Result<(), RpcError> {
    match header_text(headers, name)? {
        None => Err(RpcError::header_mismatch(name, None, Some(body_value))),
        Some(h) if h != body_value => Err(RpcError::header_mismatch(name, Some(h), Some(body_value))),
        Some(_) => Ok(()),
    }
}

/// Require `Mcp-Name`, sentinel-decode it and compare with the body's name or URI.
pub fn check_name(headers: &HeaderMap, body_value: &str) -> Result<(), RpcError> {
    let raw = header_text(headers, &NAME_NAME)?
        .ok_or_else(|| RpcError::header_mismatch(NAME_HEADER, None, Some(body_value)))?;
    let decoded = decode_header_value(raw).map_err(|_| RpcError::header_mismatch(NAME_HEADER, Some(raw), None))?;
    if decoded != body_value {
        return Err(RpcError::header_mismatch(NAME_HEADER, Some(raw), Some(body_value)));
    }
    Ok(())
}

/// One `x-mcp-header` declaration of a tool: the argument's property path and the header name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParamHeader {
    /// Property names from the schema root down to the annotated property.
    pub path: Vec<String>,
    /// The `<Name>` in `Mcp-Param-<Name>`.
    pub name: String,
}

/// Why a tool's `x-mcp-header` annotations are invalid (clients would drop the tool).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParamHeaderError {
    /// Not a non-empty RFC 9110 token.
    #[error("x-mcp-header {0:?} is not a valid header token")]
    NotAToken(String),
    /// Two annotations name the same header (case-insensitively).
    #[error("x-mcp-header {0:?} is declared twice")]
    Duplicate(String),
    /// The annotated property is not a string, integer or boolean.
    #[error("x-mcp-header {0:?} is on a property that is not a string, integer or boolean")]
    NotPrimitive(String),
}

/// Collect the `x-mcp-header` declarations reachable from the schema root through
/// `properties` only, validating each (spec digest §4.3).
pub fn param_headers(schema: &Value) -> Result<Vec<ParamHeader>, ParamHeaderError> {
    let mut out = Vec::new();
    collect_params(schema, &mut Vec::new(), &mut out)?;
    let mut seen = std::collections::HashSet::new();
    for p in &out {
        if !seen.insert(p.name.to_ascii_lowercase()) {
            return Err(ParamHeaderError::Duplicate(p.name.clone()));
        }
    }
    Ok(out)
}

fn collect_params(schema: &Value, path: &mut Vec<String>, out: &mut Vec<ParamHeader>) -> Result<(), ParamHeaderError> {
    let Some(props) = schema.get("properties").and_then(Value::as_object) else { return Ok(()) };
    for (key, prop) in props {
        path.push(key.clone());
        if let Some(name) = prop.get("x-mcp-header") {
            let name = name.as_str().unwrap_or_default().to_owned();
            if name.is_empty() || !name.bytes().all(is_tchar) {
                return Err(ParamHeaderError::NotAToken(name));
            }
            if !matches!(prop.get("type").and_then(Value::as_str), Some("string" | "integer" | "boolean")) {
                return Err(ParamHeaderError::NotPrimitive(name));
            }
            out.push(ParamHeader { path: path.clone(), name });
        }
        collect_params(prop, path, out)?;
        path.pop();
    }
    Ok(())
}

fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// Check every declared `Mcp-Param-*` header against the call's arguments (ladder step 12).
pub fn check_param_headers(headers: &HeaderMap, declared: &[ParamHeader], arguments: &Value) -> Result<(), RpcError> {
    for decl in declared {
        let mut value = arguments;
        for key in &decl.path {
            value = match value.get(key) {
                Some(v) => v,
                None => &Value::Null,
            };
        }
        let expected = match value {
            Value::Null => continue,
            Value::String(s) => s.clone(),
            Value::Bool(b) => b.to_string(),
            Value::Number(n) => n.to_string(),
            // A non-primitive argument is left to argument validation.
            _ => continue,
        };
        let header = format!("{PARAM_HEADER_PREFIX}{}", decl.name.to_ascii_lowercase());
        let raw =
            header_text(headers, &header)?.ok_or_else(|| RpcError::header_mismatch(&header, None, Some(&expected)))?;
        let decoded = decode_header_value(raw).map_err(|_| RpcError::header_mismatch(&header, Some(raw), None))?;
        let equal = match value {
            Value::Number(n) => numbers_equal(&decoded, n),
            _ => decoded == expected,
        };
        if !equal {
            return Err(RpcError::header_mismatch(&header, Some(raw), Some(&expected)));
        }
    }
    Ok(())
}

/// Integers compare numerically (`42.0` equals `42`); the header must look like `-?\d+(\.\d+)?`.
fn numbers_equal(header: &str, body: &serde_json::Number) -> bool {
    let digits = header.strip_prefix('-').unwrap_or(header);
    let (int, frac) = digits.split_once('.').unwrap_or((digits, "0"));
    let well_formed = !int.is_empty()
        && int.bytes().all(|b| b.is_ascii_digit())
        && !frac.is_empty()
        && frac.bytes().all(|b| b.is_ascii_digit());
    well_formed && header.parse::<f64>().ok() == body.as_f64()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(http::HeaderName::from_bytes(k.as_bytes()).unwrap(), v.parse().unwrap());
        }
        h
    }

    #[test]
    fn sentinel_decoding_is_strict() {
        assert_eq!(decode_header_value("=?base64?SGVsbG8=?=").unwrap(), "Hello");
        assert_eq!(decode_header_value("=?base64?SGVsbG8?="), Err(SentinelError::Base64));
        assert_eq!(decode_header_value("=?base64?SGVs!!!bG8=?="), Err(SentinelError::Base64));
        assert_eq!(decode_header_value("SGVsbG8=").unwrap(), "SGVsbG8=");
        assert_eq!(decode_header_value("=?base64?SGVsbG8=").unwrap(), "=?base64?SGVsbG8=");
        assert_eq!(decode_header_value("=?base64?/w==?="), Err(SentinelError::Utf8));
    }

    #[test]
    fn name_header_trims_and_compares_case_sensitively() {
        assert!(check_name(&headers(&[("mcp-name", "  tool  ")]), "tool").is_ok());
        assert!(check_name(&headers(&[("mcp-name", "Tool")]), "tool").is_err());
        assert!(check_name(&headers(&[]), "tool").is_err());
        assert!(check_required(&headers(&[("mcp-method", "a"), ("mcp-method", "a")]), "mcp-method", "a").is_err());
    }

    #[test]
    fn param_headers_are_collected_and_validated() {
        let schema = json!({"type":"object","properties":{
            "region":{"type":"string","x-mcp-header":"Region"},
            "limit":{"type":"integer","x-mcp-header":"Limit"},
            "nested":{"type":"object","properties":{"flag":{"type":"boolean","x-mcp-header":"Flag"}}}}});
        let decls = param_headers(&schema).unwrap();
        assert_eq!(decls.len(), 3);
        let args = json!({"region":"eu","limit":5,"nested":{"flag":true}});
        let ok = headers(&[("mcp-param-region", "eu"), ("mcp-param-limit", "5.0"), ("mcp-param-flag", "true")]);
        assert!(check_param_headers(&ok, &decls, &args).is_ok());
        let bad = headers(&[("mcp-param-region", "eu"), ("mcp-param-limit", "0x5"), ("mcp-param-flag", "true")]);
        assert!(check_param_headers(&bad, &decls, &args).is_err());
        let missing = headers(&[("mcp-param-region", "eu")]);
        assert!(check_param_headers(&missing, &decls, &args).is_err());
        // Absent arguments need no header.
        assert!(check_param_headers(&headers(&[]), &decls, &json!({})).is_ok());
    }

    #[test]
    fn invalid_annotations_are_refused() {
        let bad_token = json!({"properties":{"a":{"type":"string","x-mcp-header":"A B"}}});
        assert!(matches!(param_headers(&bad_token), Err(ParamHeaderError::NotAToken(_))));
        let number = json!({"properties":{"a":{"type":"number","x-mcp-header":"A"}}});
        assert!(matches!(param_headers(&number), Err(ParamHeaderError::NotPrimitive(_))));
        let dup =
            json!({"properties":{"a":{"type":"string","x-mcp-header":"A"},"b":{"type":"string","x-mcp-header":"a"}}});
        assert!(matches!(param_headers(&dup), Err(ParamHeaderError::Duplicate(_))));
    }
}
