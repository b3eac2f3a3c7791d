//! MRTR `requestState` is always signed, over HTTP: without a configured key each node signs
//! with a per-process key, so a forged state is refused and a retry on another replica gets a
//! `-32602` naming the missing shared key; a key ring (current + previous) lets replicas rotate
//! without refusing the state minted before.

use http::StatusCode;
use mcp_fleet_protocol::RpcError;
use mcp_fleet_server::types::{CallToolResult, Tool};
use mcp_fleet_server::{HandlerOptions, InputRequired, Outcome};
use mcp_fleet_tests::{McpClient, TestNode, request, test_server};
use serde_json::{Value, json};

const OLD_KEY: &[u8] = b"the previous requestState key, 32+ bytes";
const NEW_KEY: &[u8] = b"the current requestState key, also 32+ bytes";

/// A node whose `confirm` tool asks for confirmation through `requestState` first and, on the
/// retry, echoes the verified state.
async fn node(options: HandlerOptions) -> TestNode {
    let server = test_server();
    server.tool(Tool::new("confirm", "Asks first"), |call| async move {
        let Some(state) = call.ctx.request_state else {
            return Ok::<_, RpcError>(Outcome::InputRequired(InputRequired::new().state(json!({"step": 1}))));
        };
        Ok(Outcome::Complete(CallToolResult::text(format!("confirmed {state}"))))
    });
    TestNode::start(server, options).await
}

fn confirm(state: Option<&Value>) -> Value {
    let mut params = json!({"name": "confirm", "arguments": {}});
    if let Some(state) = state {
        params["requestState"] = state.clone();
    }
    request(json!("c"), "tools/call", params)
}

/// The state a first call to `node` mints.
async fn minted(node: &TestNode) -> Value {
    let first = McpClient::new(node.url()).post(&confirm(None)).await.json();
    assert_eq!(first["result"]["resultType"], "input_required", "{first}");
    first["result"]["requestState"].clone()
}

/// The JSON-RPC error of a retry with `state` on `node` (in-band, HTTP 200).
async fn refusal(node: &TestNode, state: &Value) -> Value {
    let reply = McpClient::new(node.url()).post(&confirm(Some(state))).await;
    assert_eq!(reply.status, StatusCode::OK, "in-band");
    let body = reply.json();
    assert_eq!(body["error"]["code"], -32602, "{body}");
    assert_eq!(body["error"]["data"]["reason"], "invalid_request_state", "{body}");
    body["error"].clone()
}

async fn completes(node: &TestNode, state: &Value) {
    let done = McpClient::new(node.url()).post(&confirm(Some(state))).await.json();
    assert_eq!(done["result"]["content"][0]["text"], "confirmed {\"step\":1}", "{done}");
}

#[tokio::test]
async fn without_a_key_state_is_signed_per_process_and_another_replica_names_the_missing_key() {
    let (a, b) = (node(HandlerOptions::default()).await, node(HandlerOptions::default()).await);
    let state = minted(&a).await;
    let token = state.as_str().expect("a token");
    assert!(token.starts_with("v2.ephemeral-"), "signed, naming its key: {token}");
    // Forged or raw state is refused even though no key was configured.
    for forged in [json!("forged"), json!({"step": 1}), json!(format!("{token}x"))] {
        let error = refusal(&a, &forged).await;
        assert_eq!(error["message"], "Invalid or expired requestState", "{forged}");
    }
    // Another replica (its own per-process key) says why, naming the key the token names.
    let error = refusal(&b, &state).await;
    let kid = token.split('.').nth(1).unwrap();
    assert_eq!(error["data"]["unknownKeyId"], kid, "{error}");
    let message = error["message"].as_str().unwrap();
    assert!(message.contains(kid) && message.contains("no shared request_state_key"), "{message}");
    completes(&a, &state).await;
    a.shutdown().await;
    b.shutdown().await;
}

#[tokio::test]
async fn a_key_ring_rotates_without_refusing_the_state_minted_before() {
    let before = node(HandlerOptions::default().request_state_key(OLD_KEY)).await;
    let during = node(HandlerOptions::default().request_state_keys([NEW_KEY, OLD_KEY])).await;
    let after = node(HandlerOptions::default().request_state_keys([NEW_KEY])).await;
    let old_state = minted(&before).await;
    completes(&during, &old_state).await;
    let new_state = minted(&during).await;
    completes(&after, &new_state).await;
    // A replica not yet rotated says which key it lacks.
    let error = refusal(&before, &new_state).await;
    let new_kid = new_state.as_str().unwrap().split('.').nth(1).unwrap();
    assert_eq!(error["data"]["unknownKeyId"], new_kid);
    assert!(error["message"].as_str().unwrap().contains("same request_state_key ring"), "{error}");
    // Once the old key is dropped, its state is refused.
    assert_eq!(refusal(&after, &old_state).await["data"]["unknownKeyId"], old_state.as_str().unwrap()[3..14]);
    for node in [before, during, after] {
        node.shutdown().await;
    }
}

/// A server with the `confirm` tool (as [`node`]) and an unrelated `other` one, and their
/// handles.
fn confirming_server() -> (mcp_fleet_server::McpServer, [mcp_fleet_server::catalog::EntryHandle; 2]) {
    let server = test_server();
    let confirm = server.tool(Tool::new("confirm", "Asks first"), |call| async move {
        let Some(state) = call.ctx.request_state else {
            return Ok::<_, RpcError>(Outcome::InputRequired(InputRequired::new().state(json!({"step": 1}))));
        };
        Ok(Outcome::Complete(CallToolResult::text(format!("confirmed {state}"))))
    });
    let other = server.tool(Tool::new("other", "Unrelated"), |_call| async { Ok(CallToolResult::text("other")) });
    (server, [confirm, other])
}

#[tokio::test]
async fn state_minted_for_a_tool_edited_since_is_stale_on_every_replica_an_unrelated_edit_is_not() {
    let servers: Vec<_> = (0..3).map(|_| confirming_server()).collect();
    let mut nodes = Vec::new();
    for (server, _) in &servers {
        nodes.push(TestNode::start(server.clone(), HandlerOptions::default().request_state_key(NEW_KEY)).await);
    }
    let state = minted(&nodes[0]).await;
    // An unrelated edit on every replica: the state still completes anywhere.
    for (_, [_, other]) in &servers {
        other.update_tool(Tool::new("other", "Unrelated, reworded")).await.expect("edit other");
    }
    for node in &nodes {
        completes(node, &state).await;
    }
    // The approved tool changes (a catalog reload on every replica): stale everywhere, naming
    // both revisions.
    for (_, [confirm, _]) in &servers {
        confirm.update_tool(Tool::new("confirm", "Asks first, then deletes")).await.expect("edit confirm");
    }
    let mut currents = Vec::new();
    for node in &nodes {
        let reply = McpClient::new(node.url()).post(&confirm(Some(&state))).await;
        assert_eq!(reply.status, StatusCode::OK, "in-band");
        let body = reply.json();
        assert_eq!(body["error"]["code"], -32602, "{body}");
        let data = &body["error"]["data"];
        assert_eq!(data["reason"], "stale_request_state", "{body}");
        assert_ne!(data["mintedRevision"], data["currentRevision"], "{body}");
        assert!(data["mintedRevision"].as_str().is_some_and(|r| r.len() == 16), "{body}");
        currents.push(data["currentRevision"].clone());
    }
    assert!(currents.windows(2).all(|w| w[0] == w[1]), "replicas serving one definition agree: {currents:?}");
    // State minted for the new definition works again, on any replica.
    let fresh = minted(&nodes[1]).await;
    completes(&nodes[2], &fresh).await;
    for node in nodes {
        node.shutdown().await;
    }
}
