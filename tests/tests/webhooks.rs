//! The events extension's webhooks (`events/subscribe`) end to end, against a receiver that
//! checks every signature with its own HMAC: on the real Redis and NATS, three nodes, one
//! subscription, occurrences emitted from every node → each delivered once; the receiver
//! failing for 10 s → everything delivered once it recovers; the replicas holding the retries
//! stopped → the last one finishes them. On one node: the SSRF rules (loopback, private,
//! link-local, metadata, a name that resolves elsewhere at delivery time, a redirect — each
//! refused and counted), the verification handshake, refresh and `deliveryStatus`,
//! suspension and reactivation, unsubscribe, and the errors.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use mcp_fleet_server::events::{EventType, Events, Network, Resolver, Webhooks};
use mcp_fleet_server::typed::NoArgs;
use mcp_fleet_server::{HandlerOptions, McpHandler};
use mcp_fleet_tests::cluster::{Broker, Fleet, tenant_options};
use mcp_fleet_tests::webhooks::{Receiver, new_secret};
use mcp_fleet_tests::{McpClient, TestNode, request, test_server};
use serde_json::{Value, json};

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Deployed {
    /// The version now running.
    version: String,
}

fn loopback() -> Network {
    "127.0.0.0/8".parse().expect("a network")
}

/// Quick leases and retries, so takeovers and recoveries fit in a test.
fn quick(webhooks: Webhooks) -> Webhooks {
    webhooks
        .allow_http(true)
        .lease(Duration::from_millis(600))
        .retry_backoff(Duration::from_millis(100), Duration::from_millis(500))
        .refresh_every(Duration::from_millis(200))
        .timeout(Duration::from_secs(2))
}

fn options_with(webhooks: Webhooks) -> HandlerOptions {
    let events = Events::new()
        .event(EventType::new::<NoArgs, Deployed>("deploy.finished", "A deploy finished"))
        .webhooks(webhooks);
    tenant_options().request_state_key(vec![7; 32]).events(events)
}

fn options() -> HandlerOptions {
    options_with(quick(Webhooks::new().allow_network(loopback())))
}

/// `method` as `tenant` (the whole reply).
async fn call(client: &McpClient, tenant: &str, method: &str, params: Value) -> Value {
    let body = request(json!(1), method, params);
    let mut headers = McpClient::standard_headers(&body);
    headers.push(("x-tenant".into(), tenant.into()));
    client.post_with(&body, &headers).await.json()
}

fn subscription(url: &str, secret: &str) -> Value {
    json!({"name": "deploy.finished", "delivery": {"mode": "webhook", "url": url, "secret": secret}})
}

async fn emit(handler: &McpHandler, version: usize) -> String {
    let payload = Deployed { version: format!("v{version}") };
    handler.events().emit("deploy.finished", &payload).await.expect("emit").event_id
}

/// The value of the series `name` (with its labels) in `handler`'s metrics, 0 when absent.
fn metric(handler: &McpHandler, name: &str) -> f64 {
    let text = handler.metrics_text();
    text.lines().find_map(|l| l.strip_prefix(name).and_then(|v| v.trim().parse().ok())).unwrap_or(0.0)
}

#[tokio::test]
async fn each_occurrence_reaches_a_webhook_once_across_the_fleet_on_redis() {
    once_per_subscription(Broker::Redis).await;
}

#[tokio::test]
async fn each_occurrence_reaches_a_webhook_once_across_the_fleet_on_nats() {
    once_per_subscription(Broker::Nats).await;
}

async fn once_per_subscription(broker: Broker) {
    let secret = new_secret();
    let receiver = Receiver::start(&secret).await;
    let Some(mut fleet) = Fleet::start(broker, options).await else { return };
    let client = McpClient::new(fleet.nodes[0].url());
    let reply = call(&client, "acme", "events/subscribe", subscription(&receiver.url("/hook"), &secret)).await;
    let id = reply["result"]["id"].as_str().unwrap_or_else(|| panic!("{reply}")).to_owned();
    assert!(reply["result"]["refreshBefore"].is_string() && reply["result"]["cursor"].is_string(), "{reply}");
    tokio::time::sleep(Duration::from_millis(600)).await; // every node reloads the subscription

    let mut sent = HashSet::new();
    for i in 0..100 {
        sent.insert(emit(&fleet.nodes[rand::random_range(0..3)].handler, i).await);
    }
    receiver.await_events(100, Duration::from_secs(30)).await;

    // The receiver fails for 10 s: what is emitted meanwhile arrives once it recovers.
    receiver.fail(true);
    for i in 100..120 {
        sent.insert(emit(&fleet.nodes[i % 3].handler, i).await);
    }
    tokio::time::sleep(Duration::from_secs(10)).await;
    receiver.fail(false);
    receiver.await_events(120, Duration::from_secs(30)).await;

    // Retries pending, then accepted but not yet answered, when two replicas stop: the third
    // takes them over. A delivery the endpoint accepted from a replica that died before it
    // heard the answer is sent again: each such duplicate is one takeover of the survivor.
    receiver.fail(true);
    for i in 120..130 {
        sent.insert(emit(&fleet.nodes[i % 3].handler, i).await);
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    receiver.hold_answers(Duration::from_secs(3));
    receiver.fail(false);
    receiver.await_events(130, Duration::from_secs(10)).await;
    for _ in 0..2 {
        fleet.nodes.remove(0).shutdown().await;
    }
    receiver.hold_answers(Duration::ZERO);
    let survivor = &fleet.nodes[0].handler;
    let taken_over = || metric(survivor, "mcp_fleet_webhook_taken_over_total");
    let in_flight: HashSet<String> = receiver.received().iter().skip(120).map(|r| r.id.clone()).collect();
    let duplicates = || receiver.received().len() - receiver.counts().len();
    for _ in 0..200 {
        if taken_over() > 0.0 && duplicates() == taken_over() as usize {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(taken_over() > 0.0, "{}", survivor.metrics_text());
    assert_eq!(duplicates(), taken_over() as usize, "every duplicate is a takeover of an accepted POST");

    let counts = receiver.counts();
    assert_eq!(counts.keys().cloned().collect::<HashSet<_>>(), sent, "every occurrence, nothing else");
    for (id, n) in counts.iter().filter(|(_, n)| **n > 1) {
        assert!(*n == 2 && in_flight.contains(id), "{id} delivered {n} times, not while a replica stopped");
    }
    for r in receiver.received() {
        assert!(r.signed && r.fresh, "a delivery signed and fresh: {r:?}");
        assert_eq!(r.subscription, id);
        assert!(r.body["cursor"].is_string(), "{r:?}");
    }

    // The refresh reports how deliveries went, and keeps the id.
    let client = McpClient::new(fleet.nodes[0].url());
    let refresh = call(&client, "acme", "events/subscribe", subscription(&receiver.url("/hook"), &secret)).await;
    assert_eq!(refresh["result"]["id"], json!(id), "{refresh}");
    let status = &refresh["result"]["deliveryStatus"];
    assert_eq!((status["active"].clone(), status["lastError"].clone()), (json!(true), Value::Null), "{refresh}");
    assert!(status["lastDeliveryAt"].is_string(), "{refresh}");
    fleet.shutdown().await;
}

/// A node with webhooks as `webhooks` sets them (quick), on its own memory bus.
async fn node(webhooks: Webhooks) -> (TestNode, McpClient) {
    let node = TestNode::start(test_server(), options_with(quick(webhooks))).await;
    let client = McpClient::new(node.url());
    (node, client)
}

#[tokio::test]
async fn callbacks_to_addresses_that_are_not_public_are_refused_and_counted() {
    let (node, client) = node(Webhooks::new()).await;
    let secret = new_secret();
    let receiver = Receiver::start(&secret).await;
    let cases = [
        (receiver.url("/hook"), "loopback"),
        ("http://10.1.2.3/hook".to_owned(), "private"),
        ("http://192.168.0.9/hook".to_owned(), "private"),
        ("http://[fe80::1]/hook".to_owned(), "link_local"),
        ("http://169.254.169.254/latest/meta-data".to_owned(), "metadata"),
    ];
    for (url, reason) in &cases {
        let reply = call(&client, "acme", "events/subscribe", subscription(url, &secret)).await;
        assert_eq!(reply["error"]["code"], -32602, "{url}: {reply}");
        assert!(reply["error"]["message"].as_str().unwrap_or("").contains(reason), "{url}: {reply}");
        let counted = metric(&node.handler, &format!("mcp_fleet_webhook_refused_total{{reason=\"{reason}\"}}"));
        assert!(counted >= 1.0, "{reason} counted");
    }
    assert_eq!(receiver.connections(), 0, "nothing connected to the loopback receiver");
    node.shutdown().await;
}

#[tokio::test]
async fn a_name_resolving_elsewhere_at_delivery_time_and_a_redirect_are_refused() {
    let private = Arc::new(AtomicBool::new(false));
    let secret = new_secret();
    let receiver = Receiver::start(&secret).await;
    let port = receiver.addr.port();
    let resolver: Resolver = Arc::new({
        let private = private.clone();
        move |_host, port| {
            let ip = if private.load(Ordering::SeqCst) { [10, 0, 0, 7] } else { [127, 0, 0, 1] };
            Box::pin(async move { Ok(vec![std::net::SocketAddr::from((ip, port))]) })
        }
    });
    let (node, client) = node(Webhooks::new().allow_network(loopback()).resolver(resolver)).await;
    let url = format!("http://hooks.test:{port}/hook");
    let reply = call(&client, "acme", "events/subscribe", subscription(&url, &secret)).await;
    assert!(reply["result"]["id"].is_string(), "verified through the name while it was loopback: {reply}");
    emit(&node.handler, 1).await;
    receiver.await_events(1, Duration::from_secs(10)).await;

    // The name now resolves to a private address: refused at delivery, not connected to.
    private.store(true, Ordering::SeqCst);
    let connections = receiver.connections();
    emit(&node.handler, 2).await;
    let refused = "mcp_fleet_webhook_refused_total{reason=\"private\"}";
    wait_for(|| metric(&node.handler, refused) >= 1.0).await.expect("the private address counted");
    assert_eq!(receiver.counts().len(), 1);

    // Back to loopback, but the endpoint redirects: not followed, counted, retried.
    let target = Receiver::start(&secret).await;
    receiver.redirect(&target.url("/elsewhere"));
    private.store(false, Ordering::SeqCst);
    wait_for(|| metric(&node.handler, "mcp_fleet_webhook_refused_total{reason=\"redirect\"}") >= 1.0)
        .await
        .unwrap_or_else(|()| panic!("no redirect counted: {}", node.handler.metrics_text()));
    assert_eq!(target.connections(), 0, "the redirect's target never reached");
    assert!(receiver.connections() >= connections);
    node.shutdown().await;
}

/// Wait up to 10 s for `done`.
async fn wait_for(done: impl Fn() -> bool) -> Result<(), ()> {
    for _ in 0..200 {
        if done() {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Err(())
}

#[tokio::test]
async fn suspended_deliveries_resume_on_refresh_and_unsubscribe_stops_them() {
    let webhooks = Webhooks::new().allow_network(loopback()).suspend_after(Duration::from_millis(500));
    let (node, client) = node(webhooks).await;
    let secret = new_secret();
    let receiver = Receiver::start(&secret).await;
    let params = subscription(&receiver.url("/hook"), &secret);
    let first = call(&client, "acme", "events/subscribe", params.clone()).await;
    assert!(first["result"].get("deliveryStatus").is_none(), "a new subscription has no status yet: {first}");
    receiver.fail(true);
    emit(&node.handler, 1).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    receiver.fail(false);
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(receiver.counts().len(), 0, "suspended: nothing retried while the endpoint is back");

    let refresh = call(&client, "acme", "events/subscribe", params.clone()).await;
    let status = &refresh["result"]["deliveryStatus"];
    assert_eq!(status["active"], false, "{refresh}");
    assert_eq!(status["lastError"], "http_5xx", "{refresh}");
    assert!(status["failedSince"].is_string(), "{refresh}");
    receiver.await_events(1, Duration::from_secs(10)).await;

    let unsubscribe = json!({"name": "deploy.finished", "delivery": {"url": receiver.url("/hook")}});
    let gone = call(&client, "acme", "events/unsubscribe", unsubscribe.clone()).await;
    assert_eq!(gone["result"], json!({}), "{gone}");
    emit(&node.handler, 2).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(receiver.counts().len(), 1, "nothing after unsubscribe");
    let again = call(&client, "acme", "events/unsubscribe", unsubscribe).await;
    assert_eq!(
        (again["error"]["code"].clone(), again["error"]["data"]["kind"].clone()),
        (json!(-32011), json!("subscription"))
    );
    node.shutdown().await;
}

#[tokio::test]
async fn bad_subscriptions_get_the_designs_errors() {
    let (node, client) = node(Webhooks::new().allow_network(loopback()).max_per_principal(1)).await;
    let secret = new_secret();
    let receiver = Receiver::start(&secret).await;
    let url = receiver.url("/hook");
    let code = |reply: &Value| reply["error"]["code"].as_i64();
    let bad_secret = call(&client, "acme", "events/subscribe", subscription(&url, "whsec_c2hvcnQ=")).await;
    assert_eq!(code(&bad_secret), Some(-32602), "{bad_secret}");
    let no_secret = json!({"name": "deploy.finished", "delivery": {"url": url}});
    assert_eq!(code(&call(&client, "acme", "events/subscribe", no_secret).await), Some(-32602));
    let ftp = call(&client, "acme", "events/subscribe", subscription("ftp://h.example/x", &secret)).await;
    assert_eq!(code(&ftp), Some(-32602), "{ftp}");
    let unknown = json!({"name": "nope", "delivery": {"url": url, "secret": secret}});
    assert_eq!(code(&call(&client, "acme", "events/subscribe", unknown).await), Some(-32011));

    receiver.echo_challenges(false);
    let unverified = call(&client, "acme", "events/subscribe", subscription(&url, &secret)).await;
    assert_eq!(code(&unverified), Some(-32015), "{unverified}");
    assert_eq!(unverified["error"]["data"]["reason"], "challenge_failed");
    receiver.echo_challenges(true);
    let ok = call(&client, "acme", "events/subscribe", subscription(&url, &secret)).await;
    assert!(ok["result"]["id"].is_string(), "{ok}");
    let second = call(&client, "acme", "events/subscribe", subscription(&receiver.url("/other"), &secret)).await;
    assert_eq!(code(&second), Some(-32013), "{second}");
    assert_eq!(second["error"]["data"]["limit"], "subscriptions");
    let other_tenant = call(&client, "globex", "events/subscribe", subscription(&url, &secret)).await;
    assert!(other_tenant["result"]["id"].is_string() && other_tenant["result"]["id"] != ok["result"]["id"]);
    node.shutdown().await;

    // Without an authenticated caller there are no webhooks.
    let events = Events::new()
        .event(EventType::new::<NoArgs, Deployed>("deploy.finished", "A deploy finished"))
        .webhooks(quick(Webhooks::new()));
    let anonymous = TestNode::start(test_server(), HandlerOptions::default().events(events)).await;
    let client = McpClient::new(anonymous.url());
    let reply = client.post(&request(json!(1), "events/subscribe", subscription(&url, &secret))).await.json();
    assert_eq!(code(&reply), Some(-32012), "{reply}");
    anonymous.shutdown().await;
}
