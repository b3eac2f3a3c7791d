//! `deploy_events`: a tool's calls emit `deploy.finished`; polls see the services they asked for.

use mcp_fleet_tests::McpClient;
use serde_json::json;

use crate::support::{Example, call};

#[tokio::test]
async fn a_deploy_is_polled_by_the_subscriptions_watching_its_service() {
    let (_example, url) = Example::start(env!("CARGO_BIN_EXE_deploy_events"), &[], &[]);
    let client = McpClient::new(url);
    let listed = client.result("events/list", json!({})).await;
    assert_eq!(listed["events"][0]["name"], "deploy.finished");
    assert_eq!(
        listed["events"][0]["payloadSchema"]["properties"]["version"]["description"],
        "The version now running."
    );
    let watching =
        |service: &str| json!({"name": "deploy.finished", "arguments": {"service": service}, "cursor": null});
    let api = client.result("events/poll", watching("api")).await["cursor"].clone();
    let web = client.result("events/poll", watching("web")).await["cursor"].clone();

    let deployed = call(&client, "deploy", json!({"service": "api", "version": "1.4.2"})).await;
    assert!(deployed["content"][0]["text"].as_str().unwrap().starts_with("deployed api 1.4.2"), "{deployed}");
    let again = |cursor, service: &str| json!({"name": "deploy.finished", "arguments": {"service": service}, "cursor": cursor, "timeoutMs": 2000});
    let for_api = client.result("events/poll", again(api, "api")).await;
    assert_eq!(for_api["events"][0]["data"], json!({"service": "api", "version": "1.4.2"}), "{for_api}");
    let for_web = client.result("events/poll", again(web, "web")).await;
    assert_eq!(for_web["events"], json!([]), "another service's deploy is not web's: {for_web}");
}
