//! The two small template languages of the file: `{{name}}` text templates (tool, prompt and
//! resource-template answers) and the variables of RFC 6570 level-1 URI templates
//! (`notes://{id}`), which a resource template's text may use.
//!
//! Text templates are parsed once, at load, so a malformed one is a load error and rendering
//! cannot fail. Matching URIs against templates is the server's job; this module only lists
//! a template's variables, with the server's syntax rules (balanced braces, no empty name).

use serde_json::{Map, Value};

/// A parsed `{{name}}` template. `{{` always opens a placeholder (there is no escape); the
/// name is what lies between `{{` and `}}`, trimmed of spaces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TextTemplate {
    parts: Vec<Part>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Literal(String),
    Placeholder(String),
}

impl TextTemplate {
    /// Parse `source`; the error says what is wrong, for [`Problem::Template`](crate::Problem).
    pub(crate) fn parse(source: &str) -> Result<TextTemplate, String> {
        let mut parts = Vec::new();
        let mut rest = source;
        while let Some(open) = rest.find("{{") {
            if open > 0 {
                parts.push(Part::Literal(rest[..open].to_owned()));
            }
            let after = &rest[open + 2..];
            let close = after
                .find("}}")
                .ok_or_else(|| format!("`{{{{` at byte {} is never closed", source.len() - rest.len() + open))?;
            let name = after[..close].trim();
            if name.is_empty() {
                return Err("empty placeholder `{{}}`".to_owned());
            }
            if name.contains("{{") {
                return Err(format!("`{{{{` inside the placeholder {name:?}"));
            }
            parts.push(Part::Placeholder(name.to_owned()));
            rest = &after[close + 2..];
        }
        if !rest.is_empty() {
            parts.push(Part::Literal(rest.to_owned()));
        }
        Ok(TextTemplate { parts })
    }

    /// The placeholder names, in order of appearance (repeats included).
    pub(crate) fn placeholders(&self) -> impl Iterator<Item = &str> {
        self.parts.iter().filter_map(|p| match p {
            Part::Placeholder(name) => Some(name.as_str()),
            Part::Literal(_) => None,
        })
    }

    /// Fill the placeholders from `values`: a string as it is, a missing or `null` value as
    /// nothing, any other value as compact JSON.
    pub(crate) fn render(&self, values: &Map<String, Value>) -> String {
        let mut out = String::new();
        for part in &self.parts {
            match part {
                Part::Literal(text) => out.push_str(text),
                Part::Placeholder(name) => match values.get(name) {
                    None | Some(Value::Null) => {}
                    Some(Value::String(s)) => out.push_str(s),
                    Some(other) => out.push_str(&other.to_string()),
                },
            }
        }
        out
    }
}

/// The variable names of an RFC 6570 level-1 URI template (`notes://{id}` → `["id"]`), or
/// `None` when the braces are unbalanced or a variable is empty — the same rules the server
/// applies when the template is registered.
pub(crate) fn uri_template_variables(template: &str) -> Option<Vec<String>> {
    let mut names = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        if rest[..open].contains('}') {
            return None;
        }
        let close = rest[open..].find('}')? + open;
        let name = &rest[open + 1..close];
        if name.is_empty() || name.contains('{') {
            return None;
        }
        names.push(name.to_owned());
        rest = &rest[close + 1..];
    }
    (!rest.contains('}')).then_some(names)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn renders_strings_raw_and_other_values_as_json() {
        let t = TextTemplate::parse("Hello, {{ name }}! n={{n}} o={{o}} missing=[{{gone}}]").unwrap();
        let values = json!({"name": "Ada", "n": 3, "o": {"a": [1]}, "gone": null});
        let Value::Object(values) = values else { unreachable!() };
        assert_eq!(t.render(&values), r#"Hello, Ada! n=3 o={"a":[1]} missing=[]"#);
        assert_eq!(t.placeholders().collect::<Vec<_>>(), ["name", "n", "o", "gone"]);
    }

    #[test]
    fn malformed_templates_say_why() {
        assert_eq!(TextTemplate::parse("a {{b").unwrap_err(), "`{{` at byte 2 is never closed");
        assert_eq!(TextTemplate::parse("{{ }}").unwrap_err(), "empty placeholder `{{}}`");
        assert!(TextTemplate::parse("{{a {{b}}").unwrap_err().contains("inside"));
        assert_eq!(TextTemplate::parse("just } and { and }}").unwrap().placeholders().count(), 0);
    }

    #[test]
    fn uri_template_variables_follow_the_servers_rules() {
        assert_eq!(uri_template_variables("notes://{id}/v/{rev}"), Some(vec!["id".into(), "rev".into()]));
        assert_eq!(uri_template_variables("plain://x"), Some(vec![]));
        for bad in ["a://{", "a://}", "a://{}", "a://{a{b}", "a://}{a}"] {
            assert_eq!(uri_template_variables(bad), None, "{bad}");
        }
    }
}
