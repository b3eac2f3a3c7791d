//! 2025-era clients on a fleet of three nodes sharing one bus: a session opened on one node is
//! served by every node, its GET stream hears changes published anywhere, its subscriptions
//! made on another node reach that stream, an elicitation answered to another node reaches the
//! waiting call, and its end is an end everywhere; a tenant's stream shows the bus's position
//! neither in its SSE ids nor in its notifications, and still resumes anywhere; a session
//! belongs to its subject in its tenant (another's is unknown to it); a 2025-03-26
//! batch is bounded and counts as its messages against the rate limit. Wire-level probes (see
//! `mcp_fleet_tests::legacy`); the registries' SDKs run against the node binary in
//! `crates/node/tests/legacy_clients.rs`.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use http::StatusCode;
use mcp_fleet_bus::{EventEnvelope, MemoryBus, ServerEventBus};
use mcp_fleet_server::auth::{AuthError, Rate};
use mcp_fleet_server::types::{CallToolResult, Tool};
use mcp_fleet_server::{HandlerOptions, InputRequired, McpServer, Outcome, Principal, options::Era2025Options};
use mcp_fleet_tests::cluster::tenant_options;
use mcp_fleet_tests::legacy::{LegacySession, headers, initialize_body, initialize_raw};
use mcp_fleet_tests::{McpClient, TestNode, WAIT, eventually, test_server};
use serde_json::{Value, json};

/// The test catalog plus `ask` (asks the user's name by elicitation) and `slow` (30 s).
/// How many `slow` calls have started, on any node (one test calls it, so a test can wait
/// for its call to be running instead of guessing how long that takes).
static SLOW_STARTED: AtomicUsize = AtomicUsize::new(0);

fn server() -> McpServer {
    let server = test_server();
    server.tool(Tool::new("ask", "Asks for a name"), |call| async move {
        let Some(answer) = call.ctx.input_responses.as_ref().and_then(|r| r.get("name")) else {
            let schema = json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]});
            let ask = InputRequired::new().request(
                "name",
                "elicitation/create",
                json!({"message": "Your name?", "requestedSchema": schema}),
            );
            return Ok(Outcome::InputRequired(ask));
        };
        let name = answer["content"]["name"].as_str().unwrap_or("nobody").to_owned();
        Ok(Outcome::Complete(CallToolResult::text(format!("Hello, {name}!"))))
    });
    server.tool(Tool::new("chatty", "Logs while it works"), |call| async move {
        call.ctx.log(mcp_fleet_server::LogLevel::Info, Some("chatty"), json!("working")).await;
        Ok(CallToolResult::text("done"))
    });
    server.tool(Tool::new("slow", "Takes 30 s"), |_call| async move {
        SLOW_STARTED.fetch_add(1, Ordering::SeqCst);
        tokio::time::sleep(Duration::from_secs(30)).await;
        Ok(CallToolResult::text("late"))
    });
    server
}

async fn fleet(options: impl Fn() -> HandlerOptions) -> (Vec<TestNode>, Vec<McpClient>) {
    let bus = MemoryBus::new();
    let mut nodes = Vec::new();
    for i in 0..3 {
        let node_bus: Arc<dyn ServerEventBus> = Arc::new(bus.as_node(&format!("n{i}")));
        nodes.push(TestNode::start(server(), options().bus(node_bus)).await);
    }
    let clients = nodes.iter().map(|n| McpClient::new(n.url())).collect();
    (nodes, clients)
}

fn call(id: i64, name: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": name, "arguments": {}}})
}

#[tokio::test]
async fn a_session_opened_on_one_node_is_served_by_every_node_with_era_pure_results() {
    let (_nodes, c) = fleet(HandlerOptions::default).await;
    let reply = initialize_raw(&c[0], json!({}), &[]).await;
    let init = reply.json();
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25");
    assert_eq!(init["result"]["capabilities"]["resources"]["subscribe"], true);
    assert!(init["result"]["serverInfo"]["name"].is_string());
    let id = reply.headers["mcp-session-id"].to_str().unwrap();
    assert!(id.len() == 32 && id.bytes().all(|b| (0x21..=0x7e).contains(&b)), "{id}");

    let session = LegacySession::open(&c[0], json!({})).await;
    let tools = session.result(&c[1], "tools/list", json!({})).await;
    assert!(tools["tools"].as_array().is_some_and(|t| !t.is_empty()));
    for key in ["resultType", "ttlMs", "cacheScope"] {
        assert!(tools.get(key).is_none(), "{key} is not part of the 2025 schema: {tools}");
    }
    assert!(tools.pointer("/_meta/io.modelcontextprotocol~1serverInfo").is_none(), "{tools}");
    assert_eq!(session.result(&c[2], "ping", json!({})).await, json!({}));
    let text = session.result(&c[2], "tools/call", json!({"name": "echo", "arguments": {"text": "hi"}})).await;
    assert_eq!(text["content"][0]["text"], "hi");
    // An unknown resource speaks the 2025 code, in-band.
    let missing = session
        .post(&c[1], &json!({"jsonrpc": "2.0", "id": 9, "method": "resources/read", "params": {"uri": "test://nope"}}))
        .await;
    assert_eq!((missing.status, missing.error_code()), (StatusCode::OK, Some(-32002)));
    // Methods of the 2026 era are not part of this one.
    let discover = session.post(&c[0], &json!({"jsonrpc": "2.0", "id": 3, "method": "server/discover"})).await;
    assert_eq!(discover.error_code(), Some(-32601));

    let old = c[0].post_with(&json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2024-11-05", "capabilities": {}}}), &headers(None, &[])).await;
    assert_eq!(old.json()["result"]["protocolVersion"], "2025-11-25", "an unknown version gets our newest");
}

#[tokio::test]
async fn session_errors_are_http_errors_and_an_ended_session_is_unknown_everywhere() {
    let (_nodes, c) = fleet(HandlerOptions::default).await;
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"});
    assert_eq!(c[0].post_with(&ping, &headers(None, &[])).await.status, StatusCode::BAD_REQUEST);
    let unknown = "0123456789abcdef0123456789abcdef";
    assert_eq!(c[0].post_with(&ping, &headers(Some(unknown), &[])).await.status, StatusCode::NOT_FOUND);
    assert_eq!(c[0].post_with(&ping, &headers(Some("../../etc"), &[])).await.status, StatusCode::NOT_FOUND);
    let bad_version = [("mcp-protocol-version".to_owned(), "1999-01-01".to_owned())];
    let session = LegacySession::open(&c[0], json!({})).await;
    let mut h = headers(Some(&session.id), &[]);
    h.retain(|(k, _)| k != "mcp-protocol-version");
    h.extend_from_slice(&bad_version);
    assert_eq!(c[1].post_with(&ping, &h).await.status, StatusCode::BAD_REQUEST);

    let mut stream = session.stream(&c[2], None).await;
    assert_eq!(stream.status, StatusCode::OK);
    assert_eq!(session.delete(&c[1]).await, StatusCode::OK);
    for client in &c {
        assert_eq!(session.post(client, &ping).await.status, StatusCode::NOT_FOUND);
    }
    assert!(stream.next_message_within(WAIT).await.is_none(), "the ended session's stream ends");
    assert_eq!(session.delete(&c[0]).await, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn another_principals_session_is_refused_and_sessions_per_principal_are_limited() {
    let (_nodes, c) = fleet(|| tenant_options().era2025(Era2025Options::default().max_sessions_per_principal(2))).await;
    let acme = vec![("x-tenant".to_owned(), "acme".to_owned())];
    let globex = vec![("x-tenant".to_owned(), "globex".to_owned())];
    let session = LegacySession::open_with(&c[0], json!({}), acme.clone()).await;
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"});
    assert_eq!(session.post(&c[1], &ping).await.status, StatusCode::OK);
    // Answered as an unknown session: its existence is not confirmed.
    let stolen = LegacySession { id: session.id.clone(), extra: globex.clone() };
    assert_eq!(stolen.post(&c[1], &ping).await.status, StatusCode::NOT_FOUND);
    assert_eq!(stolen.stream(&c[2], None).await.status, StatusCode::NOT_FOUND);
    assert_eq!(stolen.delete(&c[2]).await, StatusCode::NOT_FOUND);

    let second = LegacySession::open_with(&c[1], json!({}), acme.clone()).await;
    let third = initialize_raw(&c[2], json!({}), &acme).await;
    assert_eq!(third.status, StatusCode::TOO_MANY_REQUESTS, "{}", String::from_utf8_lossy(&third.body));
    assert_eq!(initialize_raw(&c[2], json!({}), &globex).await.status, StatusCode::OK, "limits are per principal");
    assert_eq!(second.delete(&c[0]).await, StatusCode::OK);
    assert_eq!(initialize_raw(&c[2], json!({}), &acme).await.status, StatusCode::OK, "an ended session frees its slot");
}

#[tokio::test]
async fn a_session_that_expires_without_delete_gives_its_slot_back_and_a_used_one_keeps_it() {
    // Issue 33 item 5: the quota reached, sessions expired, `initialize` retried was refused
    // for as long as the client kept retrying.
    let ttl = Duration::from_secs(1);
    let (_nodes, c) =
        fleet(|| tenant_options().era2025(Era2025Options::default().max_sessions_per_principal(2).session_ttl(ttl)))
            .await;
    let acme = vec![("x-tenant".to_owned(), "acme".to_owned())];
    let used = LegacySession::open_with(&c[0], json!({}), acme.clone()).await;
    let _abandoned = LegacySession::open_with(&c[1], json!({}), acme.clone()).await;
    assert_eq!(initialize_raw(&c[2], json!({}), &acme).await.status, StatusCode::TOO_MANY_REQUESTS);
    // One session is used (renewed), the other never again: retry as a client would.
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"});
    let start = tokio::time::Instant::now();
    loop {
        tokio::time::sleep(ttl / 5).await;
        assert_eq!(used.post(&c[start.elapsed().as_millis() as usize % 3], &ping).await.status, StatusCode::OK);
        let retried = initialize_raw(&c[2], json!({}), &acme).await;
        if retried.status == StatusCode::OK {
            break;
        }
        assert_eq!(retried.status, StatusCode::TOO_MANY_REQUESTS);
        assert!(start.elapsed() < ttl * 4, "the abandoned session's slot never came back");
    }
    assert!(start.elapsed() + Duration::from_millis(100) >= ttl, "admitted before the abandoned session expired");
    let fourth = initialize_raw(&c[0], json!({}), &acme).await;
    assert_eq!(fourth.status, StatusCode::TOO_MANY_REQUESTS, "the used session still holds its slot");
    assert_eq!(used.post(&c[1], &ping).await.status, StatusCode::OK);
}

/// `x-sub` as the principal's id and `x-org` as its tenant: one subject across organisations,
/// as identity providers that issue per-organisation tokens do.
fn sub_and_org(parts: &http::request::Parts) -> Result<Principal, AuthError> {
    let header = |name: &str| parts.headers.get(name).and_then(|v| v.to_str().ok()).map(str::to_owned);
    let sub = header("x-sub").ok_or_else(|| AuthError::unauthenticated("Bearer realm=\"test\""))?;
    Ok(Principal::new(sub, header("x-org")))
}

#[tokio::test]
async fn a_session_belongs_to_its_subject_in_its_tenant_not_to_the_subject_alone() {
    let (_nodes, c) = fleet(|| {
        HandlerOptions::default()
            .authenticator(sub_and_org)
            .era2025(Era2025Options::default().max_sessions_per_principal(1))
    })
    .await;
    let as_user = |org: &str| vec![("x-sub".to_owned(), "u1".to_owned()), ("x-org".to_owned(), org.to_owned())];
    let session = LegacySession::open_with(&c[0], json!({}), as_user("A")).await;
    let unknown = LegacySession { id: "0".repeat(32), extra: as_user("B") };
    let other_org = LegacySession { id: session.id.clone(), extra: as_user("B") };
    for node in &c {
        let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
        let (theirs, none) = (other_org.post(node, &list).await, unknown.post(node, &list).await);
        assert_eq!(
            (theirs.status, &theirs.body),
            (StatusCode::NOT_FOUND, &none.body),
            "the same answer as an unknown id"
        );
        assert_eq!(other_org.stream(node, None).await.status, StatusCode::NOT_FOUND);
    }
    assert_eq!(other_org.delete(&c[1]).await, StatusCode::NOT_FOUND);
    // The quota counts the subject in its tenant: org B's u1 has its own session.
    let second = initialize_raw(&c[1], json!({}), &as_user("B")).await;
    assert_eq!(second.status, StatusCode::OK, "{}", String::from_utf8_lossy(&second.body));
    assert_eq!(initialize_raw(&c[2], json!({}), &as_user("A")).await.status, StatusCode::TOO_MANY_REQUESTS);
    // The owner still has it.
    assert_eq!(session.post(&c[2], &json!({"jsonrpc": "2.0", "id": 2, "method": "ping"})).await.status, StatusCode::OK);
    assert_eq!(session.delete(&c[2]).await, StatusCode::OK);
}

#[tokio::test]
async fn the_get_stream_hears_changes_published_on_any_node_and_subscriptions_made_on_any_node() {
    let (nodes, c) = fleet(HandlerOptions::default).await;
    let session = LegacySession::open(&c[0], json!({})).await;
    let mut stream = session.stream(&c[0], None).await;
    assert_eq!(stream.status, StatusCode::OK);
    assert_eq!(stream.headers["content-type"], "text/event-stream");

    nodes[2].handler.notify().tools_changed().await.unwrap();
    assert_eq!(stream.next_message().await.unwrap()["method"], "notifications/tools/list_changed");

    assert_eq!(session.result(&c[1], "resources/subscribe", json!({"uri": "test://a"})).await, json!({}));
    nodes[2].handler.notify().resource_updated("test://b").await.unwrap();
    nodes[2].handler.notify().resource_updated("test://a").await.unwrap();
    let updated = stream.next_message().await.unwrap();
    assert_eq!(
        (updated["method"].as_str(), updated["params"]["uri"].as_str()),
        (Some("notifications/resources/updated"), Some("test://a"))
    );
    assert!(updated.get("id").is_none());
    stream.expect_silence(Duration::from_millis(200)).await;

    assert_eq!(session.result(&c[2], "resources/unsubscribe", json!({"uri": "test://a"})).await, json!({}));
    nodes[1].handler.notify().resource_updated("test://a").await.unwrap();
    stream.expect_silence(Duration::from_millis(300)).await;
    assert_eq!(nodes[0].handler.open_session_streams(), 1);
}

#[tokio::test]
async fn a_stream_resumed_from_a_position_no_node_knows_starts_with_the_gap_invalidation() {
    let (_nodes, c) = fleet(HandlerOptions::default).await;
    let session = LegacySession::open(&c[0], json!({})).await;
    session.result(&c[0], "resources/subscribe", json!({"uri": "test://a"})).await;
    let mut stream = session.stream(&c[1], Some("0123456789abcdef-4")).await;
    let mut heard = Vec::new();
    for _ in 0..4 {
        let m = stream.next_message().await.unwrap();
        heard.push(format!("{} {}", m["method"].as_str().unwrap(), m["params"]["uri"].as_str().unwrap_or("")));
    }
    heard.sort();
    assert_eq!(
        heard,
        [
            "notifications/prompts/list_changed ",
            "notifications/resources/list_changed ",
            "notifications/resources/updated test://a",
            "notifications/tools/list_changed ",
        ]
    );
}

#[tokio::test]
async fn an_elicitation_answered_to_another_node_reaches_the_waiting_call() {
    let (_nodes, c) = fleet(HandlerOptions::default).await;
    let session = LegacySession::open(&c[0], json!({"elicitation": {}})).await;
    let body = serde_json::to_vec(&call(5, "ask")).unwrap();
    let resp = c[0].send_raw("POST", &headers(Some(&session.id), &[]), body).await;
    let mut sse = mcp_fleet_tests::ListenStream::from_response(resp);
    assert_eq!(sse.headers["content-type"], "text/event-stream");
    let request = sse.next_message().await.unwrap();
    assert_eq!(request["method"], "elicitation/create");
    assert_eq!(request["params"]["message"], "Your name?");
    let id = request["id"].clone();
    assert!(id.is_string(), "{request}");

    // Nobody waits for an answer with another id, nor for one from another session.
    let stray = json!({"jsonrpc": "2.0", "id": "mcpf-unknown", "result": {"action": "cancel"}});
    assert_eq!(session.post(&c[1], &stray).await.status, StatusCode::BAD_REQUEST);
    let other = LegacySession::open(&c[2], json!({})).await;
    let hijack = json!({"jsonrpc": "2.0", "id": id, "result": {"action": "accept", "content": {"name": "Mallory"}}});
    assert_eq!(other.post(&c[2], &hijack).await.status, StatusCode::BAD_REQUEST);

    let answer = json!({"jsonrpc": "2.0", "id": id, "result": {"action": "accept", "content": {"name": "Ada"}}});
    assert_eq!(session.post(&c[1], &answer).await.status, StatusCode::ACCEPTED);
    let result = sse.next_message().await.unwrap();
    assert_eq!(result["id"], 5);
    assert_eq!(result["result"]["content"][0]["text"], "Hello, Ada!");
    assert!(result["result"].get("resultType").is_none());

    // Without the capability the handler's request is refused, not sent.
    let plain = LegacySession::open(&c[1], json!({})).await;
    let refused = plain.post(&c[1], &call(6, "ask")).await;
    assert!(refused.messages().last().unwrap().get("error").is_some(), "{:?}", refused.messages());
}

#[tokio::test]
async fn a_call_cancelled_on_another_node_stops() {
    let (_nodes, c) = fleet(HandlerOptions::default).await;
    let session = LegacySession::open(&c[0], json!({})).await;
    let started = tokio::time::Instant::now();
    let before = SLOW_STARTED.load(Ordering::SeqCst);
    let running = tokio::spawn({
        let (session, client) = (session.clone(), c[0].clone());
        async move { session.post(&client, &call(11, "slow")).await }
    });
    eventually("the slow call runs on node 0", WAIT, async || SLOW_STARTED.load(Ordering::SeqCst) > before).await;
    let cancel =
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 11, "reason": "bored"}});
    assert_eq!(session.post(&c[2], &cancel).await.status, StatusCode::ACCEPTED);
    let reply = tokio::time::timeout(WAIT, running).await.expect("the call stops").unwrap();
    assert!(started.elapsed() < Duration::from_secs(10));
    assert!(reply.json().get("result").is_none(), "a cancelled call has no result");
}

#[tokio::test]
async fn progress_and_log_levels_set_on_one_node_apply_to_calls_on_another() {
    let (_nodes, c) = fleet(HandlerOptions::default).await;
    let session = LegacySession::open(&c[0], json!({})).await;
    let counted = session
        .post(&c[1], &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "counter", "_meta": {"progressToken": "p1"}}}))
        .await;
    let messages = counted.messages();
    assert_eq!(messages.iter().filter(|m| m["method"] == "notifications/progress").count(), 3, "{messages:?}");
    assert!(messages.iter().all(|m| m["params"]["progressToken"] == "p1" || m.get("result").is_some()));
    let logs = |reply: &mcp_fleet_tests::Reply| {
        reply.messages().iter().filter(|m| m["method"] == "notifications/message").count()
    };
    assert_eq!(logs(&session.post(&c[2], &call(4, "chatty")).await), 0, "no log messages before a level is set");
    assert_eq!(session.result(&c[1], "logging/setLevel", json!({"level": "debug"})).await, json!({}));
    assert_eq!(logs(&session.post(&c[2], &call(5, "chatty")).await), 1);
    assert_eq!(session.result(&c[0], "logging/setLevel", json!({"level": "error"})).await, json!({}));
    assert_eq!(logs(&session.post(&c[2], &call(6, "chatty")).await), 0, "info is below error");
    let bad = session
        .post(&c[1], &json!({"jsonrpc": "2.0", "id": 3, "method": "logging/setLevel", "params": {"level": "loud"}}))
        .await;
    assert_eq!(bad.error_code(), Some(-32602));
}

/// Open a 2025-03-26 session (the revision with batches) on `client`: the headers of its
/// requests.
async fn batch_session(client: &McpClient) -> Vec<(String, String)> {
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-03-26", "capabilities": {}}});
    let reply = client.post_with(&init, &headers(None, &[])).await;
    let id = reply.headers["mcp-session-id"].to_str().unwrap().to_owned();
    let mut h = headers(Some(&id), &[]);
    h.retain(|(k, _)| k != "mcp-protocol-version");
    h
}

fn pings(n: i64) -> Value {
    (1..=n).map(|id| json!({"jsonrpc": "2.0", "id": id, "method": "ping"})).collect()
}

#[tokio::test]
async fn batches_are_served_in_2025_03_26_only() {
    let (_nodes, c) = fleet(HandlerOptions::default).await;
    let h = batch_session(&c[0]).await;
    let batch = json!([
        {"jsonrpc": "2.0", "id": 1, "method": "ping"},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
    ]);
    let answers = c[1].post_with(&batch, &h).await.json();
    let ids: Vec<_> = answers.as_array().unwrap().iter().map(|a| a["id"].clone()).collect();
    assert_eq!(ids, [json!(1), json!(2)]);
    let modern = LegacySession::open(&c[0], json!({})).await;
    assert_eq!(modern.post(&c[1], &batch).await.status, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn a_batch_counts_as_its_messages_against_the_rate_limit() {
    let rate = Some(Rate { per_second: 1.0, burst: 1 });
    let (_nodes, c) = fleet(|| HandlerOptions::default().rate_per_principal(rate)).await;
    let h = batch_session(&c[0]).await;
    // Each replica counts its own: node 1's bucket is full (one token).
    let reply = c[1].post_with(&pings(20), &h).await;
    assert_eq!(reply.status, StatusCode::TOO_MANY_REQUESTS, "{}", String::from_utf8_lossy(&reply.body));
    assert!(reply.headers.contains_key("retry-after"));
    // One message is one request: node 2's token serves it.
    let reply = c[2].post_with(&pings(1), &h).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", String::from_utf8_lossy(&reply.body));
}

#[tokio::test]
async fn a_batch_past_the_size_limit_is_refused_before_it_is_served() {
    let (_nodes, c) = fleet(HandlerOptions::default).await;
    let h = batch_session(&c[0]).await;
    let reply = c[1].post_with(&pings(65), &h).await;
    assert_eq!((reply.status, reply.error_code()), (StatusCode::PAYLOAD_TOO_LARGE, Some(-32600)));
    let message = reply.json()["error"]["message"].as_str().unwrap().to_owned();
    assert!(message.contains("65 messages") && message.contains("limit is 64"), "{message}");
    let answers = c[1].post_with(&pings(64), &h).await.json();
    assert_eq!(answers.as_array().map(Vec::len), Some(64), "the default limit admits 64");
}

#[tokio::test]
async fn without_sessions_every_post_is_served_alone_and_get_is_not_allowed() {
    let (_nodes, c) = fleet(|| HandlerOptions::default().era2025(Era2025Options::default().sessions(false))).await;
    let reply = c[0].post_with(&initialize_body(json!({})), &headers(None, &[])).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert!(reply.headers.get("mcp-session-id").is_none());
    let tools = c[1].post_with(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}), &headers(None, &[])).await;
    assert!(tools.json()["result"]["tools"].is_array());
    let get = c[2].send_raw("GET", &[("accept".into(), "text/event-stream".into())], bytes::Bytes::new()).await;
    assert_eq!(get.status(), StatusCode::METHOD_NOT_ALLOWED);
}

#[tokio::test]
async fn a_stream_resumed_on_another_node_gets_exactly_what_it_missed() {
    let (nodes, c) = fleet(HandlerOptions::default).await;
    let session = LegacySession::open(&c[0], json!({})).await;
    let mut stream = session.stream(&c[0], None).await;
    let heard = nodes[2].handler.notify().tools_changed().await.unwrap();
    assert_eq!(stream.next_message().await.unwrap()["method"], "notifications/tools/list_changed");
    drop(stream); // the connection breaks; the client remembers the id of what it heard
    let last_event_id = format!("{}-{}", heard.epoch, heard.version);

    let missed = nodes[1].handler.notify().prompts_changed().await.unwrap();
    let mut resumed = session.stream(&c[1], Some(&last_event_id)).await;
    let replayed = resumed.next_message().await.unwrap();
    assert_eq!(replayed["method"], "notifications/prompts/list_changed", "{replayed}");
    assert_eq!(replayed["params"]["_meta"]["dev.mcp-fleet/event"]["version"], missed.version);
    resumed.expect_silence(Duration::from_millis(300)).await;
    nodes[0].handler.notify().tools_changed().await.unwrap();
    assert_eq!(resumed.next_message().await.unwrap()["method"], "notifications/tools/list_changed");
}

/// A tenant's session headers.
fn acme() -> Vec<(String, String)> {
    vec![("x-tenant".to_owned(), "acme".to_owned())]
}

/// `id` tells nothing of `event`'s place in the bus's history: not `<epoch>-<version>`, and
/// the epoch (a random number of up to 16 digits) nowhere in it.
fn assert_opaque(id: &str, event: &EventEnvelope) {
    let position = id.split_once('-').is_some_and(|(e, v)| e.parse::<u64>().is_ok() && v.parse::<u64>().is_ok());
    assert!(!position && !id.contains(&event.epoch.to_string()), "{id} shows {}-{}", event.epoch, event.version);
}

#[tokio::test]
async fn a_tenants_stream_ids_hide_the_bus_position_and_still_resume_on_another_node() {
    let (nodes, c) = fleet(|| tenant_options().request_state_key([7; 32])).await;
    let session = LegacySession::open_with(&c[0], json!({}), acme()).await;
    let mut stream = session.stream(&c[0], None).await;
    let heard = nodes[2].handler.notify().tools_changed().await.unwrap();
    let msg = stream.next_message().await.unwrap();
    assert_eq!(msg["params"]["_meta"]["dev.mcp-fleet/event"], json!({"publishedAtMs": heard.published_at_ms}));
    let last_event_id = stream.last_event_id().expect("events carry ids").to_owned();
    assert_opaque(&last_event_id, &heard);
    drop(stream); // the connection breaks; the client remembers the id of what it heard

    nodes[1].handler.notify().tenant("globex").tools_changed().await.unwrap();
    let missed = nodes[1].handler.notify().tenant("acme").prompts_changed().await.unwrap();
    let mut resumed = session.stream(&c[1], Some(&last_event_id)).await;
    let replayed = resumed.next_message().await.unwrap();
    assert_eq!(replayed["method"], "notifications/prompts/list_changed", "{replayed}");
    assert_eq!(replayed["params"]["_meta"]["dev.mcp-fleet/event"], json!({"publishedAtMs": missed.published_at_ms}));
    assert_opaque(resumed.last_event_id().expect("an id"), &missed);
    resumed.expect_silence(Duration::from_millis(300)).await;
}

#[tokio::test]
async fn a_tenants_resume_on_a_replica_without_its_key_gets_the_gap_rule() {
    // No shared requestState key: each node seals with its own per-process key.
    let (nodes, c) = fleet(tenant_options).await;
    let session = LegacySession::open_with(&c[0], json!({}), acme()).await;
    let mut stream = session.stream(&c[0], None).await;
    nodes[2].handler.notify().tools_changed().await.unwrap();
    stream.next_message().await.unwrap();
    let last_event_id = stream.last_event_id().expect("events carry ids").to_owned();
    drop(stream);

    let mut elsewhere = session.stream(&c[1], Some(&last_event_id)).await;
    let mut methods = Vec::new();
    for _ in 0..3 {
        let msg = elsewhere.next_message().await.unwrap();
        assert_eq!(msg["params"]["_meta"]["dev.mcp-fleet/event"], json!({"gap": true, "resumed": true}), "{msg}");
        methods.push(msg["method"].as_str().unwrap_or_default().to_owned());
    }
    methods.sort();
    assert_eq!(
        methods,
        [
            "notifications/prompts/list_changed",
            "notifications/resources/list_changed",
            "notifications/tools/list_changed"
        ]
    );
    drop(elsewhere);
    let mut home = session.stream(&c[0], Some(&last_event_id)).await;
    home.expect_silence(Duration::from_millis(300)).await; // its own node reads it: nothing was missed
}
