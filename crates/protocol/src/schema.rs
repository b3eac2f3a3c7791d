//! A deliberately small check of tool arguments against the top level of a tool's input
//! schema: `required` properties present, and declared primitive `type`s respected.
//!
//! Schemas pass through the server untouched; this check only catches the argument mistakes a
//! model most often makes, so the tool answers with an `isError` result the model can fix
//! (spec digest §21.4) instead of running on bad input. Full JSON Schema 2020-12 validation
//! (`$ref`, composition keywords) is left to the tool.

use serde_json::{Map, Value};

/// Check `args` against the top level of `schema`; `Err` explains the first violation.
pub fn check_arguments(schema: &Value, args: &Map<String, Value>) -> Result<(), String> {
    if let Some(required) = schema.get("required").and_then(Value::as_array) {
        for key in required.iter().filter_map(Value::as_str) {
            if !args.contains_key(key) {
                return Err(format!("Missing required argument {key:?}"));
            }
        }
    }
    let Some(props) = schema.get("properties").and_then(Value::as_object) else { return Ok(()) };
    for (key, value) in args {
        let Some(ty) = props.get(key).and_then(|p| p.get("type")) else { continue };
        let allowed: Vec<&str> = match ty {
            Value::String(t) => vec![t.as_str()],
            Value::Array(ts) => ts.iter().filter_map(Value::as_str).collect(),
            _ => continue,
        };
        if !allowed.iter().any(|t| has_type(value, t)) {
            return Err(format!("Argument {key:?} must be of type {}", allowed.join(" or ")));
        }
    }
    if schema.get("additionalProperties") == Some(&Value::Bool(false))
        && let Some(extra) = args.keys().find(|k| !props.contains_key(*k))
    {
        return Err(format!("Unexpected argument {extra:?}"));
    }
    Ok(())
}

fn has_type(value: &Value, ty: &str) -> bool {
    match ty {
        "string" => value.is_string(),
        "integer" => value.as_f64().is_some_and(|f| f.fract() == 0.0),
        "number" => value.is_number(),
        "boolean" => value.is_boolean(),
        "object" => value.is_object(),
        "array" => value.is_array(),
        "null" => value.is_null(),
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn checks_required_types_and_extras() {
        let schema = json!({"type":"object","properties":{"a":{"type":"string"},"n":{"type":"integer"}},"required":["a"],"additionalProperties":false});
        let ok = json!({"a":"x","n":3.0});
        assert!(check_arguments(&schema, ok.as_object().unwrap()).is_ok());
        for bad in [json!({}), json!({"a":1}), json!({"a":"x","n":1.5}), json!({"a":"x","z":1})] {
            assert!(check_arguments(&schema, bad.as_object().unwrap()).is_err(), "{bad}");
        }
    }
}
