//! Two nodes on a real Redis bus (`MCP_FLEET_REDIS_URL`, default 127.0.0.1:6379), each with its
//! own connection to one private stream, both resource servers for the same audience (the
//! fleet's public URL) with the tenant taken from the token: a tenant's change reaches only
//! that tenant's streams on every node; `requestState` minted on one node is honoured on the
//! other for the same caller and request only; the per-principal stream cap and request rate
//! hold, per node, with their metrics.
//!
//! Skipped (with `skipped: redis not reachable at …`) when Redis is down, unless
//! `MCP_FLEET_REQUIRE_BROKERS=1`.

use std::sync::Arc;

use http::StatusCode;
use mcp_fleet_bus_redis::{RedisBus, RedisBusOptions};
use mcp_fleet_oauth::BearerAuthenticator;
use mcp_fleet_server::auth::Rate;
use mcp_fleet_server::types::{CallToolResult, Tool};
use mcp_fleet_server::{HandlerOptions, InputRequired, McpServer, Outcome, RpcError};
use mcp_fleet_tests::cluster::{Broker, EVENT_META, broker_or_skip, unique_name};
use mcp_fleet_tests::idp::{Idp, TENANT_CLAIM, authorization};
use mcp_fleet_tests::{ListenStream, McpClient, Reply, TestNode, WAIT, eventually, request, test_server};
use serde_json::{Value, json};

/// The fleet's public URL behind its load balancer: every node's token audience.
const AUDIENCE: &str = "https://mcp.example.com/mcp";
/// The `requestState` key every node shares.
const STATE_KEY: &[u8] = b"oauth-fleet-test-request-state-key-0123456789";

/// Two nodes sharing a private Redis stream, and the IdP whose tokens they take.
struct OauthFleet {
    idp: Idp,
    nodes: Vec<TestNode>,
    buses: Vec<RedisBus>,
    admin: redis::aio::MultiplexedConnection,
}

impl OauthFleet {
    /// Start the fleet, each node serving [`server`] behind a bearer authenticator (tenant from
    /// [`TENANT_CLAIM`]), the shared state key, and `tune` applied; `None` when Redis is down.
    async fn start(tune: impl Fn(HandlerOptions) -> HandlerOptions) -> Option<OauthFleet> {
        let url = broker_or_skip(Broker::Redis).await?;
        let idp = Idp::start().await;
        let stream_key = format!("mcp-fleet-test:{}", unique_name());
        let (mut nodes, mut buses) = (Vec::new(), Vec::new());
        for i in 0..2 {
            let node_id = format!("node-{i}");
            let bus_options = RedisBusOptions::new(&url, &node_id).unwrap().with_stream_key(&stream_key);
            let bus = RedisBus::connect(bus_options).await.unwrap();
            let mut config = idp.bearer_config(AUDIENCE);
            config.tenant_claim = Some(TENANT_CLAIM.into());
            let options =
                HandlerOptions::default().node_id(node_id).bus(Arc::new(bus.clone())).request_state_key(STATE_KEY);
            let options = BearerAuthenticator::new(config).unwrap().install(options).unwrap();
            nodes.push(TestNode::start(server(), tune(options)).await);
            buses.push(bus);
        }
        let admin = redis::Client::open(url).unwrap().get_multiplexed_async_connection().await.unwrap();
        Some(OauthFleet { idp, nodes, buses, admin })
    }

    /// A valid token for `subject` in `tenant`.
    fn token(&self, subject: &str, tenant: &str) -> String {
        self.idp.token(&self.idp.claims(AUDIENCE, subject, "mcp:use", Some(tenant)))
    }

    /// POST `body` to node `i` with `token`.
    async fn post(&self, i: usize, token: &str, body: &Value) -> Reply {
        let mut headers = McpClient::standard_headers(body);
        headers.push(authorization(token));
        McpClient::new(self.nodes[i].url()).post_with(body, &headers).await
    }

    /// The listen request following tool-list changes.
    fn listen_request(id: &str) -> Value {
        request(json!(id), "subscriptions/listen", json!({"notifications": {"toolsListChanged": true}}))
    }

    /// Open a listen stream on node `i` with `token` and read its acknowledgement.
    async fn listen(&self, i: usize, token: &str, id: &str) -> ListenStream {
        let body = Self::listen_request(id);
        let mut headers = McpClient::standard_headers(&body);
        headers.push(authorization(token));
        let client = McpClient::new(self.nodes[i].url());
        let resp = client.send_raw("POST", &headers, serde_json::to_vec(&body).unwrap()).await;
        let mut stream = ListenStream::from_response(resp);
        assert_eq!(stream.status, StatusCode::OK, "listen {id} on node {i}");
        let ack = stream.next_message().await.expect("ack");
        assert_eq!(ack["method"], "notifications/subscriptions/acknowledged", "{ack}");
        stream
    }

    /// Node `i`'s metrics.
    fn metrics(&self, i: usize) -> String {
        self.nodes[i].handler.metrics_text()
    }

    /// Shut both nodes down and delete the fleet's keys from Redis.
    async fn shutdown(mut self) {
        for node in self.nodes {
            node.shutdown().await;
        }
        let options = self.buses[0].options();
        let keys = [options.stream_key.clone(), options.version_key(), options.epoch_key(), options.members_key()];
        let _: i64 = redis::cmd("DEL").arg(&keys).query_async(&mut self.admin).await.unwrap();
    }
}

/// The test catalog plus `delete`, which asks for confirmation through `requestState` first
/// and, on the retry, says what it deleted for whom.
fn server() -> McpServer {
    let server = test_server();
    let schema = json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]});
    server.tool(Tool::new("delete", "Deletes a file once confirmed").input_schema(schema), |call| async move {
        let Some(state) = call.ctx.request_state else {
            let path = call.arguments["path"].clone();
            return Ok::<_, RpcError>(Outcome::InputRequired(InputRequired::new().state(json!({"confirming": path}))));
        };
        let who = call.ctx.principal.map(|p| p.id).unwrap_or_default();
        Ok(Outcome::Complete(CallToolResult::text(format!("deleted {} for {who}", state["confirming"]))))
    });
    server
}

#[tokio::test]
async fn a_tenants_change_on_one_node_reaches_only_that_tenants_streams_on_every_node() {
    let Some(fleet) = OauthFleet::start(|o| o).await else { return };
    let (alice, bob) = (fleet.token("alice", "a"), fleet.token("bob", "b"));
    let mut tenant_a = vec![fleet.listen(0, &alice, "a0").await, fleet.listen(1, &alice, "a1").await];
    let mut tenant_b = vec![fleet.listen(0, &bob, "b0").await, fleet.listen(1, &bob, "b1").await];

    let scoped = fleet.nodes[1].handler.notify().tenant("a").tools_changed().await.unwrap();
    for s in &mut tenant_a {
        let msg = s.next_message().await.unwrap();
        assert_eq!(msg["method"], "notifications/tools/list_changed");
        assert_eq!(msg["params"]["_meta"][EVENT_META], json!({"seq": 1, "publishedAtMs": scoped.published_at_ms}));
    }
    // Both nodes have routed the scoped change (tenant A's streams on each got it). A global
    // change now: it is the first thing tenant B hears, so B never heard the scoped one — and
    // its count starts at 1, not at the bus's version.
    let global = fleet.nodes[0].handler.notify().tools_changed().await.unwrap();
    let heard_global = json!({"seq": 1, "publishedAtMs": global.published_at_ms});
    for s in &mut tenant_b {
        let msg = s.next_message().await.unwrap();
        assert_eq!(msg["params"]["_meta"][EVENT_META], heard_global, "{msg}");
    }
    for s in &mut tenant_a {
        let msg = s.next_message().await.unwrap();
        assert_eq!(msg["params"]["_meta"][EVENT_META], json!({"seq": 2, "publishedAtMs": global.published_at_ms}));
    }
    // Nor was it queued for B and then replaced by the global one.
    for i in 0..2 {
        assert!(fleet.metrics(i).contains("mcp_fleet_listen_coalesced_total 0\n"), "{}", fleet.metrics(i));
    }
    fleet.shutdown().await;
}

/// A `tools/call` of `delete` for `path`, retrying with `state` if given.
fn delete(path: &str, state: Option<&Value>) -> Value {
    let mut params = json!({"name": "delete", "arguments": {"path": path}});
    if let Some(state) = state {
        params["requestState"] = state.clone();
    }
    request(json!("del"), "tools/call", params)
}

#[tokio::test]
async fn request_state_from_one_node_is_honoured_on_the_other_only_for_the_same_caller_and_request() {
    let Some(fleet) = OauthFleet::start(|o| o).await else { return };
    let alice = fleet.token("alice", "a");
    let first = fleet.post(0, &alice, &delete("/tmp/x", None)).await.json();
    assert_eq!(first["result"]["resultType"], "input_required", "{first}");
    let state = &first["result"]["requestState"];
    assert!(state.is_string(), "{first}");

    let refused = [
        ("another subject", fleet.token("bob", "a"), delete("/tmp/x", Some(state))),
        ("the same subject in another tenant", fleet.token("alice", "b"), delete("/tmp/x", Some(state))),
        ("other arguments", alice.clone(), delete("/tmp/y", Some(state))),
    ];
    for (case, token, retry) in refused {
        let reply = fleet.post(1, &token, &retry).await;
        assert_eq!(reply.status, StatusCode::OK, "{case}: in-band");
        let body = reply.json();
        assert_eq!(body["id"], "del", "{case}");
        assert_eq!(body["error"]["code"], -32602, "{case}: {body}");
        assert_eq!(body["error"]["data"]["reason"], "invalid_request_state", "{case}");
    }

    let done = fleet.post(1, &alice, &delete("/tmp/x", Some(state))).await;
    assert_eq!(done.status, StatusCode::OK);
    let result = &done.json()["result"];
    assert_eq!(result["resultType"], "complete", "{result}");
    assert_eq!(result["content"][0]["text"], "deleted \"/tmp/x\" for alice");
    fleet.shutdown().await;
}

#[tokio::test]
async fn a_principal_past_its_stream_cap_gets_429_while_others_still_listen() {
    let Some(fleet) = OauthFleet::start(|o| o.max_streams_per_principal(2)).await else { return };
    let (alice, bob) = (fleet.token("alice", "a"), fleet.token("bob", "a"));
    let _first = fleet.listen(0, &alice, "alice-1").await;
    let second = fleet.listen(0, &alice, "alice-2").await;

    let refused = fleet.post(0, &alice, &OauthFleet::listen_request("alice-3")).await;
    assert_eq!(refused.status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(refused.headers["content-type"], "application/json");
    let body = refused.json();
    assert_eq!((body["id"].clone(), body["error"]["code"].clone()), (json!("alice-3"), json!(-32603)), "{body}");
    let counted = "mcp_fleet_listen_streams_refused_total{reason=\"principal_limit\"} 1\n";
    assert!(fleet.metrics(0).contains(counted), "{}", fleet.metrics(0));

    // Another principal on the same node, and the same principal on another node, still listen.
    let _bob = fleet.listen(0, &bob, "bob-1").await;
    let _elsewhere = fleet.listen(1, &alice, "alice-on-1").await;

    // Closing one of Alice's streams gives her slot back.
    drop(second);
    eventually("the closed stream is unregistered", WAIT, async || fleet.nodes[0].handler.open_streams() == 2).await;
    let _again = fleet.listen(0, &alice, "alice-4").await;
    assert!(fleet.metrics(0).contains(counted), "no further refusal");
    fleet.shutdown().await;
}

#[tokio::test]
async fn a_principal_past_its_request_rate_gets_429_with_retry_after_while_others_are_served() {
    let rate = Rate { per_second: 1.0, burst: 2 };
    let Some(fleet) = OauthFleet::start(|o| o.rate_per_principal(Some(rate))).await else { return };
    let (alice, bob) = (fleet.token("alice", "a"), fleet.token("bob", "a"));
    let list = request(json!(1), "tools/list", json!({}));
    for _ in 0..2 {
        assert_eq!(fleet.post(0, &alice, &list).await.status, StatusCode::OK);
    }

    let limited = fleet.post(0, &alice, &list).await;
    assert_eq!(limited.status, StatusCode::TOO_MANY_REQUESTS);
    let retry_after: u64 = limited.headers["retry-after"].to_str().unwrap().parse().unwrap();
    assert!(retry_after >= 1, "Retry-After: {retry_after}");
    let body = limited.json();
    assert_eq!(body["error"]["code"], -32600, "{body}");
    assert!(body.get("id").is_none(), "refused before the body was read: {body}");
    let message = body["error"]["message"].as_str().unwrap();
    assert_eq!(message, format!("Request rate limit reached for this principal; retry after {retry_after} s"));
    assert!(fleet.metrics(0).contains("mcp_fleet_http_requests_rate_limited_total 1\n"), "{}", fleet.metrics(0));

    // Bob has his own bucket; Alice has another one on the other node.
    assert_eq!(fleet.post(0, &bob, &list).await.status, StatusCode::OK);
    assert_eq!(fleet.post(1, &alice, &list).await.status, StatusCode::OK);
    assert!(fleet.metrics(1).contains("mcp_fleet_http_requests_rate_limited_total 0\n"), "{}", fleet.metrics(1));
    fleet.shutdown().await;
}
