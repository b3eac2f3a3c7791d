//! Matching URIs against RFC 6570 level-1 templates (`test://template/{id}/data`).
//!
//! A variable matches one or more characters up to the next literal (never across `/`), which
//! is what resource templates in practice use.

use serde_json::{Map, Value};

/// A parsed URI template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct UriTemplate {
    parts: Vec<Part>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Literal(String),
    Variable(String),
}

/// An invalid template.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid URI template {0:?}: unbalanced braces or an empty variable")]
pub(crate) struct TemplateError(pub(crate) String);

impl UriTemplate {
    /// Parse `template`.
    pub(crate) fn parse(template: &str) -> Result<UriTemplate, TemplateError> {
        let err = || TemplateError(template.to_owned());
        let mut parts = Vec::new();
        let mut rest = template;
        while let Some(open) = rest.find('{') {
            if open > 0 {
                parts.push(Part::Literal(rest[..open].to_owned()));
            }
            let close = rest[open..].find('}').ok_or_else(err)? + open;
            let name = &rest[open + 1..close];
            if name.is_empty() || name.contains('{') {
                return Err(err());
            }
            parts.push(Part::Variable(name.to_owned()));
            rest = &rest[close + 1..];
        }
        if rest.contains('}') {
            return Err(err());
        }
        if !rest.is_empty() {
            parts.push(Part::Literal(rest.to_owned()));
        }
        Ok(UriTemplate { parts })
    }

    /// The names of its variables, in order.
    pub(crate) fn variables(&self) -> impl Iterator<Item = &str> {
        self.parts.iter().filter_map(|part| match part {
            Part::Variable(name) => Some(name.as_str()),
            Part::Literal(_) => None,
        })
    }

    /// Match `uri`, returning the variables on success.
    pub(crate) fn matches(&self, uri: &str) -> Option<Map<String, Value>> {
        let mut vars = Map::new();
        let mut rest = uri;
        for (i, part) in self.parts.iter().enumerate() {
            match part {
                Part::Literal(lit) => rest = rest.strip_prefix(lit.as_str())?,
                Part::Variable(name) => {
                    let end = match self.parts.get(i + 1) {
                        Some(Part::Literal(next)) => rest.find(next.as_str())?,
                        _ => rest.len(),
                    };
                    let value = &rest[..end];
                    if value.is_empty() || value.contains('/') {
                        return None;
                    }
                    vars.insert(name.clone(), Value::String(value.to_owned()));
                    rest = &rest[end..];
                }
            }
        }
        rest.is_empty().then_some(vars)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_level_one_templates() {
        let t = UriTemplate::parse("test://template/{id}/data").unwrap();
        assert_eq!(t.matches("test://template/123/data").unwrap()["id"], "123");
        assert!(t.matches("test://template//data").is_none());
        assert!(t.matches("test://template/1/2/data").is_none());
        assert!(t.matches("test://template/123/data/x").is_none());
        let t = UriTemplate::parse("file:///{path}").unwrap();
        assert_eq!(t.matches("file:///a.txt").unwrap()["path"], "a.txt");
        assert!(UriTemplate::parse("a/{b").is_err());
        assert!(UriTemplate::parse("a/{}").is_err());
        let t = UriTemplate::parse("orders://{order}/lines/{line}").unwrap();
        assert_eq!(t.variables().collect::<Vec<_>>(), ["order", "line"]);
    }
}
