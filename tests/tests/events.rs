//! The events extension (experimental, `mcp-fleet-server`'s cargo feature `events`) end to end:
//! occurrences emitted on any node, polled on any other with the cursor one replica gave,
//! nothing lost and nothing twice — on the real Redis and NATS (three nodes each, skipped
//! without a broker unless `MCP_FLEET_REQUIRE_BROKERS=1`); push streams (`events/stream`) whose
//! cursors resume as polls elsewhere, with heartbeats and the drain's final result; and on one
//! node: history that does not reach back (`truncated`), the long poll, tenants apart, the
//! `match` hook, the limits and errors.

use std::collections::HashSet;
use std::time::Duration;

use mcp_fleet_bus::shard::Routing;
use mcp_fleet_server::events::{EventType, Events};
use mcp_fleet_server::typed::NoArgs;
use mcp_fleet_server::{HandlerOptions, McpHandler};
use mcp_fleet_tests::cluster::{Broker, Fleet, tenant_options};
use mcp_fleet_tests::{ListenStream, McpClient, TestNode, request, test_server};
use serde_json::{Value, json};

const KEY: [u8; 32] = [7; 32];

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Deployed {
    /// The version now running.
    version: String,
    /// Its size, for the `match` hook.
    total: u64,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[expect(dead_code, reason = "only its schema and the argument check use it")]
struct AtLeast {
    /// Only deploys at least this large.
    min_total: u64,
}

/// `deploy.finished` (no arguments) and `deploy.large` (matched by `min_total`).
fn events(history: usize) -> Events {
    let large = EventType::new::<AtLeast, Deployed>("deploy.large", "A deploy at least this large").matching(
        |_ctx, occurrence, arguments| {
            let min = arguments.get("min_total").and_then(Value::as_u64).unwrap_or(0);
            occurrence.data["total"].as_u64().is_some_and(|total| total >= min)
        },
    );
    Events::new()
        .event(EventType::new::<NoArgs, Deployed>("deploy.finished", "A deploy finished"))
        .event(large)
        .history(history)
}

fn options() -> HandlerOptions {
    tenant_options().request_state_key(KEY.to_vec()).events(events(1000))
}

/// `method` as `tenant` (the whole reply: result or error).
async fn call(client: &McpClient, tenant: &str, method: &str, params: Value) -> Value {
    let body = request(json!(1), method, params);
    let mut headers = McpClient::standard_headers(&body);
    headers.push(("x-tenant".into(), tenant.into()));
    client.post_with(&body, &headers).await.json()
}

/// `events/poll` as `tenant`.
async fn poll(client: &McpClient, tenant: &str, params: Value) -> Value {
    call(client, tenant, "events/poll", params).await
}

/// `events/stream` as `tenant`: the open SSE response.
async fn stream(client: &McpClient, tenant: &str, params: Value) -> ListenStream {
    let body = request(json!("push-1"), "events/stream", params);
    let mut headers = McpClient::standard_headers(&body);
    headers.push(("x-tenant".into(), tenant.into()));
    let bytes = serde_json::to_vec(&body).expect("json");
    ListenStream::from_response(client.send_raw("POST", &headers, bytes).await)
}

/// The next notification's method and params.
async fn next(stream: &mut ListenStream) -> (String, Value) {
    let message = stream.next_message().await.expect("a message");
    (message["method"].as_str().unwrap_or_default().to_owned(), message["params"].clone())
}

async fn emit(handler: &McpHandler, version: usize) -> String {
    let payload = Deployed { version: format!("v{version}"), total: version as u64 };
    handler.events().emit("deploy.finished", &payload).await.expect("emit").event_id
}

#[tokio::test]
async fn a_cursor_from_one_replica_resumes_on_another_with_nothing_lost_on_redis() {
    resumes_anywhere(Broker::Redis).await;
}

#[tokio::test]
async fn a_cursor_from_one_replica_resumes_on_another_with_nothing_lost_on_nats() {
    resumes_anywhere(Broker::Nats).await;
}

#[tokio::test]
async fn a_cursor_resumes_on_another_replica_of_a_bus_split_into_shards_on_redis() {
    let split = |o: &mut mcp_fleet_bus_redis::RedisBusOptions| (o.shards, o.routing) = (4, Routing::Interest);
    let Some(fleet) = Fleet::start_on_redis(split, options).await else { return };
    resumes_on(fleet).await;
}

#[tokio::test]
async fn a_cursor_resumes_on_another_replica_of_a_bus_split_into_shards_on_nats() {
    let split = |o: &mut mcp_fleet_bus_nats::NatsBusOptions| (o.shards, o.routing) = (4, Routing::Interest);
    let Some(fleet) = Fleet::start_on_nats(split, options).await else { return };
    resumes_on(fleet).await;
}

async fn resumes_anywhere(broker: Broker) {
    let Some(fleet) = Fleet::start(broker, options).await else { return };
    resumes_on(fleet).await;
}

/// Thirty occurrences from every node, polled seven at a time round the nodes, each poll
/// resuming where the one on another node left off.
async fn resumes_on(fleet: Fleet) {
    let clients: Vec<McpClient> = fleet.nodes.iter().map(|n| McpClient::new(n.url())).collect();
    let start = poll(&clients[0], "acme", json!({"name": "deploy.finished", "cursor": null})).await;
    let mut cursor = start["result"]["cursor"].clone();
    assert!(cursor.is_string() && start["result"]["events"] == json!([]), "{start}");

    let mut sent = Vec::new();
    for i in 0..30 {
        sent.push(emit(&fleet.nodes[i * 7 % 3].handler, i).await);
    }
    let mut heard = Vec::new();
    for round in 0.. {
        assert!(round < 60, "heard {} of 30", heard.len());
        let params = json!({"name": "deploy.finished", "cursor": cursor, "maxEvents": 7, "timeoutMs": 2000});
        let reply = poll(&clients[round % 3], "acme", params).await;
        let result = &reply["result"];
        assert_eq!(result["truncated"], false, "round {round} on node {}: {reply}", round % 3);
        heard.extend(result["events"].as_array().expect("events").iter().map(|e| e["eventId"].clone()));
        cursor = result["cursor"].clone();
        if heard.len() >= sent.len() {
            break;
        }
    }
    assert_eq!(heard, sent.iter().map(|id| json!(id)).collect::<Vec<_>>(), "every occurrence once, in order");
    let after = poll(&clients[1], "acme", json!({"name": "deploy.finished", "cursor": cursor})).await;
    assert_eq!(after["result"]["events"], json!([]), "nothing twice: {after}");
    fleet.shutdown().await;
}

#[tokio::test]
async fn a_cursor_older_than_the_history_is_truncated() {
    let node = TestNode::start(test_server(), tenant_options().events(events(5))).await;
    let client = McpClient::new(node.url());
    let start = poll(&client, "acme", json!({"name": "deploy.finished", "cursor": null})).await;
    for i in 0..10 {
        emit(&node.handler, i).await;
    }
    let params = json!({"name": "deploy.finished", "cursor": start["result"]["cursor"], "timeoutMs": 2000});
    let reply = poll(&client, "acme", params).await;
    let versions: Vec<&Value> =
        reply["result"]["events"].as_array().expect("events").iter().map(|e| &e["data"]["version"]).collect();
    assert_eq!(reply["result"]["truncated"], true, "{reply}");
    assert_eq!(versions, ["v5", "v6", "v7", "v8", "v9"], "the five the history keeps");
    let garbage = poll(&client, "acme", json!({"name": "deploy.finished", "cursor": "not-a-cursor"})).await;
    assert_eq!(garbage["result"]["truncated"], true, "a cursor this fleet did not write: {garbage}");
    node.shutdown().await;
}

#[tokio::test]
async fn a_long_poll_answers_as_soon_as_an_occurrence_arrives() {
    let node = TestNode::start(test_server(), tenant_options().events(events(100))).await;
    let client = McpClient::new(node.url());
    let start = poll(&client, "acme", json!({"name": "deploy.finished", "cursor": null})).await;
    let params = json!({"name": "deploy.finished", "cursor": start["result"]["cursor"], "timeoutMs": 20_000});
    let waiting = tokio::spawn(async move { poll(&client, "acme", params).await });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!waiting.is_finished(), "nothing to answer yet");
    let began = tokio::time::Instant::now();
    let id = emit(&node.handler, 1).await;
    let reply = tokio::time::timeout(Duration::from_secs(10), waiting).await.expect("answered").expect("joined");
    assert_eq!(reply["result"]["events"][0]["eventId"], id.as_str(), "{reply}");
    assert!(began.elapsed() < Duration::from_secs(10));
    node.shutdown().await;
}

#[tokio::test]
async fn tenants_see_their_own_occurrences_and_the_match_hook_filters() {
    let node = TestNode::start(test_server(), tenant_options().events(events(100))).await;
    let client = McpClient::new(node.url());
    let large = |min: u64| json!({"name": "deploy.large", "arguments": {"min_total": min}, "cursor": null});
    let acme = poll(&client, "acme", large(50)).await["result"]["cursor"].clone();
    let globex = poll(&client, "globex", large(0)).await["result"]["cursor"].clone();
    let events = node.handler.events();
    for total in [10, 60, 70] {
        events.tenant("acme").emit("deploy.large", &Deployed { version: "a".into(), total }).await.expect("emit");
    }
    events.emit("deploy.large", &Deployed { version: "everyone".into(), total: 99 }).await.expect("emit");

    let read = |tenant: &'static str, cursor: Value, min: u64| {
        let params =
            json!({"name": "deploy.large", "arguments": {"min_total": min}, "cursor": cursor, "timeoutMs": 2000});
        let client = client.clone();
        async move { poll(&client, tenant, params).await["result"].clone() }
    };
    let for_acme = read("acme", acme.clone(), 50).await;
    let totals: Vec<&Value> =
        for_acme["events"].as_array().expect("events").iter().map(|e| &e["data"]["total"]).collect();
    assert_eq!(totals, [60, 70, 99], "acme's above 50, and the unscoped one: {for_acme}");
    let for_globex = read("globex", globex, 0).await;
    let versions: HashSet<&str> =
        for_globex["events"].as_array().expect("events").iter().filter_map(|e| e["data"]["version"].as_str()).collect();
    assert_eq!(versions, HashSet::from(["everyone"]), "globex never sees acme's: {for_globex}");
    let stolen = read("globex", acme, 0).await;
    assert_eq!(stolen["truncated"], true, "another tenant's cursor opens to nothing: {stolen}");
    node.shutdown().await;
}

#[tokio::test]
async fn bad_polls_get_the_extensions_errors() {
    let node = TestNode::start(test_server(), tenant_options().events(events(10))).await;
    let client = McpClient::new(node.url());
    let unknown = poll(&client, "acme", json!({"name": "nope", "cursor": null})).await;
    assert_eq!(
        (unknown["error"]["code"].clone(), unknown["error"]["data"].clone()),
        (json!(-32011), json!({"kind": "event"}))
    );
    let bad_arguments = poll(&client, "acme", json!({"name": "deploy.large", "arguments": {"min_total": "x"}})).await;
    assert_eq!(bad_arguments["error"]["code"], -32602, "{bad_arguments}");
    let no_name = poll(&client, "acme", json!({"cursor": null})).await;
    assert_eq!(no_name["error"]["code"], -32602, "{no_name}");
    let undeclared = node.handler.events().emit("nope", &json!({})).await;
    assert!(matches!(undeclared, Err(mcp_fleet_server::events::EmitError::Undeclared(_))));
    let not_an_object = node.handler.events().emit("deploy.finished", &json!([1])).await;
    assert!(matches!(not_an_object, Err(mcp_fleet_server::events::EmitError::Payload(_))));

    let listed = call(&client, "acme", "events/list", json!({})).await;
    let names: Vec<&Value> =
        listed["result"]["events"].as_array().expect("events").iter().map(|e| &e["name"]).collect();
    assert_eq!(names, ["deploy.finished", "deploy.large"]);
    assert_eq!(
        listed["result"]["events"][1]["inputSchema"]["properties"]["min_total"]["description"],
        "Only deploys at least this large."
    );
    let discover = call(&client, "acme", "server/discover", json!({})).await["result"].clone();
    assert!(discover["capabilities"]["extensions"]["io.modelcontextprotocol/events"].is_object(), "{discover}");
    node.shutdown().await;

    let plain = TestNode::start(test_server(), tenant_options()).await;
    let off = poll(&McpClient::new(plain.url()), "acme", json!({"name": "deploy.finished"})).await;
    assert_eq!(off["error"]["code"], -32601, "no extension, no method: {off}");
    plain.shutdown().await;
}

#[tokio::test]
async fn a_push_streams_cursor_resumes_as_a_poll_on_another_replica_on_redis() {
    push_then_poll(Broker::Redis).await;
}

#[tokio::test]
async fn a_push_streams_cursor_resumes_as_a_poll_on_another_replica_on_nats() {
    push_then_poll(Broker::Nats).await;
}

async fn push_then_poll(broker: Broker) {
    let Some(fleet) = Fleet::start(broker, options).await else { return };
    let clients: Vec<McpClient> = fleet.nodes.iter().map(|n| McpClient::new(n.url())).collect();
    let mut push = stream(&clients[1], "acme", json!({"name": "deploy.finished", "cursor": null})).await;
    let (method, active) = next(&mut push).await;
    assert_eq!((method.as_str(), &active["truncated"]), ("notifications/events/active", &json!(false)), "{active}");
    assert_eq!(active["_meta"]["io.modelcontextprotocol/subscriptionId"], "push-1");
    let mut sent = Vec::new();
    for i in 0..10 {
        sent.push(emit(&fleet.nodes[i % 3].handler, i).await);
    }
    let mut cursor = Value::Null;
    for id in &sent[..6] {
        let (method, event) = next(&mut push).await;
        assert_eq!((method.as_str(), event["eventId"].as_str()), ("notifications/events/event", Some(id.as_str())));
        cursor = event["cursor"].clone();
    }
    drop(push);
    // The client read six and left: a poll on another node resumes with the other four.
    let params = json!({"name": "deploy.finished", "cursor": cursor, "timeoutMs": 2000});
    let reply = poll(&clients[2], "acme", params).await;
    let rest: Vec<&Value> =
        reply["result"]["events"].as_array().expect("events").iter().map(|e| &e["eventId"]).collect();
    assert_eq!(rest, sent[6..].iter().collect::<Vec<_>>(), "{reply}");
    assert_eq!(reply["result"]["truncated"], false);
    fleet.shutdown().await;
}

#[tokio::test]
async fn a_quiet_push_stream_beats_and_the_drain_ends_it_with_its_result() {
    let events = events(10).heartbeat(Duration::from_millis(200));
    let node = TestNode::start(test_server(), tenant_options().events(events)).await;
    let client = McpClient::new(node.url());
    let mut push = stream(&client, "acme", json!({"name": "deploy.finished", "cursor": null})).await;
    let (_, active) = next(&mut push).await;
    let (method, beat) = next(&mut push).await;
    assert_eq!(method, "notifications/events/heartbeat", "{beat}");
    assert!(beat["cursor"].is_string() && beat["_meta"]["io.modelcontextprotocol/subscriptionId"] == "push-1");
    // Nothing happened: the heartbeat's cursor resumes where the stream began.
    let params = json!({"name": "deploy.finished", "cursor": beat["cursor"]});
    assert_eq!(poll(&client, "acme", params).await["result"]["events"], json!([]));
    assert!(active["cursor"].is_string());
    let shutdown = tokio::spawn(async move { node.shutdown().await });
    let last = push.next_message().await.expect("the final result");
    assert!(last["method"].is_null(), "the result, not another notification: {last}");
    assert_eq!((last["id"].clone(), last["result"].clone()), (json!("push-1"), json!({"_meta": {}})), "{last}");
    shutdown.await.expect("shut down");
}

#[tokio::test]
async fn push_streams_are_bounded_and_checked_before_they_open() {
    let node = TestNode::start(test_server(), tenant_options().events(events(10).max_streams(1))).await;
    let client = McpClient::new(node.url());
    let mut first = stream(&client, "acme", json!({"name": "deploy.finished"})).await;
    assert_eq!(next(&mut first).await.0, "notifications/events/active");
    let refused = call(&client, "acme", "events/stream", json!({"name": "deploy.finished"})).await;
    assert_eq!(refused["error"]["code"], -32013, "{refused}");
    assert_eq!(refused["error"]["data"], json!({"limit": "streams", "max": 1}));
    drop(first);
    let params = json!({"name": "deploy.large", "arguments": {}});
    let refused = call(&client, "acme", "events/stream", params).await;
    assert_eq!(refused["error"]["code"], -32602, "checked before the stream opens: {refused}");
    // The first stream's slot came back when its client left.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut third = stream(&client, "acme", json!({"name": "deploy.finished"})).await;
    assert_eq!(next(&mut third).await.0, "notifications/events/active");
    node.shutdown().await;
}

#[tokio::test]
async fn through_haproxy_round_robin_a_cursor_resumes_on_whichever_replica_answers() {
    let options = || tenant_options().request_state_key(KEY.to_vec()).events(events(20));
    let Some(fleet) = Fleet::start(Broker::Redis, options).await else { return };
    let addrs = [0, 1, 2].map(|i| fleet.nodes[i].addr);
    let Some(balancer) = mcp_fleet_tests::balancer::Balancer::start(addrs).await else { return };
    let client = McpClient::new(balancer.url.clone());
    let mut push = stream(&client, "acme", json!({"name": "deploy.finished", "cursor": null})).await;
    assert_eq!(next(&mut push).await.0, "notifications/events/active");
    let mut sent = Vec::new();
    for i in 0..10 {
        sent.push(emit(&fleet.nodes[i % 3].handler, i).await);
    }
    let mut cursor = Value::Null;
    for id in &sent[..4] {
        let (_, event) = next(&mut push).await;
        assert_eq!(event["eventId"].as_str(), Some(id.as_str()));
        cursor = event["cursor"].clone();
    }
    drop(push);
    // One occurrence per poll, each poll to the next replica in the rotation.
    for (round, id) in sent[4..].iter().enumerate() {
        let params = json!({"name": "deploy.finished", "cursor": cursor, "maxEvents": 1, "timeoutMs": 2000});
        let reply = poll(&client, "acme", params).await;
        assert_eq!(reply["result"]["truncated"], false, "round {round}: {reply}");
        assert_eq!(reply["result"]["events"][0]["eventId"].as_str(), Some(id.as_str()), "round {round}: {reply}");
        cursor = reply["result"]["cursor"].clone();
    }
    let after = poll(&client, "acme", json!({"name": "deploy.finished", "cursor": cursor})).await;
    assert_eq!(after["result"]["events"], json!([]), "nothing twice: {after}");
    for node in &fleet.nodes {
        let text = node.handler.metrics_text();
        let served = "mcp_fleet_http_requests_total{method=\"events/poll\",status=\"200\"}";
        assert!(text.lines().any(|l| l.starts_with(served)), "every replica answered polls: {text}");
    }
    // More than the history holds since that cursor: truncated, wherever it lands.
    for i in 0..25 {
        emit(&fleet.nodes[i % 3].handler, 100 + i).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    for _ in 0..3 {
        let reply =
            poll(&client, "acme", json!({"name": "deploy.finished", "cursor": after["result"]["cursor"]})).await;
        assert_eq!(reply["result"]["truncated"], true, "{reply}");
    }
    fleet.shutdown().await;
}

/// The lifecycle hooks' calls: `("subscribe" | "unsubscribe", key, min_total)`.
type HookCalls = std::sync::Arc<std::sync::Mutex<Vec<(&'static str, String, Value)>>>;

fn hooked(calls: &HookCalls) -> HandlerOptions {
    let (on, off) = (calls.clone(), calls.clone());
    let large = EventType::new::<AtLeast, Deployed>("deploy.large", "A deploy at least this large")
        .on_subscribe(move |sub| {
            on.lock().unwrap().push(("subscribe", sub.key, sub.arguments["min_total"].clone()));
            async {}
        })
        .on_unsubscribe(move |sub| {
            off.lock().unwrap().push(("unsubscribe", sub.key, sub.arguments["min_total"].clone()));
            async {}
        });
    let events =
        Events::new().event(large).poll_lease(Duration::from_millis(500)).hooks_every(Duration::from_millis(100));
    tenant_options().request_state_key(KEY.to_vec()).events(events)
}

#[tokio::test]
async fn subscription_hooks_run_once_across_the_fleet_while_anyone_holds_the_key() {
    let calls = HookCalls::default();
    let Some(fleet) = Fleet::start(Broker::Redis, || hooked(&calls)).await else { return };
    let clients: Vec<McpClient> = fleet.nodes.iter().map(|n| McpClient::new(n.url())).collect();
    let five = json!({"name": "deploy.large", "arguments": {"min_total": 5}});
    for client in &clients {
        assert!(poll(client, "acme", five.clone()).await["result"].is_object());
    }
    let mut push = stream(&clients[2], "acme", five.clone()).await;
    assert_eq!(next(&mut push).await.0, "notifications/events/active");
    let nine = json!({"name": "deploy.large", "arguments": {"min_total": 9}});
    poll(&clients[1], "acme", nine.clone()).await;
    let subscribed = |calls: &HookCalls| calls.lock().unwrap().iter().filter(|c| c.0 == "subscribe").count();
    assert_eq!(subscribed(&calls), 2, "once per key across three replicas and two modes: {:?}", calls.lock().unwrap());

    // The stream keeps the first key held after its polls lapse; the second lapses.
    tokio::time::sleep(Duration::from_millis(1200)).await;
    let now: Vec<_> = calls.lock().unwrap().clone();
    assert_eq!(
        now.iter().filter(|c| c.0 == "unsubscribe").map(|c| &c.2).collect::<Vec<_>>(),
        vec![&json!(9)],
        "{now:?}"
    );
    drop(push);
    tokio::time::sleep(Duration::from_millis(1200)).await;
    let now: Vec<_> = calls.lock().unwrap().clone();
    let unsubscribed: HashSet<&String> = now.iter().filter(|c| c.0 == "unsubscribe").map(|c| &c.1).collect();
    let subscribed_keys: HashSet<&String> = now.iter().filter(|c| c.0 == "subscribe").map(|c| &c.1).collect();
    assert_eq!(unsubscribed, subscribed_keys, "each key's last holder gone: {now:?}");
    assert_eq!(now.len(), 4, "{now:?}");

    // A new holder starts the hooks again.
    poll(&clients[0], "acme", five).await;
    assert_eq!(subscribed(&calls), 3);
    fleet.shutdown().await;
}
