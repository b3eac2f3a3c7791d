//! The `mcp-fleet` binary as an operator runs it: probes that tell the truth while the bus
//! connects, blinks or is gone; streams up to `--max-streams` under a low soft file limit; and a
//! SIGTERM that ends the process within the drain deadline even when a client stopped reading.

mod common;

use std::time::Duration;

use common::{Node, free_addr};

use mcp_fleet_tests::cluster::{Broker, broker_or_skip, unique_name};
use mcp_fleet_tests::proxy::CuttableProxy;
use mcp_fleet_tests::{McpClient, eventually};
use serde_json::json;
use tokio::time::Instant;

#[tokio::test]
async fn both_ports_answer_while_the_bus_connect_is_retried_and_readiness_waits_for_it() {
    let nowhere = free_addr();
    let node = Node::start(&["--bus", &format!("redis://{nowhere}/0"), "--bus-connect-secs", "30"], None);
    eventually("the admin port answers", Duration::from_secs(10), async || node.probe("/livez").await == Some(200))
        .await;
    assert_eq!(node.probe("/healthz").await, Some(200));
    assert_eq!(node.probe("/readyz").await, Some(503), "not ready before the bus is connected");
    assert!(tokio::net::TcpStream::connect(node.mcp).await.is_ok(), "the MCP port is bound");
}

#[tokio::test]
async fn readiness_rides_out_a_bus_blip_shorter_than_the_grace_and_fails_after_it() {
    let Some(url) = broker_or_skip(Broker::Redis).await else { return };
    let upstream = url.trim_start_matches("redis://").split('/').next().expect("host:port").to_owned();
    let proxy =
        CuttableProxy::start(tokio::net::lookup_host(&upstream).await.expect("resolve").next().expect("addr")).await;
    let bus = format!("redis://{}/0?stream=mcp-fleet-test:{}", proxy.addr, unique_name());
    let node = Node::start(&["--bus", &bus, "--ready-bus-grace-secs", "2"], None);
    eventually("the node is ready", Duration::from_secs(15), async || node.probe("/readyz").await == Some(200)).await;

    proxy.cut();
    let blip_end = Instant::now() + Duration::from_millis(1200);
    while Instant::now() < blip_end {
        assert_eq!(node.probe("/readyz").await, Some(200), "a blip shorter than the grace drains nobody");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    proxy.restore();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(node.probe("/readyz").await, Some(200));

    proxy.cut();
    eventually("readiness fails past the grace", Duration::from_secs(10), async || {
        node.probe("/readyz").await == Some(503)
    })
    .await;
    assert_eq!(node.probe("/livez").await, Some(200), "liveness never depends on the bus");
    proxy.restore();
    eventually("ready again once the bus is back", Duration::from_secs(15), async || {
        node.probe("/readyz").await == Some(200)
    })
    .await;
}

#[tokio::test]
async fn streams_open_up_to_max_streams_under_a_low_soft_file_limit() {
    let node = Node::start(&["--max-streams", "100"], Some(64));
    eventually("the node is ready", Duration::from_secs(10), async || node.probe("/readyz").await == Some(200)).await;
    let client = McpClient::new(node.url());
    let mut streams = Vec::new();
    for i in 0..100 {
        let mut stream = client.listen(json!(i), json!({"toolsListChanged": true})).await;
        let ack = stream.next_message().await.unwrap_or_else(|| panic!("stream {i} was not acknowledged"));
        assert_eq!(ack["method"], "notifications/subscriptions/acknowledged", "stream {i}");
        streams.push(stream);
    }
    assert_eq!(node.probe("/livez").await, Some(200), "the node still answers its probes");
}

#[tokio::test]
async fn sigterm_ends_the_process_within_the_deadline_even_with_a_reader_that_stopped_reading() {
    let mut node = Node::start(&["--shutdown-secs", "2"], None);
    eventually("the node is ready", Duration::from_secs(10), async || node.probe("/readyz").await == Some(200)).await;
    // An HTTP/2 listen stream whose body is never read: once its flow-control window is full,
    // the server cannot write even the completion result.
    let uris: Vec<String> = (0..1000).map(|i| format!("demo://stalled/{i}")).collect();
    let h2 = McpClient::h2c(node.url());
    let body = mcp_fleet_tests::request(
        json!("stalled"),
        "subscriptions/listen",
        json!({"notifications": {"resourceSubscriptions": uris}}),
    );
    let stalled = h2.send_raw("POST", &McpClient::standard_headers(&body), serde_json::to_vec(&body).unwrap()).await;
    let admin = format!("http://{}/admin/notify", node.admin);
    let http = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new()).build_http();
    for uri in &uris {
        let notify = json!({"kind": "resource", "uri": uri}).to_string();
        let req = http::Request::post(&admin).body(http_body_util::Full::new(bytes::Bytes::from(notify))).unwrap();
        let resp = http.request(req).await.expect("notify");
        assert_eq!(resp.status(), 200);
    }
    let started = Instant::now();
    node.terminate();
    let code = node.exited(Duration::from_secs(10)).await;
    let took = started.elapsed();
    assert_eq!(code, Some(0), "a clean exit");
    assert!(took < Duration::from_secs(5), "exited {took:?} after SIGTERM with a 2 s deadline");
    drop(stalled);
}
