//! How catalog changes are announced, seen from the bus (with immediate catalog notifications,
//! which publish bus events): one event per list touched (templates are resource-list changes),
//! none for a list edited back to what it was, nothing for an edit that fails, one handler per server, and a scoped notifier that stays in
//! its scope.

use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use mcp_fleet_server::bus::{BusItem, BusStream, Change, EventKind, MemoryBus, ServerEventBus};
use mcp_fleet_server::types::{CallToolResult, Resource, ResourceContents, ResourceTemplate, Tool};
use mcp_fleet_server::{
    HandlerOptions, McpServer, ServerError, catalog::ListKind, create_mcp_handler, fleet::CatalogAnnouncePolicy,
};

/// Options whose catalog changes are bus events.
fn immediate() -> HandlerOptions {
    HandlerOptions::default().catalog_notifications(CatalogAnnouncePolicy::Immediate)
}

/// The kinds of the events on `stream` until it stays quiet for a moment.
async fn kinds_until_quiet(stream: &mut BusStream) -> Vec<EventKind> {
    let mut kinds = Vec::new();
    while let Ok(Some(item)) = tokio::time::timeout(Duration::from_millis(200), stream.next()).await {
        if let BusItem::Event(event) = item {
            kinds.push(event.kind);
        }
    }
    kinds
}

fn resource(uri: &str) -> Resource {
    Resource::new(uri, "r", "a resource", "text/plain")
}

async fn read(
    read: mcp_fleet_server::catalog::ResourceRead,
) -> Result<Vec<ResourceContents>, mcp_fleet_server::RpcError> {
    Ok(vec![ResourceContents::text(read.uri, "text/plain", "x")])
}

#[tokio::test]
async fn a_batch_touching_resources_tools_and_templates_announces_each_notification_once() {
    let bus = MemoryBus::new();
    let mut events = bus.subscribe().await.unwrap();
    let server = McpServer::builder("s", "1").build();
    let _handler = create_mcp_handler(server.clone(), immediate().bus(Arc::new(bus))).await.unwrap();
    server
        .batch(|edit| {
            edit.add_resource(resource("a://1"), read);
            edit.add_tool(Tool::new("t", "a tool"), |_c| async { Ok(CallToolResult::text("t")) })?;
            let template =
                ResourceTemplate { uri_template: "a://{id}".into(), name: "tpl".into(), ..Default::default() };
            edit.add_resource_template(template, read)
        })
        .await
        .unwrap();
    let mut kinds = kinds_until_quiet(&mut events).await;
    kinds.sort_by_key(|k| k.as_str());
    assert_eq!(kinds, [EventKind::ResourcesListChanged, EventKind::ToolsListChanged]);
}

#[tokio::test]
async fn a_batch_that_leaves_a_list_as_it_was_announces_nothing_for_it() {
    let bus = MemoryBus::new();
    let mut events = bus.subscribe().await.unwrap();
    let server = McpServer::builder("s", "1").build();
    let _handler = create_mcp_handler(server.clone(), immediate().bus(Arc::new(bus))).await.unwrap();
    let tool = || Tool::new("t", "a tool");
    let _entry = server.tool(tool(), |_c| async { Ok(CallToolResult::text("v1")) });
    assert_eq!(kinds_until_quiet(&mut events).await, [EventKind::ToolsListChanged]);
    // A reload that found the same definition (a new handler behind it) and a new resource:
    // the tools list is what it was, the resources list is not.
    server
        .batch(|edit| {
            edit.remove(ListKind::Tools, "t");
            edit.add_resource(resource("a://new"), read);
            edit.add_tool(tool(), |_c| async { Ok(CallToolResult::text("v2")) })
        })
        .await
        .unwrap();
    assert_eq!(kinds_until_quiet(&mut events).await, [EventKind::ResourcesListChanged]);
}

#[tokio::test]
async fn an_edit_that_fails_changes_and_announces_nothing() {
    let bus = MemoryBus::new();
    let mut events = bus.subscribe().await.unwrap();
    let server = McpServer::builder("s", "1").build();
    let _handler = create_mcp_handler(server.clone(), immediate().bus(Arc::new(bus))).await.unwrap();
    let failed = server
        .batch(|edit| {
            edit.add_resource(resource("a://kept-out"), read);
            let bad = Tool::new("bad", "no object schema").input_schema(serde_json::json!({"type": "string"}));
            edit.add_tool(bad, |_c| async { Ok(CallToolResult::text("never")) })
        })
        .await;
    assert!(matches!(failed, Err(ServerError::Definition(_))), "{failed:?}");
    let keys = server.batch(|edit| Ok::<_, ServerError>(edit.keys(ListKind::Resources))).await.unwrap();
    assert!(keys.is_empty(), "the resource of the failed batch was not swapped in: {keys:?}");
    assert_eq!(kinds_until_quiet(&mut events).await, []);
}

#[tokio::test]
async fn a_server_announces_through_one_handler_only() {
    let server = McpServer::builder("s", "1").build();
    let _first = create_mcp_handler(server.clone(), HandlerOptions::default()).await.unwrap();
    let second = create_mcp_handler(server, HandlerOptions::default()).await;
    assert!(matches!(second, Err(ServerError::Options(_))), "{:?}", second.err().map(|e| e.to_string()));
}

#[tokio::test]
async fn a_scoped_notifier_publishes_in_its_scope_only() {
    let handler = create_mcp_handler(McpServer::builder("s", "1").build(), HandlerOptions::default()).await.unwrap();
    let tenant = handler.notify().tenant("a");
    let event = tenant.publish(Change::list(EventKind::ToolsListChanged)).await.unwrap();
    assert_eq!(event.scope.as_deref(), Some("a"), "a change without a scope gets the notifier's");
    let other = tenant.publish(Change::list(EventKind::ToolsListChanged).in_scope("b")).await;
    assert!(matches!(other, Err(ServerError::Definition(_))), "another tenant's scope is refused");
    let same = tenant.publish(Change::resource("x://1").in_scope("a")).await.unwrap();
    assert_eq!(same.scope.as_deref(), Some("a"));
}
