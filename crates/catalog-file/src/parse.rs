//! From text to the format's structs, and from an entry (or one of its keys) back to a line
//! and column: what makes every error a `file:line:col: …` line.
//!
//! Syntax and type errors carry their position from the parser (`toml` gives a byte span,
//! `serde_json` a line and column). Semantic errors are found later, on plain structs, so
//! [`locate`] re-reads the TOML document with `toml::de::DeTable`, which keeps the span of
//! every key, and walks to the entry — only when there is an error to report, so a valid
//! file is parsed once. JSON has no span API: its semantic errors name the entry only.

use std::ops::Range;
use std::path::Path;

use toml::de::{DeTable, DeValue};

use crate::error::{CatalogError, Location};
use crate::format::FileCatalog;

/// The syntax of a catalog file, chosen by its extension.
///
/// ```
/// use mcp_fleet_catalog_file::Format;
/// assert_eq!(Format::from_path("deploy/catalog.toml".as_ref()), Some(Format::Toml));
/// assert_eq!(Format::from_path("catalog.JSON".as_ref()), Some(Format::Json));
/// assert_eq!(Format::from_path("catalog.yaml".as_ref()), None);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// TOML 1.0 (`.toml`).
    Toml,
    /// JSON (`.json`).
    Json,
}

impl Format {
    /// The format for `path`'s extension (case-insensitive), if it is `.toml` or `.json`.
    pub fn from_path(path: &Path) -> Option<Format> {
        let ext = path.extension()?.to_str()?;
        if ext.eq_ignore_ascii_case("toml") {
            Some(Format::Toml)
        } else if ext.eq_ignore_ascii_case("json") {
            Some(Format::Json)
        } else {
            None
        }
    }
}

/// One step from an entry to the key a problem is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PathSeg {
    /// A key of a table.
    Key(String),
    /// An element of an array.
    Index(usize),
}

impl From<&str> for PathSeg {
    fn from(key: &str) -> Self {
        PathSeg::Key(key.to_owned())
    }
}

impl From<usize> for PathSeg {
    fn from(index: usize) -> Self {
        PathSeg::Index(index)
    }
}

/// Parse `text` into the format's structs; a syntax, type or unknown-key error becomes
/// [`CatalogError::Syntax`] at its position in `file`.
pub(crate) fn parse_file(text: &str, format: Format, file: &str) -> Result<FileCatalog, CatalogError> {
    match format {
        Format::Toml => toml::from_str(text).map_err(|e| {
            let line_col = e.span().map(|span| line_col(text, span.start));
            syntax(file, line_col, e.message())
        }),
        Format::Json => serde_json::from_str(text).map_err(|e| {
            let line_col = (e.line() > 0).then(|| (e.line(), e.column()));
            syntax(file, line_col, &json_message(&e))
        }),
    }
}

/// The line and column of `list[index]` — or of the key `path` leads to inside it, as deep as
/// the path can be followed — in a TOML `text`; `None` for JSON or if it cannot be found.
pub(crate) fn locate(text: &str, format: Format, list: &str, index: usize, path: &[PathSeg]) -> Option<(usize, usize)> {
    if format != Format::Toml {
        return None;
    }
    let doc = DeTable::parse(text).ok()?;
    let (_, entries) = doc.get_ref().iter().find(|(k, _)| k.get_ref() == list)?;
    let DeValue::Array(entries) = entries.get_ref() else { return None };
    let entry = entries.get(index)?;
    let span = descend(entry, path);
    Some(line_col(text, span.start))
}

/// Follow `path` from `value` as far as it goes; the span of the last key (or element) found.
fn descend(value: &toml::Spanned<DeValue<'_>>, path: &[PathSeg]) -> Range<usize> {
    let mut span = value.span();
    let mut here = value;
    for seg in path {
        let next = match (seg, here.get_ref()) {
            (PathSeg::Key(key), DeValue::Table(table)) => {
                table.iter().find(|(k, _)| k.get_ref() == key).map(|(k, v)| (k.span(), v))
            }
            (PathSeg::Index(i), DeValue::Array(items)) => items.get(*i).map(|v| (v.span(), v)),
            // JSON pointers (schema errors) do not say whether a step is a key or an index.
            (PathSeg::Key(key), DeValue::Array(items)) => {
                key.parse::<usize>().ok().and_then(|i| items.get(i)).map(|v| (v.span(), v))
            }
            _ => None,
        };
        let Some((found, value)) = next else { break };
        span = found;
        here = value;
    }
    span
}

/// 1-based line and column (in characters) of the byte `offset` of `text`.
pub(crate) fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = text.get(..offset).unwrap_or(text);
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let line = before.matches('\n').count() + 1;
    (line, before[line_start..].chars().count() + 1)
}

fn syntax(file: &str, line_col: Option<(usize, usize)>, message: &str) -> CatalogError {
    CatalogError::Syntax { at: Location { file: file.to_owned(), line_col }, message: one_line(message) }
}

/// serde_json's message without its ` at line N column M` suffix (the position is printed
/// first, like every other error).
fn json_message(e: &serde_json::Error) -> String {
    let full = e.to_string();
    let suffix = format!(" at line {} column {}", e.line(), e.column());
    full.strip_suffix(&suffix).map_or(full.clone(), str::to_owned)
}

/// Messages go into one log line.
pub(crate) fn one_line(message: &str) -> String {
    message.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_and_column_count_characters() {
        let text = "a\nbé = 1\n";
        assert_eq!(line_col(text, 0), (1, 1));
        assert_eq!(line_col(text, 2), (2, 1));
        assert_eq!(line_col(text, text.find('=').unwrap()), (2, 4));
    }

    #[test]
    fn locate_walks_to_the_deepest_key_it_finds() {
        let text =
            "[[tools]]\nname = \"a\"\n\n[[tools]]\nname = \"b\"\nhttp = { url = \"x\", headers = { A = \"1\" } }\n";
        assert_eq!(locate(text, Format::Toml, "tools", 1, &[]), Some((4, 1)));
        assert_eq!(locate(text, Format::Toml, "tools", 1, &["http".into(), "url".into()]), Some((6, 10)));
        assert_eq!(locate(text, Format::Toml, "tools", 1, &["http".into(), "nope".into()]), Some((6, 1)));
        assert_eq!(locate(text, Format::Toml, "tools", 2, &[]), None);
        assert_eq!(locate(text, Format::Json, "tools", 0, &[]), None);
    }
}
