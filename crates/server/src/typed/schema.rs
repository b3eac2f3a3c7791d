//! JSON Schemas derived from Rust types (JSON Schema 2020-12, what MCP requires), and the two
//! shapes MCP asks of them: an argument type must be an object; a result type that is not one
//! is wrapped as `{"result": …}` so `structuredContent` is always an object.

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde_json::{Map, Value, json};

/// The 2020-12 schema of `T`: doc comments become `description`s, serde attributes
/// (`rename_all`, `default`, `deny_unknown_fields`, `Option`) shape it as they shape the JSON.
pub(crate) fn schema_of<T: JsonSchema>() -> Value {
    SchemaSettings::draft2020_12().into_generator().into_root_schema_for::<T>().to_value()
}

/// The schema of `T` with every subschema inlined (no `$defs`), for the places that take no
/// references (elicitation's `requestedSchema`).
pub(crate) fn inline_schema_of<T: JsonSchema>() -> Value {
    let settings = SchemaSettings::draft2020_12().with(|s| s.inline_subschemas = true);
    settings.into_generator().into_root_schema_for::<T>().to_value()
}

/// Whether `schema` describes JSON objects (`"type": "object"` at its root).
pub(crate) fn is_object(schema: &Value) -> bool {
    schema.get("type").and_then(Value::as_str) == Some("object")
}

/// The `outputSchema` of a structured result type: its own schema when it is an object, else
/// `{"type":"object","properties":{"result": …},"required":["result"]}` with its `$defs`
/// hoisted to the root (so `#/$defs/…` still resolves). `true` with the wrapped one.
pub(crate) fn output_schema(schema: Value) -> (Value, bool) {
    if is_object(&schema) {
        return (schema, false);
    }
    let Value::Object(mut inner) = schema else { return (wrapper(schema, None, None), true) };
    let dialect = inner.remove("$schema");
    let defs = inner.remove("$defs");
    (wrapper(Value::Object(inner), dialect, defs), true)
}

fn wrapper(result: Value, dialect: Option<Value>, defs: Option<Value>) -> Value {
    let mut root = Map::new();
    if let Some(dialect) = dialect {
        root.insert("$schema".into(), dialect);
    }
    root.insert("type".into(), json!("object"));
    root.insert("properties".into(), json!({ "result": result }));
    root.insert("required".into(), json!(["result"]));
    if let Some(defs) = defs {
        root.insert("$defs".into(), defs);
    }
    Value::Object(root)
}

/// The schema of property `name` of the object schema `root`, a `$ref` into `root`'s `$defs`
/// followed once.
pub(crate) fn property<'a>(root: &'a Value, name: &str) -> Option<&'a Value> {
    let schema = root.get("properties")?.get(name)?;
    match schema.get("$ref").and_then(Value::as_str).and_then(|r| r.strip_prefix("#/$defs/")) {
        Some(def) => root.get("$defs")?.get(def),
        None => Some(schema),
    }
}

/// The JSON types a schema allows (`"type"` as a string or a list; empty when it says none).
pub(crate) fn types(schema: &Value) -> Vec<&str> {
    match schema.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

/// The names in `root`'s `required` list.
pub(crate) fn required(root: &Value) -> Vec<&str> {
    root.get("required")
        .and_then(Value::as_array)
        .map_or_else(Vec::new, |r| r.iter().filter_map(Value::as_str).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scalar_result_is_wrapped_and_its_defs_hoisted() {
        let (schema, wrapped) =
            output_schema(json!({"$schema": "d", "$ref": "#/$defs/X", "$defs": {"X": {"type": "integer"}}}));
        assert!(wrapped);
        assert_eq!(
            schema,
            json!({"$schema": "d", "type": "object", "properties": {"result": {"$ref": "#/$defs/X"}},
                   "required": ["result"], "$defs": {"X": {"type": "integer"}}})
        );
        let (schema, wrapped) = output_schema(json!({"type": "object"}));
        assert!(!wrapped);
        assert_eq!(schema, json!({"type": "object"}));
    }
}
