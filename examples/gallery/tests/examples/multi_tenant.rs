//! `multi_tenant`: each tenant is served its own catalog, and a change to one tenant's catalog
//! is heard on that tenant's listen streams only.

use std::time::Duration;

use http::StatusCode;
use mcp_fleet_tests::tasks::TaskClient;
use mcp_fleet_tests::{McpClient, request};
use serde_json::json;

use crate::support::{Example, listen_tools, names, tools_changed};

fn tenant(name: &str) -> Vec<(String, String)> {
    vec![("x-tenant".to_owned(), name.to_owned())]
}

#[tokio::test]
async fn a_tenants_change_reaches_its_own_streams_only() {
    let (_example, url) = Example::start(env!("CARGO_BIN_EXE_multi_tenant"), &[], &[]);
    let anonymous = McpClient::new(url.clone()).post(&request(json!(1), "tools/list", json!({}))).await;
    assert_eq!(anonymous.status, StatusCode::UNAUTHORIZED, "no tenant, no entry");

    let (a, b) = (TaskClient::new(url.clone(), Some("tenant-a")), TaskClient::new(url.clone(), Some("tenant-b")));
    let mut a_hears = listen_tools(&McpClient::new(url.clone()), &tenant("tenant-a")).await;
    let mut b_hears = listen_tools(&McpClient::new(url), &tenant("tenant-b")).await;

    let added = a.result("tools/call", json!({"name": "add_tool", "arguments": {"name": "report"}})).await;
    assert_eq!(added["content"][0]["text"], "report was added");
    tools_changed(&mut a_hears).await;
    b_hears.expect_silence(Duration::from_secs(1)).await;
    assert_eq!(names(&a.result("tools/list", json!({})).await), ["add_tool", "report"]);
    assert_eq!(names(&b.result("tools/list", json!({})).await), ["add_tool"]);
}
