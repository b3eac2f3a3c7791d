//! `deploy/catalog.example.toml` is a valid catalog that shows every feature, and what it
//! declares answers through a real server.

#![allow(clippy::unwrap_used)] // in a test, a panic at the failing line is the report we want

mod common;

use std::path::PathBuf;

use common::{call_tool, first_text, handler, rpc};
use mcp_fleet_catalog_file::{Catalog, Format, apply};
use mcp_fleet_server::McpServer;
use serde_json::json;

fn example_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../deploy/catalog.example.toml")
}

fn example() -> Catalog {
    let path = example_path();
    let text = std::fs::read_to_string(&path).expect("the example file");
    let env = |name: &str| (name == "MCP_CATALOG_WEATHER_TOKEN").then(|| "example-token".to_owned());
    Catalog::parse_with_env(&text, Format::Toml, &path, &env).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn the_example_file_loads_and_shows_every_kind() {
    let catalog = example();
    let tools: Vec<&str> = catalog.tools().map(|t| t.name.as_str()).collect();
    let resources: Vec<&str> = catalog.resources().map(|r| r.uri.as_str()).collect();
    let templates: Vec<&str> = catalog.resource_templates().map(|t| t.uri_template.as_str()).collect();
    let prompts: Vec<&str> = catalog.prompts().map(|p| p.name.as_str()).collect();
    assert_eq!(tools, ["greet", "purge-cache", "weather"]);
    assert_eq!(resources, ["docs://fleet/about", "docs://fleet/runbook"]);
    assert_eq!(templates, ["notes://{team}/{id}"]);
    assert_eq!(prompts, ["summarize", "code-review"]);
}

#[test]
fn the_example_needs_its_env_var() {
    let path = example_path();
    let text = std::fs::read_to_string(&path).unwrap();
    let err = Catalog::parse_with_env(&text, Format::Toml, &path, &|_: &str| None).unwrap_err();
    assert!(
        err.to_string().ends_with(r#"tools[2] "weather": environment variable MCP_CATALOG_WEATHER_TOKEN is not set"#),
        "{err}"
    );
}

#[tokio::test]
async fn the_example_answers() {
    let server = McpServer::builder("catalog-test", "0.1.0").build();
    apply(&server, &example()).await.unwrap();
    let h = handler(server).await;
    assert_eq!(first_text(&call_tool(&h, "greet", json!({"name": "Ada"})).await), "Hello, Ada!");
    let listed = rpc(&h, "tools/list", None, json!({})).await;
    let names: Vec<&str> =
        listed["result"]["tools"].as_array().unwrap().iter().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(names, ["greet", "weather"], "purge-cache needs a scope nobody holds without OAuth");
    let note = rpc(&h, "resources/read", Some("notes://infra/7"), json!({"uri": "notes://infra/7"})).await;
    assert_eq!(note["result"]["contents"][0]["text"], "# Note 7\n\nOwned by team infra.");
    let prompt =
        rpc(&h, "prompts/get", Some("summarize"), json!({"name": "summarize", "arguments": {"topic": "MCP"}})).await;
    assert_eq!(prompt["result"]["messages"][0]["content"]["text"], "Summarize MCP. Keep it .");
}

/// The TOML block under `marker` in a YAML file (a literal block scalar `|`, indented).
fn yaml_block(path: &str, marker: &str) -> String {
    let full = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..").join(path);
    let yaml = std::fs::read_to_string(&full).unwrap_or_else(|e| panic!("{path}: {e}"));
    let mut lines = yaml.lines().skip_while(|l| l.trim() != marker).skip(1).peekable();
    let indent = lines.peek().map(|l| l.len() - l.trim_start().len()).expect("a block under the marker");
    lines
        .take_while(|l| l.trim().is_empty() || l.len() - l.trim_start().len() >= indent)
        .map(|l| l.get(indent..).unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn the_catalogs_shipped_in_the_manifests_and_the_chart_are_valid() {
    for (path, marker) in [
        ("deploy/kubernetes/catalog/catalog-configmap.yaml", "catalog.toml: |"),
        ("helm/mcp-fleet/ci/catalog-configmap-values.yaml", "content: |"),
        ("deploy/local/catalog.toml", ""),
    ] {
        let text = if marker.is_empty() {
            std::fs::read_to_string(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..").join(path)).unwrap()
        } else {
            yaml_block(path, marker)
        };
        let catalog = Catalog::parse(&text, Format::Toml, path.as_ref()).unwrap_or_else(|e| panic!("{e}"));
        assert!(catalog.tools().count() >= 1, "{path} declares a tool");
    }
}
