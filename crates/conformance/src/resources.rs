//! Resource fixtures: two static resources of each content kind, one to watch, and a template.
//! Unknown URIs need no code: the framework answers `-32602` with `data.uri` (RSRC-5).

use mcp_fleet_server::types::{Resource, ResourceContents, ResourceTemplate};
use mcp_fleet_server::{McpServer, ServerError};
use serde_json::{Value, json};

use crate::PNG_BASE64;

pub(crate) fn register(server: &McpServer) -> Result<(), ServerError> {
    // The suite's caching scenario reads the first listed resource: keep this one first.
    const BODY: &str = "This is the content of the static text resource.";
    // Title, size, annotations, icon and `_meta` (the contents' too): checked by the suite's
    // wire schema.
    let text = Resource::new("test://static-text", "Static text", "A static text resource", "text/plain")
        .title("Static text resource")
        .size(BODY.len() as u64)
        .annotations(serde_json::json!({"audience": ["user", "assistant"], "priority": 0.5}))
        .icon(crate::icon())
        .meta("example.com/fixture", serde_json::json!(true));
    server.resource(text, |read| async move {
        Ok(vec![ResourceContents::text(read.uri, "text/plain", BODY).meta("example.com/fixture", json!("contents"))])
    });
    let binary = Resource::new("test://static-binary", "Static binary", "A static 1x1 PNG image", "image/png");
    server.resource(binary, |read| async move { Ok(vec![ResourceContents::blob(read.uri, "image/png", PNG_BASE64)]) });
    let watched = Resource::new(
        "test://watched-resource",
        "Watched resource",
        "A resource whose updates listen streams can subscribe to",
        "text/plain",
    );
    server.resource(watched, |read| async move {
        Ok(vec![ResourceContents::text(read.uri, "text/plain", "This is the content of the watched resource.")])
    });

    let template =
        ResourceTemplate::new("test://template/{id}/data", "Template data", "JSON data for any id", "application/json");
    server.resource_template(template, |read| async move {
        let id = read.variables.get("id").and_then(Value::as_str).unwrap_or_default().to_owned();
        let data = json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")});
        Ok(vec![ResourceContents::text(read.uri, "application/json", data.to_string())])
    })?;
    Ok(())
}
