//! The methods through the service, without a socket: pagination and cursors, in-band errors
//! and their codes, capability-gated methods, and a handler that panics.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

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
    let prompt =
        Prompt { name: "p".into(), arguments: vec![PromptArgument::new("who").required(true)], ..Prompt::default() };
    server.prompt(prompt, |_g| async { Ok(GetPromptResult::default()) });
    create_mcp_handler(server, HandlerOptions::default().page_size(2)).await.expect("handler")
}

/// Call `method` with `params`; the status and the JSON body.
async fn call(h: &McpHandler, method: &str, params: Value) -> (StatusCode, Value) {
    call_with(h, method, params, &[]).await
}

/// [`call`] with extra request `headers`.
async fn call_with(h: &McpHandler, method: &str, mut params: Value, headers: &[(&str, &str)]) -> (StatusCode, Value) {
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
    for (name, value) in headers {
        req = req.header(*name, *value);
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

/// A handler serving `tool` with `answer` as its result.
async fn serving(tool: Tool, answer: CallToolResult) -> McpHandler {
    let server = McpServer::builder("schemas", "1").build();
    server.tool(tool, move |_c| {
        let answer = answer.clone();
        async move { Ok(answer) }
    });
    create_mcp_handler(server, HandlerOptions::default()).await.expect("handler")
}

#[tokio::test]
async fn arguments_are_checked_against_the_whole_2020_12_schema() {
    let schema = json!({"type": "object", "$defs": {"n": {"type": "integer", "minimum": 1}},
        "properties": {"n": {"$ref": "#/$defs/n"}, "tag": {"type": "string", "pattern": "^[a-z]+$"}},
        "required": ["n"], "additionalProperties": false});
    let h = serving(Tool::new("t", "checked").input_schema(schema), CallToolResult::text("ran")).await;
    let (_, ok) = call(&h, "tools/call", json!({"name": "t", "arguments": {"n": 2, "tag": "abc"}})).await;
    assert_eq!(ok["result"]["content"][0]["text"], "ran", "{ok}");
    for (arguments, path) in
        [(json!({"n": 0}), "/n"), (json!({"n": 1, "tag": "A"}), "/tag"), (json!({"n": 1, "x": 1}), "the root")]
    {
        let (status, bad) = call(&h, "tools/call", json!({"name": "t", "arguments": arguments})).await;
        // Bad arguments stay a tool error the model can fix, not a protocol error.
        assert_eq!((status, bad["result"]["isError"].clone()), (StatusCode::OK, json!(true)), "{arguments}: {bad}");
        let text = bad["result"]["content"][0]["text"].as_str().unwrap();
        assert!(text.starts_with(&format!("Invalid arguments at {path}: ")), "{text}");
    }
}

#[tokio::test]
async fn structured_content_that_breaks_the_output_schema_is_an_internal_error_and_counted() {
    let tool = Tool::new("sum", "adds")
        .output_schema(json!({"type": "object", "properties": {"sum": {"type": "integer"}}, "required": ["sum"]}));
    let bad = CallToolResult { structured_content: Some(json!({"sum": "3"})), ..CallToolResult::text("3") };
    let h = serving(tool.clone(), bad).await;
    let (status, body) = call(&h, "tools/call", json!({"name": "sum", "arguments": {}})).await;
    assert_eq!((status, body["error"]["code"].clone()), (StatusCode::OK, json!(-32603)), "{body}");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains("outputSchema at /sum"), "names the failing path: {message}");
    assert!(h.metrics_text().contains("mcp_fleet_tool_output_invalid_total 1"), "{}", h.metrics_text());

    let good = CallToolResult { structured_content: Some(json!({"sum": 3})), ..CallToolResult::text("3") };
    let h = serving(tool.clone(), good).await;
    let (_, body) = call(&h, "tools/call", json!({"name": "sum", "arguments": {}})).await;
    assert_eq!(body["result"]["structuredContent"], json!({"sum": 3}), "{body}");

    // A missing structuredContent breaks it too; an isError result is exempt.
    let h = serving(tool.clone(), CallToolResult::text("3")).await;
    let (_, body) = call(&h, "tools/call", json!({"name": "sum", "arguments": {}})).await;
    assert_eq!(body["error"]["code"], -32603, "{body}");
    let h = serving(tool, CallToolResult::error("no sum today")).await;
    let (_, body) = call(&h, "tools/call", json!({"name": "sum", "arguments": {}})).await;
    assert_eq!(body["result"]["isError"], true, "{body}");
}

#[test]
fn a_tool_whose_schema_cannot_compile_is_refused_at_registration() {
    let server = McpServer::builder("schemas", "1").build();
    let bad = Tool::new("t", "bad").input_schema(json!({"type": "object", "properties": {"a": {"pattern": "("}}}));
    let refused = server.try_tool(bad, None, |_c| async { Ok(CallToolResult::text("x")) });
    assert!(
        matches!(&refused, Err(crate::ServerError::Definition(m)) if m.contains("inputSchema")),
        "{:?}",
        refused.err()
    );
}

#[tokio::test]
async fn identity_and_result_metadata_reach_the_wire() {
    let icon = crate::types::Icon::new("https://x.test/s.png");
    let server =
        McpServer::builder("meta", "1").title("Meta").description("d").website_url("https://x.test").icon(icon).build();
    let mut answer = CallToolResult::text("ok");
    answer.meta = Some(serde_json::Map::from_iter([("example.com/k".to_owned(), json!(1))]));
    server.tool(Tool::new("t", "a tool").title("T").meta("ui", json!({"resourceUri": "ui://t"})), move |_c| {
        let answer = answer.clone();
        async move { Ok(answer) }
    });
    let h = create_mcp_handler(server, HandlerOptions::default()).await.expect("handler");
    let (_, discovered) = call(&h, "server/discover", json!({})).await;
    let info = &discovered["result"]["_meta"]["io.modelcontextprotocol/serverInfo"];
    assert_eq!(
        (&info["title"], &info["websiteUrl"], &info["icons"][0]["src"]),
        (&json!("Meta"), &json!("https://x.test"), &json!("https://x.test/s.png"))
    );
    let (_, listed) = call(&h, "tools/list", json!({})).await;
    assert_eq!(listed["result"]["tools"][0]["_meta"]["ui"]["resourceUri"], "ui://t");
    let (_, called) = call(&h, "tools/call", json!({"name": "t", "arguments": {}})).await;
    let meta = &called["result"]["_meta"];
    assert_eq!(meta["example.com/k"], 1, "the handler's _meta is kept: {called}");
    assert_eq!(meta["io.modelcontextprotocol/serverInfo"]["name"], "meta", "beside the server's identity: {called}");
}

#[tokio::test]
async fn discover_advertises_registered_extensions_the_handlers_last() {
    let ext = |id: &str, settings: Value| crate::extensions::Extension::new(id, settings).expect("a valid extension");
    let server = McpServer::builder("ext", "1")
        .extension(ext("com.example/audit", json!({"retentionDays": 30})))
        .extension(ext("com.example/shared", json!({"from": "server"})))
        .build();
    let options = HandlerOptions::default().extension(ext("com.example/shared", json!({"from": "handler"})));
    let h = create_mcp_handler(server, options).await.expect("handler");
    let (_, discovered) = call(&h, "server/discover", json!({})).await;
    assert_eq!(
        discovered["result"]["capabilities"]["extensions"],
        json!({
            "com.example/audit": {"retentionDays": 30},
            "com.example/shared": {"from": "handler"},
            // Tasks are on by default (the memory bus has a keyspace): advertised the same way.
            "io.modelcontextprotocol/tasks": {}
        })
    );
    let options = HandlerOptions::default().tasks(crate::tasks::TaskOptions::disabled());
    let plain = create_mcp_handler(McpServer::builder("ext", "1").build(), options).await.expect("handler");
    let (_, plain) = call(&plain, "server/discover", json!({})).await;
    assert!(plain["result"]["capabilities"].get("extensions").is_none(), "none registered, none advertised: {plain}");
}

/// A server whose `count` tool says how often its handler ran, and a handler with `options`.
async fn counting(options: HandlerOptions) -> (McpServer, McpHandler, Arc<AtomicUsize>) {
    let server = McpServer::builder("intercept", "1").build();
    let runs = Arc::new(AtomicUsize::new(0));
    let counter = runs.clone();
    server.tool(Tool::new("count", "counts its runs"), move |call| {
        let n = counter.fetch_add(1, Ordering::SeqCst) + 1;
        async move {
            if call.arguments.contains_key("fail") {
                return Ok(CallToolResult::error(format!("run {n} failed")));
            }
            Ok(CallToolResult::text(format!("run {n}")))
        }
    });
    let h = create_mcp_handler(server.clone(), options).await.expect("handler");
    (server, h, runs)
}

async fn count(h: &McpHandler, arguments: Value) -> Value {
    let (_, body) = call(h, "tools/call", json!({"name": "count", "arguments": arguments})).await;
    body["result"]["content"][0]["text"].clone()
}

/// [`count`] as the principal `user` (see [`by_user_header`]).
async fn count_as(h: &McpHandler, user: &str, arguments: Value) -> Value {
    let params = json!({"name": "count", "arguments": arguments});
    let (_, body) = call_with(h, "tools/call", params, &[("x-user", user)]).await;
    body["result"]["content"][0]["text"].clone()
}

/// Options whose authenticator makes the `x-user` header the principal.
fn by_user_header() -> HandlerOptions {
    HandlerOptions::default().authenticator(|parts: &http::request::Parts| {
        let user = parts.headers.get("x-user").and_then(|v| v.to_str().ok()).unwrap_or("nobody");
        Ok(crate::Principal::new(user, None))
    })
}

/// `cacheScope` semantics for tool results (the spec's `CacheableResult`): private (or
/// unstated) results are never served across authorization contexts, public ones are shared,
/// and `ttlMs: 0` is never kept.
#[tokio::test]
async fn the_result_cache_honours_the_tools_cache_hint() {
    use crate::types::{CacheHint, CacheScope};
    let cache = Arc::new(crate::intercept::ResultCache::new(std::time::Duration::from_secs(60), 100));
    let (server, h, runs) = counting(by_user_header().intercept(cache.clone())).await;
    assert_eq!(count_as(&h, "ada", json!({})).await, "run 1");
    assert_eq!(count_as(&h, "ada", json!({})).await, "run 1", "the same caller: a hit");
    assert_eq!(count_as(&h, "bob", json!({})).await, "run 2", "unstated is private: bob never gets ada's");
    let hint = |ttl_ms, scope| CacheHint { ttl_ms, scope };
    server.batch(|e| Ok(e.set_cache_hint("count", hint(60_000, CacheScope::Private)))).await.unwrap();
    assert_eq!(count_as(&h, "ada", json!({"v": 1})).await, "run 3");
    assert_eq!(count_as(&h, "bob", json!({"v": 1})).await, "run 4", "private: one entry per caller");
    assert_eq!(count_as(&h, "bob", json!({"v": 1})).await, "run 4");
    server.batch(|e| Ok(e.set_cache_hint("count", hint(60_000, CacheScope::Public)))).await.unwrap();
    assert_eq!(count_as(&h, "ada", json!({"v": 2})).await, "run 5");
    assert_eq!(count_as(&h, "bob", json!({"v": 2})).await, "run 5", "public: one entry for everyone");
    server.batch(|e| Ok(e.set_cache_hint("count", hint(0, CacheScope::Public)))).await.unwrap();
    assert_eq!(count_as(&h, "ada", json!({"v": 3})).await, "run 6");
    assert_eq!(count_as(&h, "ada", json!({"v": 3})).await, "run 7", "ttlMs 0: never kept");
    assert_eq!(runs.load(Ordering::SeqCst), 7);
}

#[tokio::test]
async fn the_result_cache_keys_by_tool_arguments_and_catalog_revision() {
    let cache = Arc::new(crate::intercept::ResultCache::new(std::time::Duration::from_secs(60), 100));
    let (server, h, runs) = counting(HandlerOptions::default().intercept(cache.clone())).await;
    assert_eq!(count(&h, json!({"a": 1, "b": 2})).await, "run 1");
    assert_eq!(count(&h, json!({"b": 2, "a": 1})).await, "run 1", "same arguments, any key order: a hit");
    assert_eq!(count(&h, json!({"a": 2})).await, "run 2", "other arguments: a miss");
    assert_eq!(count(&h, json!({"fail": true})).await, "run 3 failed");
    assert_eq!(count(&h, json!({"fail": true})).await, "run 4 failed", "an isError result is never kept");
    assert_eq!(cache.len(), 2);
    // Any change of the tool list is a new revision: nothing cached before it is served.
    server.tool(Tool::new("other", "changes the list"), |_c| async { Ok(CallToolResult::text("x")) });
    assert_eq!(count(&h, json!({"a": 1, "b": 2})).await, "run 5", "a new revision: a miss");
    assert_eq!(count(&h, json!({"a": 1, "b": 2})).await, "run 5");
    assert_eq!(runs.load(Ordering::SeqCst), 5);
}

/// Writes its name before and after the rest of the chain; answers itself for `{"stop": …}`.
struct Tracer(&'static str, Arc<Mutex<Vec<String>>>);

impl crate::intercept::CallInterceptor for Tracer {
    fn intercept(
        &self,
        invocation: crate::intercept::ToolInvocation,
        next: crate::intercept::Next,
    ) -> futures_util::future::BoxFuture<'static, crate::intercept::CallAnswer> {
        let (name, log) = (self.0, self.1.clone());
        log.lock().unwrap().push(format!("{name} before {}", invocation.tool));
        if invocation.call.arguments.get("stop").and_then(Value::as_str) == Some(name) {
            return Box::pin(async move { Ok(CallToolResult::text(format!("stopped by {name}")).into()) });
        }
        Box::pin(async move {
            let answer = next.run(invocation).await;
            log.lock().unwrap().push(format!("{name} after"));
            answer
        })
    }
}

#[tokio::test]
async fn interceptors_run_in_registration_order_and_may_answer_themselves() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let options =
        HandlerOptions::default().intercept(Tracer("outer", log.clone())).intercept(Tracer("inner", log.clone()));
    let (_, h, runs) = counting(options).await;
    assert_eq!(count(&h, json!({})).await, "run 1");
    assert_eq!(*log.lock().unwrap(), ["outer before count", "inner before count", "inner after", "outer after"]);
    log.lock().unwrap().clear();
    assert_eq!(count(&h, json!({"stop": "inner"})).await, "stopped by inner");
    assert_eq!(*log.lock().unwrap(), ["outer before count", "inner before count", "outer after"]);
    assert_eq!(runs.load(Ordering::SeqCst), 1, "the handler did not run the second time");
}
