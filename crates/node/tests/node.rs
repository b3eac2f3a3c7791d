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
    // The bus reconnects with backoff: once it has, the node is (still) ready. A fixed sleep
    // here raced the grace (2 s from the cut) whenever the reconnect took over 0.8 s.
    eventually("ready after the blip", Duration::from_secs(10), async || node.probe("/readyz").await == Some(200))
        .await;

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

#[tokio::test]
async fn the_listen_budget_flags_bound_what_one_listen_may_subscribe_to() {
    let node = Node::start(&["--max-uris-per-listen", "2", "--max-uri-bytes", "40", "--listen-uris-must-exist"], None);
    eventually("the node is ready", Duration::from_secs(10), async || node.probe("/readyz").await == Some(200)).await;
    let client = McpClient::new(node.url());
    let refusal = async |uris: &[&str]| {
        let body = mcp_fleet_tests::request(
            json!("l"),
            "subscriptions/listen",
            json!({"notifications": {"resourceSubscriptions": uris}}),
        );
        let reply = client.post_with(&body, &McpClient::standard_headers(&body)).await;
        assert_eq!(reply.error_code(), Some(-32602), "{uris:?}: {}", reply.json());
        reply.json()["error"].clone()
    };
    let too_many = refusal(&["fleet://items/1", "fleet://items/2", "fleet://items/3"]).await;
    assert!(too_many["message"].as_str().unwrap_or_default().contains('2'), "{too_many}");
    let long = format!("fleet://items/{}", "9".repeat(40));
    let too_long = refusal(&[long.as_str()]).await;
    assert!(too_long["message"].as_str().unwrap_or_default().contains("limit is 40"), "{too_long}");
    let unknown = refusal(&["fleet://items/1", "nowhere://x"]).await;
    assert_eq!(unknown["data"]["unknownUris"], json!(["nowhere://x"]));
    let mut known = client.listen(json!("ok"), json!({"resourceSubscriptions": ["fleet://items/1"]})).await;
    let ack = known.next_message().await.expect("ack");
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged", "{ack}");
}

/// Every `MCP_FLEET_*` variable the chart and the manifests set is one the node reads: a
/// renamed flag must not leave a deployment silently setting nothing.
#[test]
fn the_chart_and_the_manifests_only_set_variables_the_node_reads() {
    let help = std::process::Command::new(env!("CARGO_BIN_EXE_mcp-fleet")).arg("--help").output().expect("--help");
    let help = String::from_utf8_lossy(&help.stdout).into_owned();
    let read = env_names(&help);
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut unknown = Vec::new();
    for dir in ["helm", "deploy"] {
        for file in files_under(&root.join(dir)) {
            let text = std::fs::read_to_string(&file).unwrap_or_default();
            // Lines that are comments may mention variables Kubernetes itself would set.
            let code: String = text.lines().filter(|l| !l.trim_start().starts_with('#')).collect::<Vec<_>>().join("\n");
            for name in env_names(&code) {
                if !read.contains(&name) && !name.ends_with('_') {
                    unknown.push(format!("{}: {name}", file.display()));
                }
            }
        }
    }
    assert!(unknown.is_empty(), "variables the node does not read:\n{}", unknown.join("\n"));
}

fn env_names(text: &str) -> std::collections::BTreeSet<String> {
    let mut names = std::collections::BTreeSet::new();
    let mut rest = text;
    while let Some(at) = rest.find("MCP_FLEET_") {
        let tail = &rest[at..];
        let end =
            tail.find(|c: char| !(c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')).unwrap_or(tail.len());
        names.insert(tail[..end].to_owned());
        rest = &tail[end..];
    }
    names
}

fn files_under(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).expect("read dir").flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(files_under(&path));
        } else {
            out.push(path);
        }
    }
    out
}
