//! Resource fixtures: two static resources of each content kind, one to watch, and a template.
//! Unknown URIs need no code: the framework answers `-32602` with `data.uri` (RSRC-5).

use mcp_fleet_server::types::{Resource, ResourceContents, ResourceTemplate};
use mcp_fleet_server::{McpServer, ServerError};
use serde_json::{Value, json};

use crate::PNG_BASE64;

pub(crate) fn register(server: &McpServer) -> Result<(), ServerError> {
    // The suite's caching scenario reads the first listed resource: keep this one first.
    let text = Resource::new("test://static-text", "Static text", "A static text resource", "text/plain");
    server.resource(text, |read| async move {
        Ok(vec![ResourceContents::text(read.uri, "text/plain", "This is the content of the static text resource.")])
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

    let template = ResourceTemplate {
        uri_template: "test://template/{id}/data".into(),
        name: "Template data".into(),
        description: Some("JSON data for any id".into()),
        mime_type: Some("application/json".into()),
    };
    server.resource_template(template, |read| async move {
        let id = read.variables.get("id").and_then(Value::as_str).unwrap_or_default().to_owned();
        let data = json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")});
        Ok(vec![ResourceContents::text(read.uri, "application/json", data.to_string())])
    })?;
    Ok(())
}
