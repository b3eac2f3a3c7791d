//! Per-principal limits that hold across the fleet, over HTTP on real Redis and NATS
//! JetStream (`LimitScope::Fleet`: counters in the bus's keyspace), keyed by issuer, tenant and
//! subject; and anonymous callers rate-limited per client address instead of in one bucket.

use std::net::{IpAddr, SocketAddr};

use bytes::Bytes;
use http::StatusCode;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use mcp_fleet_server::auth::{AuthError, LimitScope, Rate};
use mcp_fleet_server::{HandlerOptions, Principal};
use mcp_fleet_tests::cluster::{Broker, Fleet, NODES};
use mcp_fleet_tests::{ListenStream, McpClient, Reply, TestNode, WAIT, eventually, request, test_server};
use serde_json::{Value, json};

/// Every principal is `alice`, in the tenant the `x-tenant` header names.
fn alice_in_tenant(parts: &http::request::Parts) -> Result<Principal, AuthError> {
    match parts.headers.get("x-tenant").and_then(|v| v.to_str().ok()) {
        Some(t) => Ok(Principal::new("alice", Some(t.to_owned()))),
        None => Err(AuthError::unauthenticated("Bearer realm=\"test\"")),
    }
}

fn listen_body(id: &str) -> Value {
    request(json!(id), "subscriptions/listen", json!({"notifications": {"toolsListChanged": true}}))
}

/// POST a listen to `url` as `tenant`: the open stream, or the refusal.
async fn listen(url: &str, tenant: &str, id: &str) -> Result<ListenStream, Reply> {
    let body = listen_body(id);
    let mut headers = McpClient::standard_headers(&body);
    headers.push(("x-tenant".into(), tenant.into()));
    let resp = McpClient::new(url.to_owned()).send_raw("POST", &headers, serde_json::to_vec(&body).unwrap()).await;
    if resp.headers()["content-type"].as_bytes().starts_with(b"text/event-stream") {
        let mut stream = ListenStream::from_response(resp);
        stream.next_message().await.expect("ack");
        return Ok(stream);
    }
    let (parts, body) = resp.into_parts();
    let body = tokio::time::timeout(WAIT, body.collect()).await.unwrap().unwrap().to_bytes();
    Err(Reply { status: parts.status, headers: parts.headers, body })
}

async fn stream_quota_holds_across_the_fleet(broker: Broker) {
    let options = || {
        HandlerOptions::default()
            .authenticator(alice_in_tenant)
            .limit_scope(LimitScope::Fleet)
            .max_streams_per_principal(2)
    };
    let Some(fleet) = Fleet::start(broker, options).await else { return };
    eventually("every node sees the whole fleet", WAIT, async || {
        fleet.nodes.iter().all(|n| n.handler.fleet().members.len() == NODES)
    })
    .await;
    let url = |i: usize| fleet.nodes[i].url();
    let first = listen(&url(0), "a", "a0").await.expect("first stream");
    let _second = listen(&url(1), "a", "a1").await.expect("second stream, on another node");
    let Err(refused) = listen(&url(2), "a", "a2").await else { panic!("a third, on a third node, is past the quota") };
    assert_eq!(refused.status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(refused.error_code(), Some(-32603));
    let metrics = fleet.nodes[2].handler.metrics_text();
    assert!(metrics.contains("mcp_fleet_listen_streams_refused_total{reason=\"principal_limit\"} 1\n"), "{metrics}");
    // The same subject in another tenant is another principal with its own quota.
    let _other_tenant = listen(&url(2), "b", "b0").await.expect("tenant b's alice");
    // Closing a stream on node 0 gives the slot back to the fleet.
    drop(first);
    eventually("the closed stream's slot is free on another node", WAIT, async || {
        listen(&url(2), "a", "a3").await.is_ok()
    })
    .await;
    fleet.shutdown().await;
}

async fn request_rate_holds_across_the_fleet(broker: Broker) {
    // A window of 3 s admitting 3 requests, for the whole fleet.
    let rate = Rate { per_second: 1.0, burst: 3 };
    let options = || {
        HandlerOptions::default()
            .authenticator(alice_in_tenant)
            .limit_scope(LimitScope::Fleet)
            .rate_per_principal(Some(rate))
    };
    let Some(fleet) = Fleet::start(broker, options).await else { return };
    let list = request(json!(1), "tools/list", json!({}));
    let mut headers = McpClient::standard_headers(&list);
    headers.push(("x-tenant".into(), "a".into()));
    let mut statuses = Vec::new();
    // Seven quick requests span at most two windows: at most six pass, wherever they land.
    for i in 0..7 {
        statuses.push(McpClient::new(fleet.nodes[i % NODES].url()).post_with(&list, &headers).await.status);
    }
    let limited = statuses.iter().filter(|s| **s == StatusCode::TOO_MANY_REQUESTS).count();
    assert!(limited >= 1, "per replica each node would admit 3: {statuses:?}");
    assert!(statuses.iter().all(|s| [StatusCode::OK, StatusCode::TOO_MANY_REQUESTS].contains(s)), "{statuses:?}");
    fleet.shutdown().await;
}

#[tokio::test]
async fn a_principals_stream_quota_holds_across_a_redis_fleet() {
    stream_quota_holds_across_the_fleet(Broker::Redis).await;
}

#[tokio::test]
async fn a_principals_stream_quota_holds_across_a_nats_fleet() {
    stream_quota_holds_across_the_fleet(Broker::Nats).await;
}

#[tokio::test]
async fn a_principals_request_rate_holds_across_a_redis_fleet() {
    request_rate_holds_across_the_fleet(Broker::Redis).await;
}

#[tokio::test]
async fn a_principals_request_rate_holds_across_a_nats_fleet() {
    request_rate_holds_across_the_fleet(Broker::Nats).await;
}

#[tokio::test]
async fn two_tenants_users_with_one_subject_have_their_own_budgets() {
    let options = HandlerOptions::default().authenticator(alice_in_tenant).max_streams_per_principal(1);
    let node = TestNode::start(test_server(), options).await;
    let _a = listen(&node.url(), "a", "a").await.expect("alice in tenant a");
    let _b = listen(&node.url(), "b", "b").await.expect("alice in tenant b: another principal");
    assert!(listen(&node.url(), "a", "a2").await.is_err(), "tenant a's alice is at her quota");
    node.shutdown().await;
}

/// POST `body` to `addr` from the loopback address `from` (127.0.0.0/8 is all loopback).
async fn post_from(from: IpAddr, addr: SocketAddr, body: &Value) -> StatusCode {
    let mut connector = HttpConnector::new();
    connector.set_local_address(Some(from));
    let client: Client<_, Full<Bytes>> = Client::builder(TokioExecutor::new()).build(connector);
    let mut req = http::Request::builder().method("POST").uri(format!("http://{addr}/mcp"));
    for (k, v) in McpClient::standard_headers(body) {
        req = req.header(k, v);
    }
    let req = req.body(Full::new(Bytes::from(serde_json::to_vec(body).unwrap()))).unwrap();
    tokio::time::timeout(WAIT, client.request(req)).await.unwrap().unwrap().status()
}

#[tokio::test]
async fn anonymous_callers_are_rate_limited_per_client_address_not_in_one_bucket() {
    let rate = Rate { per_second: 0.1, burst: 2 };
    let node = TestNode::start(test_server(), HandlerOptions::default().rate_per_principal(Some(rate))).await;
    let list = request(json!(1), "tools/list", json!({}));
    let (one, two): (IpAddr, IpAddr) = ("127.0.0.1".parse().unwrap(), "127.0.0.2".parse().unwrap());
    for _ in 0..2 {
        assert_eq!(post_from(one, node.addr, &list).await, StatusCode::OK);
    }
    assert_eq!(post_from(one, node.addr, &list).await, StatusCode::TOO_MANY_REQUESTS, "127.0.0.1 spent its burst");
    assert_eq!(post_from(two, node.addr, &list).await, StatusCode::OK, "another address has its own bucket");
    node.shutdown().await;
}
