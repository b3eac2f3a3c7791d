//! `apply` against a real `McpServer`: the file's entries answer through the MCP endpoint,
//! and applying replaces the whole catalog and says what changed.

#![allow(clippy::unwrap_used)] // in a test, a panic at the failing line is the report we want

mod common;

use std::path::Path;

use common::{call_tool, handler, keys, rpc};
use mcp_fleet_catalog_file::{Applied, Catalog, Change, Format, apply};
use mcp_fleet_server::types::{CallToolResult, Resource, Tool};
use mcp_fleet_server::{McpServer, catalog::ListKind};
use serde_json::json;

const GREET: &str = r#"
[[tools]]
name = "greet"
description = "Greets someone"
input_schema = { type = "object", properties = { name = { type = "string" } }, required = ["name"] }
text = "Hello, {{name}}!"
"#;

fn catalog(text: &str, origin: &Path) -> Catalog {
    Catalog::parse(text, Format::Toml, origin).expect("a valid catalog")
}

#[tokio::test]
async fn the_greet_tool_answers_through_the_endpoint() {
    let server = McpServer::builder("catalog-test", "0.1.0").build();
    apply(&server, &catalog(GREET, Path::new("catalog.toml"))).await.unwrap();
    let h = handler(server).await;
    let result = call_tool(&h, "greet", json!({"name": "Ada"})).await;
    assert_eq!(result["content"], json!([{"type": "text", "text": "Hello, Ada!"}]));
    assert_eq!(result.get("isError"), None);

    let listed = rpc(&h, "tools/list", None, json!({})).await;
    assert_eq!(listed["result"]["tools"][0]["inputSchema"]["required"], json!(["name"]));
    let missing = rpc(&h, "tools/call", Some("greet"), json!({"name": "greet", "arguments": {}})).await;
    assert_eq!(missing["result"]["isError"], true, "the server checks required arguments: {missing}");
    assert_eq!(
        missing["result"]["content"][0]["text"],
        "Invalid arguments at the root: \"name\" is a required property"
    );
}

#[tokio::test]
async fn apply_replaces_the_whole_catalog_and_reports_the_changes() {
    let server = McpServer::builder("catalog-test", "0.1.0").build();
    server.tool(Tool::new("from-code", "Registered in code"), |_c| async { Ok(CallToolResult::text("code")) });
    server.resource(Resource::new("code://r", "r", "from code", "text/plain"), |r| async move {
        Ok(vec![mcp_fleet_server::types::ResourceContents::text(r.uri, "text/plain", "x")])
    });
    let first = apply(&server, &catalog(GREET, Path::new("catalog.toml"))).await.unwrap();
    assert_eq!(first.tools, Change { added: 1, removed: 1, replaced: 0 });
    assert_eq!(first.resources, Change { added: 0, removed: 1, replaced: 0 });
    assert_eq!(keys(&server, ListKind::Tools).await, ["greet"]);
    assert!(keys(&server, ListKind::Resources).await.is_empty());

    let next = format!("{GREET}\n[[tools]]\nname = \"bye\"\ntext = \"Bye!\"\n");
    let second = apply(&server, &catalog(&next, Path::new("catalog.toml"))).await.unwrap();
    assert_eq!(second, Applied { tools: Change { added: 1, removed: 0, replaced: 1 }, ..Applied::default() });
    assert_eq!(keys(&server, ListKind::Tools).await, ["greet", "bye"]);
    assert_eq!(second.to_string(), "tools +1 -0 ~1, resources +0 -0 ~0, resource_templates +0 -0 ~0, prompts +0 -0 ~0");
}

#[tokio::test]
async fn resources_templates_and_prompts_answer() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("runbook.md"), "v1").unwrap();
    let text = r#"
[[resources]]
uri = "notes://inline"
name = "inline"
text = "inline text"

[[resources]]
uri = "notes://runbook"
name = "runbook"
mime_type = "text/markdown"
file = "runbook.md"

[[resource_templates]]
uri_template = "notes://{id}/rev/{rev}"
name = "note"
text = "note {{id}} at {{rev}}"

[[prompts]]
name = "review"
description = "Reviews a topic"
arguments = [{ name = "topic", required = true }, { name = "tone" }]
messages = [{ role = "user", text = "Review {{topic}} {{tone}}" }, { role = "assistant", text = "Reviewing {{topic}}." }]
"#;
    let server = McpServer::builder("catalog-test", "0.1.0").build();
    apply(&server, &catalog(text, &dir.path().join("catalog.toml"))).await.unwrap();
    let h = handler(server).await;
    let read = |uri: &'static str| {
        let h = h.clone();
        async move { rpc(&h, "resources/read", Some(uri), json!({"uri": uri})).await }
    };

    let inline = read("notes://inline").await;
    assert_eq!(
        inline["result"]["contents"][0],
        json!({"uri": "notes://inline", "mimeType": "text/plain", "text": "inline text"})
    );
    assert_eq!(read("notes://runbook").await["result"]["contents"][0]["text"], "v1");
    std::fs::write(dir.path().join("runbook.md"), "v2").unwrap();
    assert_eq!(read("notes://runbook").await["result"]["contents"][0]["text"], "v2", "read at each request");
    std::fs::remove_file(dir.path().join("runbook.md")).unwrap();
    let gone = read("notes://runbook").await;
    assert_eq!(gone["error"]["code"], -32603, "{gone}");
    assert!(gone["error"]["message"].as_str().unwrap().contains("notes://runbook"), "{gone}");

    let note = read("notes://42/rev/7").await;
    assert_eq!(note["result"]["contents"][0]["text"], "note 42 at 7");

    let prompt =
        rpc(&h, "prompts/get", Some("review"), json!({"name": "review", "arguments": {"topic": "PR 9"}})).await;
    assert_eq!(prompt["result"]["description"], "Reviews a topic");
    assert_eq!(
        prompt["result"]["messages"],
        json!([
            {"role": "user", "content": {"type": "text", "text": "Review PR 9 "}},
            {"role": "assistant", "content": {"type": "text", "text": "Reviewing PR 9."}}
        ])
    );
    let no_tools = rpc(&h, "tools/call", Some("greet"), json!({"name": "greet", "arguments": {}})).await;
    assert!(no_tools.get("error").is_some(), "the file has no tools, so none is served: {no_tools}");
}

/// Titles (prompt arguments' too), icons, `_meta` (resource contents' too), resource size and
/// annotations: declared in the file, on the wire exactly (camelCase keys, `_meta` untouched).
#[tokio::test]
async fn display_metadata_round_trips_from_the_file_to_the_lists() {
    let text = r#"
[[tools]]
name = "app"
description = "Opens a UI"
text = "ok"
icons = [{ src = "https://x.test/app.png", mime_type = "image/png", sizes = ["48x48"], theme = "dark" }]
_meta = { ui = { resourceUri = "ui://app/view" } }

[[resources]]
uri = "docs://readme"
name = "readme"
title = "Read me"
size = 42
annotations = { audience = ["user"], priority = 0.5, last_modified = "2026-01-12T15:00:58Z" }
icons = [{ src = "data:image/png;base64,AA==" }]
_meta = { k = 1 }
contents_meta = { ui = { prefersBorder = true } }
text = "hi"

[[resource_templates]]
uri_template = "notes://{id}"
name = "note"
title = "A note"
annotations = { audience = ["assistant"] }
icons = [{ src = "https://x.test/note.svg", sizes = ["any"] }]
_meta = { k = 2 }
contents_meta = { k = 4 }
text = "note {{id}}"

[[prompts]]
name = "ask"
title = "Ask"
description = "Asks"
icons = [{ src = "https://x.test/ask.png", theme = "light" }]
_meta = { k = 3 }
arguments = [{ name = "topic", title = "Topic", required = true }]
text = "Question about {{topic}}?"
"#;
    let server = McpServer::builder("catalog-test", "0.1.0").build();
    apply(&server, &catalog(text, Path::new("catalog.toml"))).await.unwrap();
    let h = handler(server).await;
    let tool = &rpc(&h, "tools/list", None, json!({})).await["result"]["tools"][0];
    assert_eq!(
        tool["icons"],
        json!([{"src": "https://x.test/app.png", "mimeType": "image/png", "sizes": ["48x48"], "theme": "dark"}])
    );
    assert_eq!(tool["_meta"], json!({"ui": {"resourceUri": "ui://app/view"}}));
    let resource = &rpc(&h, "resources/list", None, json!({})).await["result"]["resources"][0];
    assert_eq!(
        (&resource["title"], &resource["size"], &resource["_meta"], &resource["icons"][0]["src"]),
        (&json!("Read me"), &json!(42), &json!({"k": 1}), &json!("data:image/png;base64,AA=="))
    );
    assert_eq!(
        resource["annotations"],
        json!({"audience": ["user"], "priority": 0.5, "lastModified": "2026-01-12T15:00:58Z"})
    );
    let template = &rpc(&h, "resources/templates/list", None, json!({})).await["result"]["resourceTemplates"][0];
    assert_eq!(
        (&template["title"], &template["annotations"], &template["icons"][0]["sizes"], &template["_meta"]),
        (&json!("A note"), &json!({"audience": ["assistant"]}), &json!(["any"]), &json!({"k": 2}))
    );
    let prompt = &rpc(&h, "prompts/list", None, json!({})).await["result"]["prompts"][0];
    assert_eq!(
        (&prompt["title"], &prompt["icons"][0]["theme"], &prompt["_meta"]),
        (&json!("Ask"), &json!("light"), &json!({"k": 3}))
    );
    assert_eq!(prompt["arguments"], json!([{"name": "topic", "title": "Topic", "required": true}]));
    let read = rpc(&h, "resources/read", Some("docs://readme"), json!({"uri": "docs://readme"})).await;
    assert_eq!(read["result"]["contents"][0]["_meta"], json!({"ui": {"prefersBorder": true}}), "{read}");
    let note = rpc(&h, "resources/read", Some("notes://7"), json!({"uri": "notes://7"})).await;
    assert_eq!(note["result"]["contents"][0]["_meta"], json!({"k": 4}), "{note}");
}

#[test]
fn an_icon_must_be_https_or_data_and_a_priority_within_0_to_1() {
    let cases = [
        (
            "[[tools]]\nname = \"t\"\ntext = \"x\"\nicons = [{ src = \"http://x.test/i.png\" }]\n",
            r#"icon src "http://x.test/i.png" must be an https: or data: URI"#,
        ),
        (
            "[[resources]]\nuri = \"a://b\"\nname = \"b\"\ntext = \"x\"\nannotations = { priority = 2.0 }\n",
            "priority 2 must be between 0 and 1",
        ),
    ];
    for (text, problem) in cases {
        let err = Catalog::parse(text, Format::Toml, Path::new("catalog.toml")).unwrap_err();
        assert!(err.to_string().ends_with(problem), "{err}");
    }
}
