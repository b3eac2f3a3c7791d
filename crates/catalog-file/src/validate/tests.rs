//! Parsing and every validation error, each checked as the exact line the node would log —
//! position included.

use std::path::Path;

use serde_json::json;

use crate::catalog::{Catalog, ResourceSource, ToolAnswer};
use crate::error::{CatalogError, Problem};
use crate::parse::Format;

fn env(name: &str) -> Option<String> {
    (name == "MCP_CATALOG_API_TOKEN").then(|| "t0k3n".to_owned())
}

fn parse(text: &str) -> Result<Catalog, CatalogError> {
    Catalog::parse_with_env(text, Format::Toml, Path::new("catalog.toml"), &env)
}

/// The one-line error for a TOML `text`.
fn error(text: &str) -> String {
    match parse(text) {
        Ok(_) => panic!("expected an error for:\n{text}"),
        Err(e) => e.to_string(),
    }
}

const GREET: &str = r#"
[[tools]]
name = "greet"
description = "Greets someone"
input_schema = { type = "object", properties = { name = { type = "string" } }, required = ["name"] }
text = "Hello, {{name}}!"
"#;

#[test]
fn the_minimum_tool_parses() {
    let catalog = parse(GREET).unwrap();
    let tool = &catalog.tools[0];
    assert_eq!(tool.def.name, "greet");
    assert_eq!(tool.def.description.as_deref(), Some("Greets someone"));
    assert_eq!(tool.def.input_schema["required"], json!(["name"]));
    let ToolAnswer::Text(template) = &tool.answer else { panic!("a text tool") };
    let args = json!({"name": "Ada"});
    assert_eq!(template.render(args.as_object().unwrap()), "Hello, Ada!");
}

#[test]
fn every_kind_parses_with_its_optional_fields() {
    let text = r##"
[[tools]]
name = "ask"
title = "Ask"
input_schema = { type = "object", properties = { q = { type = "string" } } }
output_schema = { type = "object" }
annotations = { read_only_hint = true, open_world_hint = false }
http = { url = "https://x.invalid/ask", timeout_ms = 250, headers = { Authorization = "Bearer ${MCP_CATALOG_API_TOKEN}" } }

[[resources]]
uri = "notes://readme"
name = "readme"
file = "notes/readme.md"

[[resource_templates]]
uri_template = "notes://{id}"
name = "note"
mime_type = "text/markdown"
text = "# Note {{id}}"

[[prompts]]
name = "review"
arguments = [{ name = "topic", required = true }]
messages = [{ role = "user", text = "Review {{topic}}" }, { role = "assistant", text = "On it." }]
"##;
    let catalog = Catalog::parse_with_env(text, Format::Toml, Path::new("/etc/mcp/catalog.toml"), &env).unwrap();
    assert_eq!(catalog.len(), 4);
    let tool = &catalog.tools[0];
    assert_eq!(tool.def.annotations, Some(json!({"readOnlyHint": true, "openWorldHint": false})));
    let ToolAnswer::Http(target) = &tool.answer else { panic!("an http tool") };
    assert_eq!(target.timeout.as_millis(), 250);
    assert_eq!(target.headers["authorization"], "Bearer t0k3n");
    assert!(!format!("{catalog:?}").contains("t0k3n"), "header values never show in Debug");
    let ResourceSource::File { path, .. } = &catalog.resources[0].source else { panic!("a file resource") };
    assert_eq!(path, Path::new("/etc/mcp/notes/readme.md"), "relative to the catalog's directory");
    assert_eq!(catalog.prompts[0].messages.len(), 2);
    assert!(catalog.prompts[0].def.arguments[0].required);
}

#[test]
fn an_empty_file_is_an_empty_catalog() {
    assert!(parse("").unwrap().is_empty());
    let json = Catalog::parse("{}", Format::Json, Path::new("c.json")).unwrap();
    assert!(json.is_empty());
}

#[test]
fn syntax_errors_have_line_and_column() {
    assert_eq!(
        error("[[tools]]\nname = \"greet\ntext = \"x\"\n"),
        "catalog.toml:2:14: invalid basic string, expected `\"`"
    );
    assert_eq!(error("tools = 3\n"), "catalog.toml:1:9: invalid type: integer `3`, expected a sequence");
}

#[test]
fn unknown_keys_are_errors_at_the_key() {
    let typo = GREET.replace("description", "descripton");
    assert!(
        error(&typo).starts_with("catalog.toml:4:1: unknown field `descripton`, expected one of"),
        "{}",
        error(&typo)
    );
    assert!(error("[[tool]]\nname = \"x\"\n").starts_with("catalog.toml:1:3: unknown field `tool`"));
    let nested = "[[tools]]\nname = \"a\"\nhttp = { url = \"http://x\", timout_ms = 5 }\n";
    assert!(error(nested).starts_with("catalog.toml:3:28: unknown field `timout_ms`"), "{}", error(nested));
}

#[test]
fn missing_and_mistyped_keys_are_errors() {
    assert_eq!(error("[[tools]]\ntext = \"x\"\n"), "catalog.toml:1:1: missing field `name`");
    let role = "[[prompts]]\nname = \"p\"\nmessages = [{ role = \"system\", text = \"x\" }]\n";
    assert!(error(role).starts_with("catalog.toml:3:22: unknown variant `system`"), "{}", error(role));
}

#[test]
fn json_errors_have_positions_for_syntax_only() {
    let parse_json =
        |text: &str| Catalog::parse(text, Format::Json, Path::new("catalog.json")).unwrap_err().to_string();
    assert_eq!(
        parse_json("{\"tools\": [{\"name\": \"a\",\n \"txt\": \"x\"}]}"),
        "catalog.json:2:6: unknown field `txt`, expected one of `name`, `title`, `description`, `input_schema`, `output_schema`, `annotations`, `required_scopes`, `text`, `http`, `icons`, `_meta`"
    );
    assert_eq!(parse_json("{\"tools\": [\n"), "catalog.json:2:0: EOF while parsing a list");
    assert_eq!(
        parse_json(r#"{"tools": [{"name": "a", "text": "{{b}}"}]}"#),
        r#"catalog.json: tools[0] "a": template uses undeclared argument "b" (declared: none)"#
    );
}

#[test]
fn undeclared_template_arguments_point_at_the_template() {
    let typo = GREET.replace("{{name}}", "{{nme}}");
    assert_eq!(
        error(&typo),
        r#"catalog.toml:6:1: tools[0] "greet": template uses undeclared argument "nme" (declared: name)"#
    );
    let prompt = r#"
[[prompts]]
name = "review"
arguments = [{ name = "topic" }]
messages = [
  { role = "user", text = "Review {{topic}}" },
  { role = "assistant", text = "About {{topc}}?" },
]
"#;
    assert_eq!(
        error(prompt),
        r#"catalog.toml:7:25: prompts[0] "review": template uses undeclared argument "topc" (declared: topic)"#
    );
    let template = "[[resource_templates]]\nuri_template = \"notes://{id}\"\nname = \"n\"\ntext = \"{{id}} {{rev}}\"\n";
    assert_eq!(
        error(template),
        r#"catalog.toml:4:1: resource_templates[0] "notes://{id}": template uses undeclared argument "rev" (declared: id)"#
    );
}

#[test]
fn malformed_templates_are_errors() {
    let bad = GREET.replace("{{name}}!", "{{name!");
    assert_eq!(error(&bad), r#"catalog.toml:6:1: tools[0] "greet": invalid template: `{{` at byte 7 is never closed"#);
}

#[test]
fn duplicate_keys_are_reported_on_the_second_entry() {
    let twice = format!("{GREET}{GREET}");
    assert_eq!(error(&twice), r#"catalog.toml:9:1: tools[1] "greet": duplicate name: tools[0] already declares it"#);
    let resources = "[[resources]]\nuri = \"a://x\"\nname = \"a\"\ntext = \"1\"\n\n[[resources]]\nname = \"b\"\nuri = \"a://x\"\ntext = \"2\"\n";
    assert_eq!(
        error(resources),
        r#"catalog.toml:8:1: resources[1] "a://x": duplicate uri: resources[0] already declares it"#
    );
    let templates = "resource_templates = [{ uri_template = \"a://{x}\", name = \"a\", text = \"\" }, { uri_template = \"a://{x}\", name = \"b\", text = \"\" }]\n";
    assert_eq!(
        error(templates),
        r#"catalog.toml:1:78: resource_templates[1] "a://{x}": duplicate uri_template: resource_templates[0] already declares it"#
    );
    let prompts = "[[prompts]]\nname = \"p\"\ntext = \"a\"\n[[prompts]]\nname = \"p\"\ntext = \"b\"\n";
    assert_eq!(error(prompts), r#"catalog.toml:5:1: prompts[1] "p": duplicate name: prompts[0] already declares it"#);
}

#[test]
fn input_schemas_must_be_valid_2020_12_objects() {
    let bad_type = GREET.replace(r#"{ type = "string" }"#, r#"{ type = "strin" }"#);
    let e = error(&bad_type);
    assert!(
        e.starts_with(r#"catalog.toml:5:59: tools[0] "greet": input_schema is not valid JSON Schema 2020-12: "#),
        "{e}"
    );
    let not_object = GREET.replace(r#"input_schema = { type = "object","#, r#"input_schema = { type = "array","#);
    assert_eq!(
        error(&not_object),
        r#"catalog.toml:5:1: tools[0] "greet": input_schema must have "type": "object" at its root"#
    );
    let bad_regex = GREET.replace(r#"{ type = "string" }"#, r#"{ type = "string", pattern = "(" }"#);
    let e = error(&bad_regex);
    assert!(
        e.starts_with(r#"catalog.toml:5:1: tools[0] "greet": input_schema is not valid JSON Schema 2020-12: "#),
        "{e}"
    );
    let header = GREET.replace(r#"{ type = "string" }"#, r#"{ type = "object", x-mcp-header = "X-Name" }"#);
    assert!(
        error(&header).contains("input_schema: x-mcp-header \"X-Name\" is on a property that is not"),
        "{}",
        error(&header)
    );
}

#[test]
fn tool_answers_are_exactly_one_of_text_or_http() {
    let both = GREET.replace("text = ", "http = { url = \"http://x\" }\ntext = ");
    assert_eq!(error(&both), r#"catalog.toml:2:1: tools[0] "greet": needs exactly one of `text` or `http`"#);
    assert_eq!(
        error("[[tools]]\nname = \"n\"\n"),
        r#"catalog.toml:1:1: tools[0] "n": needs exactly one of `text` or `http`"#
    );
    let structured = "[[tools]]\nname = \"n\"\noutput_schema = { type = \"object\" }\ntext = \"x\"\n";
    assert_eq!(
        error(structured),
        r#"catalog.toml:3:1: tools[0] "n": output_schema needs an http tool: a text tool returns no structuredContent"#
    );
}

#[test]
fn http_targets_are_checked_at_load() {
    let tool = |http: &str| format!("[[tools]]\nname = \"h\"\nhttp = {http}\n");
    assert_eq!(
        error(&tool(r#"{ url = "not a url" }"#)),
        r#"catalog.toml:3:10: tools[0] "h": invalid url "not a url": relative URL without a base"#
    );
    assert_eq!(
        error(&tool(r#"{ url = "ftp://x/y" }"#)),
        r#"catalog.toml:3:10: tools[0] "h": invalid url "ftp://x/y": the scheme must be http or https"#
    );
    assert_eq!(
        error(&tool(r#"{ url = "http://x", timeout_ms = 0 }"#)),
        r#"catalog.toml:3:28: tools[0] "h": timeout_ms must be between 1 and 600000"#
    );
    assert_eq!(
        error(&tool(r#"{ url = "http://x", headers = { X-Key = "${MCP_CATALOG_MISSING}" } }"#)),
        r#"catalog.toml:3:40: tools[0] "h": environment variable MCP_CATALOG_MISSING is not set"#
    );
    assert_eq!(
        error(&tool(r#"{ url = "http://x", headers = { X-Key = "${MCP_FLEET_BUS}" } }"#)),
        r#"catalog.toml:3:40: tools[0] "h": environment variable MCP_FLEET_BUS is not allowed in a catalog file (allowed: MCP_CATALOG_*)"#
    );
    assert_eq!(
        error(&tool(r#"{ url = "http://x", redirects = "any" }"#)),
        "catalog.toml:3:40: unknown variant `any`, expected `none` or `same-origin`"
    );
    assert_eq!(
        error(&tool(
            r#"{ url = "http://x", headers = { X-Caller = "v" }, forward_identity = { subject = "x-caller" } }"#
        )),
        r#"catalog.toml:3:79: tools[0] "h": invalid header "x-caller": `headers` sets it too"#
    );
    assert_eq!(
        error(&tool(r#"{ url = "http://x", forward_identity = { subject = "X-Id", tenant = "x-id" } }"#)),
        r#"catalog.toml:3:67: tools[0] "h": invalid header "x-id": it is the subject's header too"#
    );
    assert_eq!(
        error(&tool(r#"{ url = "http://x", forward_identity = { subject = "Bad Name" } }"#)),
        r#"catalog.toml:3:49: tools[0] "h": invalid header "Bad Name": not a valid header name"#
    );
    assert_eq!(
        error(&tool(r#"{ url = "http://x", headers = { "Bad Name" = "v" } }"#)),
        r#"catalog.toml:3:40: tools[0] "h": invalid header "Bad Name": not a valid header name"#
    );
    let e = error(&tool(r#"{ url = "http://x", headers = { X-Key = "a\nb" } }"#));
    assert!(e.ends_with("is not a valid header value"), "{e}");
}

#[test]
fn required_scopes_are_oauth_scope_tokens() {
    let tool = |scopes: &str| format!("[[tools]]\nname = \"s\"\nrequired_scopes = {scopes}\ntext = \"x\"\n");
    assert_eq!(
        parse(&tool(r#"["files:write", "a/b!#~"]"#)).unwrap().tools[0].required_scopes,
        ["files:write", "a/b!#~"]
    );
    assert_eq!(
        error(&tool(r#"["ok", "two words"]"#)),
        r#"catalog.toml:3:26: tools[0] "s": invalid scope "two words": a scope is printable ASCII without spaces, quotes or backslashes"#
    );
    assert!(error(&tool(r#"[""]"#)).contains(r#"invalid scope """#));
}

#[test]
fn file_resources_stay_in_the_catalogs_folder() {
    let text = "[[resources]]\nuri = \"a://r\"\nname = \"r\"\nfile = \"../../etc/passwd\"\n";
    let err = Catalog::parse_with_env(text, Format::Toml, Path::new("/etc/mcp/catalog.toml"), &env).unwrap_err();
    assert_eq!(
        err.to_string(),
        r#"/etc/mcp/catalog.toml:4:1: resources[0] "a://r": file "../../etc/passwd" is outside /etc/mcp, the folder file resources must come from (its path leaves it)"#
    );
}

#[test]
fn names_must_fit_the_mcp_name_header() {
    let bad = GREET.replace(r#"name = "greet""#, r#"name = "greet me""#);
    assert!(error(&bad).starts_with(r#"catalog.toml:3:1: tools[0] "greet me": invalid name"#));
    let long = format!("[[prompts]]\nname = \"{}\"\ntext = \"x\"\n", "p".repeat(129));
    assert!(error(&long).contains("invalid name"));
}

#[test]
fn resources_need_an_absolute_uri_and_one_source() {
    assert_eq!(
        error("[[resources]]\nuri = \"readme\"\nname = \"r\"\ntext = \"x\"\n"),
        r#"catalog.toml:2:1: resources[0] "readme": invalid uri "readme": relative URL without a base"#
    );
    assert_eq!(
        error("[[resources]]\nuri = \"a://r\"\nname = \"r\"\ntext = \"x\"\nfile = \"r.md\"\n"),
        r#"catalog.toml:1:1: resources[0] "a://r": needs exactly one of `text` or `file`"#
    );
}

#[test]
fn uri_templates_must_be_level_1() {
    assert_eq!(
        error("[[resource_templates]]\nuri_template = \"a://{id\"\nname = \"t\"\ntext = \"x\"\n"),
        r#"catalog.toml:2:1: resource_templates[0] "a://{id": invalid URI template: unbalanced braces or an empty variable"#
    );
}

#[test]
fn prompts_need_unique_arguments_and_some_message() {
    let dup = "[[prompts]]\nname = \"p\"\narguments = [{ name = \"a\" }, { name = \"a\" }]\ntext = \"{{a}}\"\n";
    assert_eq!(error(dup), r#"catalog.toml:3:30: prompts[0] "p": argument "a" is declared twice"#);
    assert_eq!(
        error("[[prompts]]\nname = \"p\"\nmessages = []\n"),
        r#"catalog.toml:3:1: prompts[0] "p": messages must not be empty"#
    );
    assert_eq!(
        error("[[prompts]]\nname = \"p\"\n"),
        r#"catalog.toml:1:1: prompts[0] "p": needs exactly one of `text` or `messages`"#
    );
}

#[test]
fn errors_carry_their_parts_for_callers() {
    let Err(CatalogError::Invalid { at, item, problem }) = parse(&GREET.replace("{{name}}", "{{x}}")) else {
        panic!("an invalid entry")
    };
    assert_eq!((at.line_col, item.list, item.index, item.key.as_str()), (Some((6, 1)), "tools", 0, "greet"));
    assert!(matches!(*problem, Problem::UndeclaredArgument { ref name, .. } if name == "x"));
}

#[test]
fn loading_checks_the_extension_and_reports_unreadable_files() {
    let e = Catalog::load("catalog.yaml").unwrap_err();
    assert_eq!(e.kind(), "format");
    let e = Catalog::load("/nonexistent/catalog.toml").unwrap_err();
    assert_eq!(e.kind(), "read");
    assert!(e.to_string().starts_with("/nonexistent/catalog.toml: cannot read the catalog file: "), "{e}");
}
