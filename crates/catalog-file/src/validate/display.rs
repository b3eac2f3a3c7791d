//! What hosts show of an entry, shared by every list: `icons` (each an `https:` or `data:`
//! URI: hosts should load no other scheme, so another is a load error rather than a broken
//! image), and a resource's or template's `annotations` (`priority` within 0–1). `title` and
//! `_meta` need no check: they pass through as written.

use mcp_fleet_server::types::{Icon, Role};
use serde_json::{Map, Value};

use super::file::Flaw;
use crate::error::Problem;
use crate::format::{FileIcon, FileResourceAnnotations};
use crate::parse::PathSeg;

/// The wire icons of the file's `icons`.
pub(crate) fn icons(file: Vec<FileIcon>) -> Result<Vec<Icon>, Flaw> {
    file.into_iter().enumerate().map(|(i, icon)| self::icon(icon, i)).collect()
}

fn icon(file: FileIcon, index: usize) -> Result<Icon, Flaw> {
    let scheme = file.src.split_once(':').map(|(scheme, _)| scheme.to_ascii_lowercase());
    if !matches!(scheme.as_deref(), Some("https" | "data")) {
        let path = [PathSeg::from("icons"), index.into(), "src".into()];
        return Err(Flaw::at(path, Problem::IconSource(file.src)));
    }
    Ok(Icon { src: file.src, mime_type: file.mime_type, sizes: file.sizes, theme: file.theme })
}

/// The wire form (camelCase keys) of a resource's annotations.
pub(crate) fn resource_annotations(a: FileResourceAnnotations) -> Result<Value, Flaw> {
    let mut out = Map::new();
    if let Some(audience) = a.audience {
        let roles = audience.iter().map(|r| Value::from(role(*r))).collect();
        out.insert("audience".into(), Value::Array(roles));
    }
    if let Some(priority) = a.priority {
        if !(0.0..=1.0).contains(&priority) {
            return Err(Flaw::at(["annotations", "priority"], Problem::Priority(priority.to_string())));
        }
        out.insert("priority".into(), Value::from(priority));
    }
    if let Some(at) = a.last_modified {
        out.insert("lastModified".into(), Value::String(at));
    }
    Ok(Value::Object(out))
}

fn role(role: Role) -> &'static str {
    match role {
        Role::User => "user",
        Role::Assistant => "assistant",
    }
}
