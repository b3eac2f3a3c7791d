//! Property tests of the catalog parser (bounded case counts, so CI stays fast): whatever text
//! an operator's ConfigMap holds — arbitrary bytes, a file cut off anywhere, entries of any
//! shape — parsing answers a catalog or an error that names the file, bounded in size, never a
//! panic.

use mcp_fleet_catalog_file::{Catalog, Format};
use proptest::prelude::*;

/// A small valid catalog in TOML.
const VALID: &str = r#"
[[tools]]
name = "echo"
description = "Echoes"
input_schema = { type = "object", properties = { text = { type = "string" } } }
http = { url = "https://backend.invalid/echo" }

[[prompts]]
name = "greet"
description = "Greets"
arguments = [{ name = "name", description = "Whom", required = true }]
text = "Hello {{name}}"
"#;

fn parse(text: &str, format: Format) -> Result<Catalog, String> {
    Catalog::parse_with_env(text, format, "catalog.toml".as_ref(), &|_: &str| None).map_err(|e| e.to_string())
}

/// A TOML value of a few shapes, as an entry field's right-hand side.
fn toml_value() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z ]{0,10}".prop_map(|s| format!("{s:?}")),
        any::<i32>().prop_map(|n| n.to_string()),
        any::<bool>().prop_map(|b| b.to_string()),
        Just("[]".to_owned()),
        Just("{}".to_owned()),
        "[a-z]{1,8}".prop_map(|k| format!("{{ {k} = 1 }}")),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_text_never_panics(text in "\\PC{0,300}") {
        let _ = parse(&text, Format::Toml);
        let _ = parse(&text, Format::Json);
    }

    #[test]
    fn a_file_cut_off_anywhere_is_a_catalog_or_an_error(cut in 0..VALID.len()) {
        if let Some(prefix) = VALID.get(..cut) {
            let _ = parse(prefix, Format::Toml);
        }
    }

    #[test]
    fn entries_of_any_shape_are_refused_with_a_position_or_accepted(
        section in prop::sample::select(vec!["tools", "resources", "resource_templates", "prompts", "nonsense"]),
        fields in prop::collection::vec(
            (prop::sample::select(vec!["name", "description", "uri", "file", "text", "http", "input_schema", "messages", "mime_type", "x"]), toml_value()),
            0..6,
        ),
    ) {
        let mut text = format!("[[{section}]]\n");
        let mut seen = std::collections::BTreeSet::new();
        for (key, value) in fields {
            if seen.insert(key) {
                text.push_str(&format!("{key} = {value}\n"));
            }
        }
        if let Err(message) = parse(&text, Format::Toml) {
            prop_assert!(message.starts_with("catalog.toml"), "errors name the file: {message}");
            prop_assert!(!message.is_empty() && message.len() < 2_000, "bounded: {message}");
        }
    }
}

#[test]
fn the_valid_fixture_is_valid() {
    let catalog = parse(VALID, Format::Toml).expect("the fixture parses");
    assert_eq!(catalog.tools().count(), 1);
    assert_eq!(catalog.prompts().count(), 1);
}
