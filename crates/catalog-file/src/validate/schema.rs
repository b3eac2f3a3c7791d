//! JSON Schema checks for `input_schema` and `output_schema`: valid JSON Schema 2020-12 (the
//! dialect MCP tools use by default), `"type": "object"` at the root (MCP requires it of both,
//! and the server refuses a tool without it), and compilable — a bad `pattern` regex or a
//! `$ref` that cannot be resolved offline is a load error, not a surprise at call time.

use serde_json::Value;

use super::file::Flaw;
use crate::error::Problem;
use crate::parse::PathSeg;

/// Check the schema found under the key `field`.
pub(crate) fn check(schema: &Value, field: &'static str) -> Result<(), Flaw> {
    if let Err(e) = jsonschema::draft202012::meta::validate(schema) {
        let mut path = vec![PathSeg::from(field)];
        path.extend(pointer_segments(e.instance_path().as_str()));
        return Err(Flaw { path, problem: Problem::Schema { field, message: e.to_string() } });
    }
    if schema.get("type").and_then(Value::as_str) != Some("object") {
        return Err(Flaw::at([field], Problem::SchemaNotObject { field }));
    }
    if let Err(e) = jsonschema::draft202012::new(schema) {
        return Err(Flaw::at([field], Problem::Schema { field, message: e.to_string() }));
    }
    Ok(())
}

/// The keys of a JSON pointer (`/properties/a~1b` → `properties`, `a/b`), to locate the
/// offending key inside the schema.
fn pointer_segments(pointer: &str) -> impl Iterator<Item = PathSeg> + '_ {
    pointer.split('/').skip(1).map(|seg| PathSeg::Key(seg.replace("~1", "/").replace("~0", "~")))
}
