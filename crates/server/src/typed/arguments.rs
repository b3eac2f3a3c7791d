//! Arguments into a handler's type: deserialized once, a failure named by its JSON pointer as
//! the schema check names it; and the wire's strings (prompt arguments, template variables)
//! turned into the numbers and booleans the type's schema asks for first.

use mcp_fleet_protocol::schema::Violation;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::schema;

/// `value` as a `T`, or where and why it is not one.
pub(crate) fn deserialize<T: DeserializeOwned>(value: Value) -> Result<T, Violation> {
    serde_path_to_error::deserialize(value)
        .map_err(|error| Violation { path: pointer(error.path()), message: error.inner().to_string() })
}

/// A serde path (`a.b[0]`) as a JSON pointer (`/a/b/0`), like the schema check's paths.
fn pointer(path: &serde_path_to_error::Path) -> String {
    use serde_path_to_error::Segment;
    let mut pointer = String::new();
    for segment in path.iter() {
        match segment {
            Segment::Seq { index } => pointer.push_str(&format!("/{index}")),
            Segment::Map { key } | Segment::Enum { variant: key } => {
                pointer.push('/');
                pointer.push_str(&key.replace('~', "~0").replace('/', "~1"));
            }
            Segment::Unknown => {}
        }
    }
    pointer
}

/// `strings` (the wire's string values) with each one whose property in `root` (an object
/// schema) is a number, an integer or a boolean — and not also a string — parsed as one. A
/// string that does not parse stays a string, so deserializing names it.
pub(crate) fn coerce_strings(strings: Map<String, Value>, root: &Value) -> Map<String, Value> {
    strings
        .into_iter()
        .map(|(name, value)| {
            let coerced = match (&value, schema::property(root, &name)) {
                (Value::String(text), Some(property)) => parse_as(text, &schema::types(property)).unwrap_or(value),
                _ => value,
            };
            (name, coerced)
        })
        .collect()
}

fn parse_as(text: &str, types: &[&str]) -> Option<Value> {
    if types.contains(&"string") {
        return None;
    }
    if (types.contains(&"integer") || types.contains(&"number"))
        && let Ok(number) = text.trim().parse::<serde_json::Number>()
    {
        return Some(Value::Number(number));
    }
    if types.contains(&"boolean") {
        return match text.trim() {
            "true" => Some(Value::Bool(true)),
            "false" => Some(Value::Bool(false)),
            _ => None,
        };
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use serde_json::json;

    #[derive(Debug, Deserialize)]
    struct Order {
        #[allow(dead_code)]
        lines: Vec<Line>,
    }
    #[derive(Debug, Deserialize)]
    struct Line {
        #[allow(dead_code)]
        qty: u32,
    }

    #[test]
    fn a_failure_names_its_json_pointer() {
        let error = deserialize::<Order>(json!({"lines": [{"qty": 1}, {"qty": "x/y"}]})).unwrap_err();
        assert_eq!(error.path, "/lines/1/qty");
        assert!(error.message.contains("invalid type: string \"x/y\""), "{}", error.message);
        assert_eq!(error.to_string(), format!("at /lines/1/qty: {}", error.message));
    }

    #[test]
    fn strings_become_what_the_schema_asks_for() {
        let root = json!({"type": "object", "properties": {
            "n": {"type": "integer"}, "x": {"type": ["number", "null"]}, "b": {"type": "boolean"},
            "s": {"type": "string"}, "e": {"$ref": "#/$defs/E"}},
            "$defs": {"E": {"type": "string", "enum": ["a"]}}});
        let wire = json!({"n": "42", "x": "1.5", "b": "true", "s": "7", "e": "a", "other": "1", "bad": "no"});
        let Value::Object(wire) = wire else { unreachable!() };
        let coerced = coerce_strings(wire, &root);
        assert_eq!(
            Value::Object(coerced),
            json!({"n": 42, "x": 1.5, "b": true, "s": "7", "e": "a", "other": "1", "bad": "no"})
        );
        let Value::Object(wire) = json!({"n": "forty"}) else { unreachable!() };
        assert_eq!(coerce_strings(wire, &root)["n"], json!("forty"));
    }
}
