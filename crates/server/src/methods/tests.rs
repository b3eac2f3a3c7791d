//! The methods through the service, without a socket: pagination and cursors, in-band errors
//! and their codes, capability-gated methods, and a handler that panics.

use bytes::Bytes;
use http::{Request, StatusCode};
use http_body_util::{BodyExt, Full};
use serde_json::{Value, json};

use crate::types::{CallToolResult, GetPromptResult, Prompt, PromptArgument, Tool};
use crate::{HandlerOptions, McpHandler, McpServer, create_mcp_handler};

async fn handler() -> McpHandler {
    let server = McpServer::builder("unit", "1").build();
    for name in ["a", "b", "c"] {
        server.tool(Tool::new(name, "a tool"), |_c| async { Ok(CallToolResult::text("ok")) });
    }
    server.tool(Tool::new("boom", "panics"), |_c| async {
        if true {
            panic!("handler bug");
        }
        Ok(CallToolResult::text("unreachable"))
    });
    let prompt = Prompt {
        name: "p".into(),
        description: None,
        arguments: vec![PromptArgument { name: "who".into(), description: None, required: true }],
    };
    server.prompt(prompt, |_g| async { Ok(GetPromptResult { description: None, messages: Vec::new() }) });
    create_mcp_handler(server, HandlerOptions::default().page_size(2)).await.expect("handler")
}

/// Call `method` with `params`; the status and the JSON body.
async fn call(h: &McpHandler, method: &str, mut params: Value) -> (StatusCode, Value) {
    params["_meta"] = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}});
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let mut req = Request::post("/mcp")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method);
    if let Some(name) = body["params"]["name"].as_str().or(body["params"]["uri"].as_str()) {
        req = req.header("mcp-name", name);
    }
    let resp = h.handle(req.body(Full::new(Bytes::from(body.to_string()))).unwrap()).await;
    let status = resp.status();
    let bytes = resp.into_body().collect().await.unwrap().to_bytes();
    (status, serde_json::from_slice(&bytes).unwrap())
}

#[tokio::test]
async fn lists_page_in_registration_order_and_cursors_carry_on() {
    let h = handler().await;
    let (_, first) = call(&h, "tools/list", json!({})).await;
    let names = |page: &Value| {
        page["result"]["tools"].as_array().unwrap().iter().map(|t| t["name"].clone()).collect::<Vec<_>>()
    };
    assert_eq!(names(&first), [json!("a"), json!("b")]);
    let cursor = first["result"]["nextCursor"].clone();
    let (_, second) = call(&h, "tools/list", json!({"cursor": cursor})).await;
    assert_eq!(names(&second), [json!("c"), json!("boom")]);
    assert!(second["result"].get("nextCursor").is_none());
    let (status, bad) = call(&h, "tools/list", json!({"cursor": 7})).await;
    assert_eq!((status, bad["error"]["code"].clone()), (StatusCode::OK, json!(-32602)), "in-band");
}

#[tokio::test]
async fn unknown_names_and_missing_arguments_are_in_band_invalid_params() {
    let h = handler().await;
    for (method, params) in [
        ("tools/call", json!({"name": "nope"})),
        ("prompts/get", json!({"name": "p"})),
        ("resources/read", json!({"uri": "nope://x"})),
    ] {
        let (status, body) = call(&h, method, params).await;
        assert_eq!((status, body["error"]["code"].clone()), (StatusCode::OK, json!(-32602)), "{method}: {body}");
    }
}

#[tokio::test]
async fn a_method_the_server_does_not_advertise_is_not_found() {
    let h = handler().await;
    let (status, body) = call(&h, "completion/complete", json!({})).await;
    assert_eq!((status, body["error"]["code"].clone()), (StatusCode::NOT_FOUND, json!(-32601)));
}

#[tokio::test]
async fn a_handler_that_panics_is_an_in_band_internal_error_and_the_server_goes_on() {
    let h = handler().await;
    let (status, body) = call(&h, "tools/call", json!({"name": "boom"})).await;
    assert_eq!((status, body["error"]["code"].clone()), (StatusCode::OK, json!(-32603)), "{body}");
    let (_, ok) = call(&h, "tools/call", json!({"name": "a"})).await;
    assert_eq!(ok["result"]["content"][0]["text"], "ok");
}
