//! JSON Schema 2020-12 validation of tool arguments (`inputSchema`) and of a tool's
//! `structuredContent` (`outputSchema`), with schemas compiled once, when a tool is
//! registered, and shared by every catalog snapshot that lists it.
//!
//! The validator is the `jsonschema` crate (already the catalog file's load-time check), built
//! without its HTTP and file resolvers: compiling never does I/O, and a `$ref` that is not
//! inside the schema is a definition error, not a fetch at call time. A schema without
//! `$schema` is read as 2020-12, the dialect MCP tools use by default. `format` is an
//! annotation only, as 2020-12 says.
//!
//! Schemas pass through the server untouched (the wire keeps exactly what was registered);
//! what callers do with a violation is theirs: the server answers bad arguments with an
//! `isError` result the model can fix (spec digest §21.4) and a non-conforming
//! `structuredContent` with `-32603`.

use std::fmt;
use std::sync::Arc;

use serde_json::Value;

/// A compiled JSON Schema. Cheap to clone (an `Arc`).
///
/// ```
/// use mcp_fleet_protocol::schema::CompiledSchema;
/// use serde_json::json;
/// let schema = CompiledSchema::compile(&json!({
///     "type": "object",
///     "properties": {"n": {"type": "integer", "minimum": 1}},
///     "required": ["n"]
/// }))
/// .unwrap();
/// assert!(schema.check(&json!({"n": 3})).is_ok());
/// let bad = schema.check(&json!({"n": 0})).unwrap_err();
/// assert_eq!(bad.path, "/n");
/// ```
#[derive(Clone)]
pub struct CompiledSchema(Arc<jsonschema::Validator>);

impl fmt::Debug for CompiledSchema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("CompiledSchema")
    }
}

/// A schema that does not compile: invalid against its meta-schema, a bad `pattern`, or a
/// `$ref` that cannot be resolved inside the document.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid JSON Schema: {0}")]
pub struct SchemaError(String);

/// Why an instance does not conform: the first violation found.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("at {}: {message}", if path.is_empty() { "the root" } else { path.as_str() })]
pub struct Violation {
    /// JSON pointer to the failing value inside the instance (`""` for the root).
    pub path: String,
    /// What is wrong with it.
    pub message: String,
}

impl CompiledSchema {
    /// Compile `schema` (its `$schema` picks the dialect; 2020-12 when absent).
    pub fn compile(schema: &Value) -> Result<Self, SchemaError> {
        jsonschema::validator_for(schema).map(|v| CompiledSchema(Arc::new(v))).map_err(|e| SchemaError(e.to_string()))
    }

    /// Check `instance`; `Err` names the first violation and where it is.
    pub fn check(&self, instance: &Value) -> Result<(), Violation> {
        self.0
            .validate(instance)
            .map_err(|e| Violation { path: e.instance_path().as_str().to_owned(), message: e.to_string() })
    }
}

/// A tool's schemas, compiled: its arguments' and, when it declares one, its structured
/// output's.
#[derive(Debug, Clone)]
pub struct ToolSchemas {
    /// `inputSchema`.
    pub input: CompiledSchema,
    /// `outputSchema`, if any.
    pub output: Option<CompiledSchema>,
}

impl ToolSchemas {
    /// Compile both schemas; the error says which one failed.
    pub fn compile(input: &Value, output: Option<&Value>) -> Result<Self, SchemaError> {
        let input = CompiledSchema::compile(input).map_err(|e| SchemaError(format!("inputSchema: {}", e.0)))?;
        let output = output
            .map(|o| CompiledSchema::compile(o).map_err(|e| SchemaError(format!("outputSchema: {}", e.0))))
            .transpose()?;
        Ok(ToolSchemas { input, output })
    }

    /// Check a result's `structuredContent` against `outputSchema`. A tool with an output
    /// schema MUST return conforming structured results (spec, Tools › Output Schema), so a
    /// missing `structuredContent` is a violation too; an error result (`isError`) is exempt.
    pub fn check_output(&self, structured: Option<&Value>, is_error: bool) -> Result<(), Violation> {
        let Some(schema) = self.output.as_ref().filter(|_| !is_error) else { return Ok(()) };
        match structured {
            Some(value) => schema.check(value),
            None => Err(Violation {
                path: String::new(),
                message: "structuredContent is missing but the tool declares an outputSchema".into(),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn compiled(schema: Value) -> CompiledSchema {
        CompiledSchema::compile(&schema).expect("a valid schema")
    }

    #[test]
    fn checks_required_types_and_extras() {
        let schema = compiled(
            json!({"type":"object","properties":{"a":{"type":"string"},"n":{"type":"integer"}},"required":["a"],"additionalProperties":false}),
        );
        assert!(schema.check(&json!({"a":"x","n":3.0})).is_ok());
        for bad in [json!({}), json!({"a":1}), json!({"a":"x","n":1.5}), json!({"a":"x","z":1})] {
            assert!(schema.check(&bad).is_err(), "{bad}");
        }
    }

    /// The conformance fixture's schema (`json_schema_2020_12_tool`): `$ref` into `$defs`,
    /// `allOf`/`anyOf`, `if`/`then`/`else`, `additionalProperties: false`.
    #[test]
    fn applies_composition_conditionals_and_refs() {
        let schema = compiled(json!({"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object",
            "$defs":{"address":{"$anchor":"addressDef","type":"object","properties":{"street":{"type":"string"},"city":{"type":"string"}}}},
            "properties":{"name":{"type":"string"},"address":{"$ref":"#/$defs/address"},"contactMethod":{"type":"string","enum":["phone","email"]},"phone":{"type":"string"},"email":{"type":"string"}},
            "allOf":[{"anyOf":[{"required":["phone"]},{"required":["email"]}]}],
            "if":{"properties":{"contactMethod":{"const":"phone"}},"required":["contactMethod"]},
            "then":{"required":["phone"]},"else":{"required":["email"]},
            "additionalProperties":false}));
        assert!(schema.check(&json!({"name":"a","email":"a@b.c"})).is_ok());
        assert!(schema.check(&json!({"contactMethod":"phone","phone":"1"})).is_ok());
        // `else` needs an email; `then` needs a phone; `$ref` types the address.
        assert!(schema.check(&json!({"phone":"1"})).is_err());
        assert!(schema.check(&json!({"contactMethod":"phone","email":"a@b.c"})).is_err());
        let bad = schema.check(&json!({"email":"a@b.c","address":{"city":7}})).unwrap_err();
        assert_eq!(bad.path, "/address/city");
    }

    #[test]
    fn a_schema_that_cannot_compile_is_refused() {
        for bad in [
            json!({"type":"object","properties":{"a":{"pattern":"("}}}),
            json!({"$ref":"https://example.invalid/s.json"}),
            json!({"type": 5}),
        ] {
            assert!(CompiledSchema::compile(&bad).is_err(), "{bad}");
        }
        let err = ToolSchemas::compile(&json!({"type":"object"}), Some(&json!({"type":"nope"}))).unwrap_err();
        assert!(err.to_string().contains("outputSchema"), "{err}");
    }

    #[test]
    fn output_needs_conforming_structured_content_unless_an_error() {
        let schemas = ToolSchemas::compile(
            &json!({"type":"object"}),
            Some(&json!({"type":"object","properties":{"sum":{"type":"number"}},"required":["sum"]})),
        )
        .unwrap();
        assert!(schemas.check_output(Some(&json!({"sum": 3})), false).is_ok());
        assert_eq!(schemas.check_output(Some(&json!({"sum": "3"})), false).unwrap_err().path, "/sum");
        assert_eq!(schemas.check_output(None, false).unwrap_err().path, "");
        assert!(schemas.check_output(None, true).is_ok(), "an isError result carries no structured output");
        let plain = ToolSchemas::compile(&json!({"type":"object"}), None).unwrap();
        assert!(plain.check_output(None, false).is_ok());
    }
}
