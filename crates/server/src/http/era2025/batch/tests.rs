//! 2025-03-26 batches through the whole legacy POST path, as a property: any batch a client
//! sends in a session gets a typed answer — never a server error, never a hang — and the
//! answer matches what the protocol parser makes of it: a refusal with `-32600`, a 202 for a
//! batch without requests, or one JSON array answering every request, in order, by its id.
//! One handler and one session for all cases (256; `PROPTEST_CASES` raises it).

use std::time::Duration;

use bytes::Bytes;
use http::{Request, StatusCode};
use http_body_util::{BodyExt, Full};
use mcp_fleet_protocol::legacy::parse_body;
use proptest::prelude::*;
use proptest::test_runner::{TestCaseError, TestRunner};
use serde_json::{Value, json};

use crate::types::{CallToolResult, Tool};
use crate::{HandlerOptions, McpHandler, McpServer, create_mcp_handler};

async fn post(h: &McpHandler, session: Option<&str>, body: &Value) -> (StatusCode, Option<String>, Bytes) {
    let mut req = Request::post("/mcp")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream");
    if let Some(id) = session {
        req = req.header("mcp-session-id", id);
    }
    let req = req.body(Full::new(Bytes::from(body.to_string()))).expect("a request");
    let (parts, body) = h.handle(req).await.into_parts();
    let session = parts.headers.get("mcp-session-id").and_then(|v| v.to_str().ok()).map(str::to_owned);
    (parts.status, session, body.collect().await.expect("a body").to_bytes())
}

/// One batch element: a request (real methods and made-up ones), a notification, a response
/// to a request nobody made, or junk.
fn element() -> impl Strategy<Value = Value> {
    let id = prop_oneof![any::<i64>().prop_map(|n| json!(n)), "[a-z0-9]{0,6}".prop_map(|s| json!(s))];
    let method = prop::sample::select(vec![
        "ping",
        "tools/list",
        "tools/call",
        "prompts/list",
        "resources/list",
        "resources/read",
        "resources/subscribe",
        "completion/complete",
        "logging/setLevel",
        "initialize",
        "tasks/get",
        "no/such",
        "",
    ]);
    let params = prop_oneof![
        Just(json!({})),
        Just(json!({"name": "hi", "arguments": {}})),
        Just(json!({"uri": "x://y"})),
        Just(json!([1])),
        Just(Value::Null),
    ];
    prop_oneof![
        4 => (id.clone(), method.clone(), params.clone())
            .prop_map(|(id, m, p)| json!({"jsonrpc": "2.0", "id": id, "method": m, "params": p})),
        2 => (method, params).prop_map(|(m, p)| json!({"jsonrpc": "2.0", "method": m, "params": p})),
        1 => id.clone().prop_map(|id| json!({"jsonrpc": "2.0", "id": id, "result": {}})),
        1 => prop_oneof![
            Just(json!(1)),
            Just(json!({"jsonrpc": "1.0", "id": 1, "method": "ping"})),
            Just(json!({"id": 1.5, "method": "ping", "jsonrpc": "2.0"})),
            Just(json!({"jsonrpc": "2.0", "id": 1, "result": {}, "error": {}})),
            Just(json!([])),
        ],
    ]
}

fn check(status: StatusCode, answer: &[u8], batch: &Value) -> Result<(), TestCaseError> {
    let text = String::from_utf8_lossy(answer);
    let expected = parse_body(batch.clone(), "2025-03-26");
    match expected {
        Err(rejection) => {
            prop_assert_eq!(status, StatusCode::BAD_REQUEST, "{}", text);
            let error: Value = serde_json::from_slice(answer).map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert_eq!(&error["error"]["code"], &json!(rejection.error.code.code()), "{}", text);
        }
        Ok(parsed) => {
            let ids: Vec<Value> = parsed.requests().map(|(id, _, _)| id.to_value()).collect();
            if ids.is_empty() {
                prop_assert!(matches!(status, StatusCode::ACCEPTED | StatusCode::BAD_REQUEST), "{} {}", status, text);
            } else {
                prop_assert_eq!(status, StatusCode::OK, "{}", text);
                let answers: Vec<Value> =
                    serde_json::from_slice(answer).map_err(|e| TestCaseError::fail(e.to_string()))?;
                let answered: Vec<Value> = answers.iter().map(|a| a["id"].clone()).collect();
                prop_assert_eq!(answered, ids, "every request answered, in order: {}", text);
                for a in &answers {
                    prop_assert_eq!(&a["jsonrpc"], &json!("2.0"));
                    prop_assert!(a.get("result").is_some() != a.get("error").is_some(), "{}", a);
                }
            }
        }
    }
    Ok(())
}

#[test]
fn any_batch_in_a_session_gets_a_typed_answer() {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime");
    let (h, session) = runtime.block_on(async {
        let server = McpServer::builder("unit", "0.1.0").build();
        server.tool(Tool::new("hi", "Says hi"), |_c| async { Ok(CallToolResult::text("hi")) });
        let h = create_mcp_handler(server, HandlerOptions::default()).await.expect("a handler");
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "p", "version": "1"}}});
        let (status, session, body) = post(&h, None, &init).await;
        assert_eq!(status, StatusCode::OK, "{}", String::from_utf8_lossy(&body));
        (h, session.expect("a 2025-03-26 session"))
    });
    let batches = prop::collection::vec(element(), 1..8).prop_map(Value::Array);
    let mut runner = TestRunner::default();
    let outcome = runner.run(&batches, |batch| {
        let answer = runtime
            .block_on(async { tokio::time::timeout(Duration::from_secs(10), post(&h, Some(&session), &batch)).await });
        let (status, _, body) = answer.map_err(|_| TestCaseError::fail(format!("no answer in 10 s to {batch}")))?;
        check(status, &body, &batch)
    });
    if let Err(e) = outcome {
        panic!("{e}");
    }
}
