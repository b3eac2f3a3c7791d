//! One `[[tools]]` entry: its definition (name, schemas, annotations), the scopes its callers
//! need, and how it answers — a `text` template over its input properties, or an `http`
//! forward with its URL, timeout, headers (`${VAR}`s resolved here, at load time, from the
//! allowlist only), redirect policy and identity headers.

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::{Map, Value, json};

use mcp_fleet_protocol::headers::param_headers;
use mcp_fleet_server::types::Tool;

use super::file::{Context, Flaw, check_name, checked_template};
use super::{display, schema};
use crate::catalog::{HttpTarget, IdentityHeaders, ToolAnswer, ToolEntry};
use crate::error::Problem;
use crate::format::{FileForwardIdentity, FileHttp, FileTool, FileToolAnnotations};
use crate::parse::PathSeg;

/// The timeout when the file gives none: long enough for a slow backend, short enough that a
/// dead one does not hold the client for minutes.
const DEFAULT_TIMEOUT_MS: u64 = 10_000;

/// The longest timeout a file may set (10 minutes): past that a caller has long given up.
const MAX_TIMEOUT_MS: u64 = 600_000;

/// Check one tool.
pub(crate) fn tool(t: FileTool, cx: &Context<'_>) -> Result<ToolEntry, Flaw> {
    check_name(&t.name)?;
    let input_schema = t.input_schema.unwrap_or_else(|| json!({"type": "object", "properties": {}}));
    schema::check(&input_schema, "input_schema")?;
    param_headers(&input_schema).map_err(|e| Flaw::at(["input_schema"], Problem::ParamHeader(e.to_string())))?;
    if let Some(output) = &t.output_schema {
        schema::check(output, "output_schema")?;
    }
    for (i, scope) in t.required_scopes.iter().enumerate() {
        if !is_scope_token(scope) {
            return Err(Flaw::at([PathSeg::from("required_scopes"), i.into()], Problem::Scope(scope.clone())));
        }
    }
    let answer = match (t.text, t.http) {
        (Some(_), None) if t.output_schema.is_some() => {
            return Err(Flaw::at(["output_schema"], Problem::OutputSchemaOnTextTool));
        }
        (Some(text), None) => ToolAnswer::Text(checked_template(&text, &properties(&input_schema), &["text"])?),
        (None, Some(http)) => ToolAnswer::Http(Box::new(http_target(http, cx)?)),
        _ => return Err(Flaw::at::<&str>([], Problem::ExactlyOne("text", "http"))),
    };
    let def = Tool {
        name: t.name,
        title: t.title,
        description: t.description,
        input_schema,
        output_schema: t.output_schema,
        annotations: t.annotations.map(annotations),
        icons: display::icons(t.icons)?,
        meta: t.meta,
    };
    Ok(ToolEntry { def, answer, required_scopes: t.required_scopes })
}

/// RFC 6749 §3.3: `scope-token = 1*( %x21 / %x23-5B / %x5D-7E )`.
fn is_scope_token(scope: &str) -> bool {
    !scope.is_empty() && scope.bytes().all(|b| matches!(b, 0x21 | 0x23..=0x5B | 0x5D..=0x7E))
}

/// The argument names a tool declares: its input schema's `properties`.
fn properties(schema: &Value) -> Vec<&str> {
    schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| p.keys().map(String::as_str).collect())
        .unwrap_or_default()
}

/// The wire form (camelCase keys) of the file's annotations.
fn annotations(a: FileToolAnnotations) -> Value {
    let mut out = Map::new();
    let hints = [
        ("readOnlyHint", a.read_only_hint),
        ("destructiveHint", a.destructive_hint),
        ("idempotentHint", a.idempotent_hint),
        ("openWorldHint", a.open_world_hint),
    ];
    if let Some(title) = a.title {
        out.insert("title".into(), Value::String(title));
    }
    for (key, hint) in hints {
        if let Some(hint) = hint {
            out.insert(key.into(), Value::Bool(hint));
        }
    }
    Value::Object(out)
}

/// Check an `http` table: the URL parses and is http(s), the timeout is in range, every
/// header is valid HTTP once its `${VAR}`s are resolved.
fn http_target(h: FileHttp, cx: &Context<'_>) -> Result<HttpTarget, Flaw> {
    let url_flaw = |reason: String| Flaw::at(["http", "url"], Problem::Url { url: h.url.clone(), reason });
    let url = reqwest::Url::parse(&h.url).map_err(|e| url_flaw(e.to_string()))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(url_flaw("the scheme must be http or https".into()));
    }
    let timeout_ms = h.timeout_ms.unwrap_or(DEFAULT_TIMEOUT_MS);
    if !(1..=MAX_TIMEOUT_MS).contains(&timeout_ms) {
        return Err(Flaw::at(["http", "timeout_ms"], Problem::Timeout { max: MAX_TIMEOUT_MS }));
    }
    let mut headers = HeaderMap::new();
    for (name, value) in &h.headers {
        let (name, value) = header(name, value, cx)?;
        headers.insert(name, value);
    }
    let identity = h.forward_identity.as_ref().map(|f| identity(f, &headers)).transpose()?.unwrap_or_default();
    let timeout = std::time::Duration::from_millis(timeout_ms);
    Ok(HttpTarget { url, timeout, headers, redirects: h.redirects, identity })
}

/// The identity headers: valid names, and none the file also sets in `headers` (the caller's
/// identity must never be mistaken for a fixed value, nor overwrite one).
fn identity(f: &FileForwardIdentity, headers: &HeaderMap) -> Result<IdentityHeaders, Flaw> {
    let one = |key: &'static str, name: &Option<String>| -> Result<Option<HeaderName>, Flaw> {
        let Some(name) = name else { return Ok(None) };
        let bad = |reason: &str| {
            let problem = Problem::Header { name: name.clone(), reason: reason.to_owned() };
            Flaw::at(["http", "forward_identity", key], problem)
        };
        let header = HeaderName::from_bytes(name.as_bytes()).map_err(|_| bad("not a valid header name"))?;
        if headers.contains_key(&header) {
            return Err(bad("`headers` sets it too"));
        }
        Ok(Some(header))
    };
    let (subject, tenant) = (one("subject", &f.subject)?, one("tenant", &f.tenant)?);
    if subject.is_some() && subject == tenant {
        return Err(Flaw::at(
            ["http", "forward_identity", "tenant"],
            Problem::Header {
                name: f.tenant.clone().unwrap_or_default(),
                reason: "it is the subject's header too".into(),
            },
        ));
    }
    Ok(IdentityHeaders { subject, tenant })
}

/// One header, its value's `${VAR}`s resolved. Values are marked sensitive (they usually
/// carry credentials), so they never show in `Debug` output; error messages never quote them.
fn header(name: &str, value: &str, cx: &Context<'_>) -> Result<(HeaderName, HeaderValue), Flaw> {
    let path = [PathSeg::from("http"), "headers".into(), name.into()];
    let bad =
        |reason: &str| Flaw::at(path.clone(), Problem::Header { name: name.to_owned(), reason: reason.to_owned() });
    let header_name = HeaderName::from_bytes(name.as_bytes()).map_err(|_| bad("not a valid header name"))?;
    let resolved = crate::env::expand(value, cx.env, cx.allow).map_err(|problem| Flaw::at(path.clone(), problem))?;
    let mut header_value = HeaderValue::from_str(&resolved)
        .map_err(|_| bad("its value (once ${VAR}s are resolved) is not a valid header value"))?;
    header_value.set_sensitive(true);
    Ok((header_name, header_value))
}
