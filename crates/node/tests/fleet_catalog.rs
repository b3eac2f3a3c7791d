//! Fleet-consistent catalogs, end to end: `mcp-fleet` processes on the real Redis, each with
//! its own copy of a catalog file (like pods with their own ConfigMap mounts), edited the way
//! a rollout edits them — one after the other, by a new node replacing old ones, with a node
//! killed halfway, with a broken file on one node. Every listen stream must hear of a new
//! revision exactly once, when the whole fleet serves it (or, past the convergence timeout,
//! once with `converged: false` and again when the fleet agrees). With HAProxy installed,
//! streams and re-lists also go through `deploy/local/haproxy.cfg` in front of the nodes.

mod common;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{LoadBalancer, Node, private_bus};
use mcp_fleet_tests::cluster::{Broker, EVENT_META, unique_name};
use mcp_fleet_tests::faults::procs::TempDir;
use mcp_fleet_tests::{ListenStream, McpClient, eventually};
use serde_json::{Value, json};
use tokio::time::Instant;

/// The catalog every node starts with.
const V1: &str = r#"
[[tools]]
name = "greet"
description = "Greets someone"
input_schema = { type = "object", properties = { name = { type = "string" } }, required = ["name"] }
text = "Hello, {{name}}!"
"#;

/// The edit being rolled out: one more tool.
fn v2() -> String {
    format!("{V1}\n[[tools]]\nname = \"farewell\"\ndescription = \"Says goodbye\"\ntext = \"Goodbye!\"\n")
}

/// The edit after [`v2`]: one more tool again.
fn v3() -> String {
    format!("{}\n[[tools]]\nname = \"thanks\"\ndescription = \"Says thanks\"\ntext = \"Thanks!\"\n", v2())
}

/// An edit that fails validation (the template names an undeclared argument).
fn v2_broken() -> String {
    v2().replace("Goodbye!", "Goodbye, {{nme}}!")
}

/// Membership TTL for these tests (the nodes heartbeat every fifth of it).
const TTL_SECS: u64 = 3;

const NOTIFIED: &str = "notifications/tools/list_changed";

/// Nodes sharing one bus (a fresh Redis stream, hence a fresh membership), each with its own
/// catalog file and log in a temp dir.
struct CatalogFleet {
    dir: TempDir,
    bus: String,
    nodes: Vec<Option<Node>>,
}

impl CatalogFleet {
    /// `count` nodes on Redis serving [`V1`], ready and agreeing; `None` without Redis.
    async fn start(count: usize, extra: &[&str]) -> Option<CatalogFleet> {
        CatalogFleet::start_on(Broker::Redis, count, extra).await
    }

    /// The same on `broker`.
    async fn start_on(broker: Broker, count: usize, extra: &[&str]) -> Option<CatalogFleet> {
        let bus = private_bus(broker).await?;
        let mut fleet = CatalogFleet { dir: TempDir::new("catalog-fleet"), bus, nodes: Vec::new() };
        for _ in 0..count {
            fleet.add_node(V1, extra).await;
        }
        fleet.await_members(count).await;
        Some(fleet)
    }

    /// Start one more node whose catalog file holds `catalog`; its index.
    async fn add_node(&mut self, catalog: &str, extra: &[&str]) -> usize {
        let i = self.nodes.len();
        std::fs::create_dir_all(self.node_dir(i)).expect("node dir");
        self.write_catalog(i, catalog);
        let (catalog, id) = (self.catalog_path(i), format!("node-{i}"));
        let ttl = TTL_SECS.to_string();
        let mut args = vec!["--bus", &self.bus, "--catalog", catalog.to_str().expect("utf-8 path"), "--node-id", &id];
        args.extend(["--membership-ttl-secs", &ttl]);
        args.extend(extra);
        let node = Node::start_logging_to(&args, &self.node_dir(i).join("node.log"));
        node.ready().await;
        self.nodes.push(Some(node));
        i
    }

    fn node_dir(&self, i: usize) -> PathBuf {
        self.dir.path().join(format!("node-{i}"))
    }

    fn catalog_path(&self, i: usize) -> PathBuf {
        self.node_dir(i).join("catalog.toml")
    }

    /// Replace node `i`'s catalog file atomically (write aside, rename over), as a ConfigMap
    /// update swaps its files.
    fn write_catalog(&self, i: usize, text: &str) {
        let aside = self.node_dir(i).join(".catalog.toml.new");
        std::fs::write(&aside, text).expect("write catalog");
        std::fs::rename(&aside, self.catalog_path(i)).expect("swap catalog");
    }

    fn node(&self, i: usize) -> &Node {
        self.nodes[i].as_ref().expect("a running node")
    }

    fn running(&self) -> impl Iterator<Item = &Node> {
        self.nodes.iter().flatten()
    }

    /// Wait until every running node sees `count` members agreeing on the tools list.
    async fn await_members(&self, count: usize) {
        for node in self.running() {
            eventually("the fleet has formed and agrees", Duration::from_secs(15), async || {
                let fleet = fleet_of(node).await;
                let agreed = fleet["lists"]
                    .as_array()
                    .is_some_and(|lists| lists.iter().any(|l| l["list"] == "tools" && l["converged"] == true));
                fleet["members"].as_array().map(Vec::len) == Some(count) && agreed
            })
            .await;
        }
    }

    /// A tools listen stream on node `i`.
    async fn listen(&self, i: usize) -> Heard {
        Heard::listen(&self.node(i).url()).await
    }

    /// The node's log so far.
    fn log(&self, i: usize) -> String {
        std::fs::read_to_string(self.node_dir(i).join("node.log")).unwrap_or_default()
    }
}

/// `GET /admin/fleet` of `node` as JSON (`Null` while it does not answer).
async fn fleet_of(node: &Node) -> Value {
    match node.admin_get("/admin/fleet").await {
        Some((200, body)) => serde_json::from_str(&body).expect("fleet JSON"),
        _ => Value::Null,
    }
}

/// The tool names `tools/list` returns through `url`.
async fn tool_names(url: &str) -> Vec<String> {
    let result = McpClient::new(url.to_owned()).result("tools/list", json!({})).await;
    let tools = result["tools"].as_array().expect("tools");
    tools.iter().map(|t| t["name"].as_str().expect("name").to_owned()).collect()
}

/// A listen stream's notifications with their arrival times, read by a task of its own.
struct Heard {
    log: Arc<Mutex<Vec<(Instant, Value)>>>,
    reader: tokio::task::JoinHandle<()>,
}

impl Heard {
    async fn listen(url: &str) -> Heard {
        let client = McpClient::new(url.to_owned());
        let mut stream = client.listen(json!(unique_name()), json!({"toolsListChanged": true})).await;
        let ack = stream.next_message().await.expect("ack");
        assert_eq!(ack["method"], "notifications/subscriptions/acknowledged", "{ack}");
        Heard::record(stream)
    }

    fn record(mut stream: ListenStream) -> Heard {
        let log: Arc<Mutex<Vec<(Instant, Value)>>> = Arc::default();
        let reader = tokio::spawn({
            let log = log.clone();
            async move {
                while let Some(message) = stream.next_message_within(Duration::from_secs(3600)).await {
                    log.lock().expect("log").push((Instant::now(), message));
                }
            }
        });
        Heard { log, reader }
    }

    /// The tools/list_changed notifications so far: arrival time and the fleet meta.
    fn notifications(&self) -> Vec<(Instant, Value)> {
        let log = self.log.lock().expect("log");
        log.iter()
            .filter(|(_, m)| m["method"] == NOTIFIED)
            .map(|(at, m)| (*at, m["params"]["_meta"][EVENT_META].clone()))
            .collect()
    }

    /// Wait (up to `within`) for the `n`th notification; all of them.
    async fn await_notifications(&self, n: usize, within: Duration) -> Vec<(Instant, Value)> {
        let deadline = Instant::now() + within;
        loop {
            let heard = self.notifications();
            if heard.len() >= n {
                return heard;
            }
            assert!(Instant::now() < deadline, "{n} notification(s) expected within {within:?}, heard {heard:?}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

impl Drop for Heard {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

/// Assert every stream heard exactly `n` notifications (waiting up to `within` for them),
/// then nothing more for `quiet`; the notifications of each stream.
async fn exactly(streams: &[Heard], n: usize, within: Duration, quiet: Duration) -> Vec<Vec<(Instant, Value)>> {
    for stream in streams {
        stream.await_notifications(n, within).await;
    }
    tokio::time::sleep(quiet).await;
    let heard: Vec<_> = streams.iter().map(Heard::notifications).collect();
    for (i, notifications) in heard.iter().enumerate() {
        assert_eq!(notifications.len(), n, "stream {i} heard {notifications:?}");
    }
    heard
}

#[tokio::test]
async fn an_edit_reaching_three_nodes_a_second_apart_is_announced_once_after_the_third() {
    let Some(fleet) = CatalogFleet::start(3, &[]).await else { return };
    edits_a_second_apart(fleet).await;
}

#[tokio::test]
async fn on_nats_an_edit_reaching_three_nodes_a_second_apart_is_announced_once_after_the_third() {
    let Some(fleet) = CatalogFleet::start_on(Broker::Nats, 3, &[]).await else { return };
    edits_a_second_apart(fleet).await;
}

async fn edits_a_second_apart(fleet: CatalogFleet) {
    let lb = LoadBalancer::start([fleet.node(0), fleet.node(1), fleet.node(2)], fleet.dir.path()).await;
    let mut streams = Vec::new();
    for i in 0..3 {
        streams.push(fleet.listen(i).await);
    }
    if let Some(lb) = &lb {
        for _ in 0..3 {
            streams.push(Heard::listen(&lb.url).await);
        }
    }

    let mut third_edit = Instant::now();
    for i in 0..3 {
        third_edit = Instant::now();
        fleet.write_catalog(i, &v2());
        if i < 2 {
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    }
    let heard = exactly(&streams, 1, Duration::from_secs(10), Duration::from_secs(2)).await;
    for (i, notifications) in heard.iter().enumerate() {
        let (at, meta) = &notifications[0];
        assert!(*at >= third_edit, "stream {i} was told before the third node switched");
        assert_eq!(meta["converged"], true, "stream {i}: {meta}");
    }
    for node in fleet.running() {
        assert!(tool_names(&node.url()).await.contains(&"farewell".to_owned()), "{} serves the new tool", node.url());
    }
    if let Some(lb) = &lb {
        for _ in 0..6 {
            assert!(tool_names(&lb.url).await.contains(&"farewell".to_owned()), "every re-list through the LB");
        }
    }
    let fleet_view = fleet_of(fleet.node(0)).await;
    let members = fleet_view["members"].as_array().expect("members");
    assert_eq!(members.len(), 3, "{fleet_view}");
    assert!(members.iter().all(|m| m["lastSeenMsAgo"].as_u64().is_some() && m["openStreams"].as_u64().is_some()));

    // An explicit notify() keeps its immediate behaviour: no convergence involved.
    let admin = format!("http://{}/admin/notify", fleet.node(0).admin);
    let http = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new()).build_http();
    let req = http::Request::post(&admin)
        .body(http_body_util::Full::new(bytes::Bytes::from(r#"{"kind":"tools"}"#)))
        .expect("request");
    let notified = Instant::now();
    assert_eq!(http.request(req).await.expect("notify").status(), 200);
    for (i, stream) in streams.iter().enumerate() {
        let (at, meta) = stream.await_notifications(2, Duration::from_secs(2)).await[1].clone();
        assert!(at - notified < Duration::from_secs(1), "stream {i} heard the explicit notify late");
        assert!(meta["version"].as_u64().is_some(), "stream {i}: a bus event, {meta}");
    }
}

#[tokio::test]
async fn a_rolling_replacement_is_announced_once_when_the_last_old_node_has_left() {
    let Some(mut fleet) = CatalogFleet::start(3, &[]).await else { return };
    let old_streams = [fleet.listen(0).await, fleet.listen(1).await, fleet.listen(2).await];
    let new = fleet.add_node(&v2(), &[]).await;
    let new_stream = fleet.listen(new).await;
    let mut last_left = Instant::now();
    for i in 0..3 {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let mut node = fleet.nodes[i].take().expect("old node");
        // Leaving the membership is the first thing a node does on SIGTERM.
        last_left = Instant::now();
        node.terminate();
        assert_eq!(node.exited(Duration::from_secs(15)).await, Some(0), "node {i} drained");
        if i < 2 {
            assert!(new_stream.notifications().is_empty(), "told while old node(s) still serve the old catalog");
        }
    }
    let heard = exactly(std::slice::from_ref(&new_stream), 1, Duration::from_secs(10), Duration::from_secs(2)).await;
    let (at, meta) = &heard[0][0];
    assert!(*at >= last_left, "told before the last old node left");
    // Told because it left, not because its membership expired: that takes at least 4/5 of
    // the TTL after its last heartbeat (a fifth of the TTL apart, the last one before SIGTERM).
    let after = *at - last_left;
    assert!(
        after < Duration::from_secs(TTL_SECS) * 4 / 5 - Duration::from_millis(300),
        "told {after:?} after the last old node's SIGTERM: it did not leave, its membership expired"
    );
    assert_eq!(meta["converged"], true, "{meta}");
    for (i, stream) in old_streams.iter().enumerate() {
        assert!(stream.notifications().is_empty(), "old node {i}'s stream was told of a split fleet");
    }
}

#[tokio::test]
async fn a_node_killed_in_the_middle_of_a_change_is_waited_for_until_its_ttl() {
    let Some(mut fleet) = CatalogFleet::start(3, &[]).await else { return };
    let streams = [fleet.listen(0).await, fleet.listen(1).await];
    fleet.write_catalog(0, &v2());
    fleet.write_catalog(1, &v2());
    for i in 0..2 {
        let url = fleet.node(i).url();
        eventually("the edited nodes serve the new catalog", Duration::from_secs(10), async || {
            tool_names(&url).await.contains(&"farewell".to_owned())
        })
        .await;
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(streams.iter().all(|s| s.notifications().is_empty()), "told while node 2 serves the old catalog");

    fleet.nodes[2].as_mut().expect("node 2").kill();
    let killed = Instant::now();
    let heard = exactly(&streams, 1, Duration::from_secs(TTL_SECS + 5), Duration::from_secs(2)).await;
    for notifications in &heard {
        let (at, meta) = &notifications[0];
        let waited = *at - killed;
        // Its last heartbeat was at most a fifth of the TTL before the kill.
        assert!(waited >= Duration::from_secs(TTL_SECS) * 4 / 5 - Duration::from_millis(300), "after {waited:?}");
        assert_eq!(meta["converged"], true, "{meta}");
    }
}

#[tokio::test]
async fn an_invalid_file_on_one_node_times_out_naming_it_then_converges_once_fixed() {
    let Some(fleet) = CatalogFleet::start(3, &["--convergence-timeout-secs", "4"]).await else { return };
    let streams = [fleet.listen(0).await, fleet.listen(1).await, fleet.listen(2).await];
    let edited = Instant::now();
    fleet.write_catalog(0, &v2());
    fleet.write_catalog(1, &v2());
    fleet.write_catalog(2, &v2_broken());

    let heard = exactly(&streams, 1, Duration::from_secs(12), Duration::from_millis(500)).await;
    for notifications in &heard {
        let (at, meta) = &notifications[0];
        assert!(*at - edited >= Duration::from_millis(3500), "told before the timeout ({:?})", *at - edited);
        assert_eq!(meta["converged"], false, "{meta}");
    }
    assert!(!tool_names(&fleet.node(2).url()).await.contains(&"farewell".to_owned()), "node 2 kept its catalog");
    let (_, metrics) = fleet.node(2).admin_get("/metrics").await.expect("metrics");
    assert!(metrics.contains("mcp_fleet_catalog_reload_failures_total 1"), "{metrics}");
    let log = fleet.log(0);
    let warning = log.lines().find(|l| l.contains("did not converge")).unwrap_or_else(|| panic!("no warning:\n{log}"));
    assert!(warning.contains("node-2"), "the warning names the laggard: {warning}");
    assert!(fleet.log(2).contains("undeclared argument"), "node 2 logged why its file was refused");

    fleet.write_catalog(2, &v2());
    let heard = exactly(&streams, 2, Duration::from_secs(10), Duration::from_secs(1)).await;
    for notifications in &heard {
        assert_eq!(notifications[1].1["converged"], true, "told again once the fleet agrees");
    }
}

/// Write `catalog` on nodes 0 and 1 (node 2 lags): every stream hears its `n`th
/// notification, `converged: false`, once the 4 s convergence timeout passed.
async fn edit_two_past_a_laggard(
    fleet: &CatalogFleet,
    streams: &[Heard],
    catalog: &str,
    n: usize,
) -> Vec<Vec<(Instant, Value)>> {
    let edited = Instant::now();
    fleet.write_catalog(0, catalog);
    fleet.write_catalog(1, catalog);
    let heard = exactly(streams, n, Duration::from_secs(12), Duration::from_millis(500)).await;
    for notifications in &heard {
        let (at, meta) = &notifications[n - 1];
        assert!(*at - edited >= Duration::from_millis(3500), "told before the timeout ({:?})", *at - edited);
        assert_eq!(meta["converged"], false, "{meta}");
    }
    heard
}

#[tokio::test]
async fn a_stuck_replica_does_not_silence_later_revisions() {
    let Some(fleet) = CatalogFleet::start(3, &["--convergence-timeout-secs", "4"]).await else { return };
    let streams = [fleet.listen(0).await, fleet.listen(1).await, fleet.listen(2).await];
    // Node 2 refuses every file from now on and keeps serving V1.
    fleet.write_catalog(2, &v2_broken());
    let heard = edit_two_past_a_laggard(&fleet, &streams, &v2(), 1).await;
    // Revision 3 lands on the same two: announced too, after its own timeout.
    let heard3 = edit_two_past_a_laggard(&fleet, &streams, &v3(), 2).await;
    for (notifications, first) in heard3.iter().zip(&heard) {
        assert_ne!(notifications[1].1["revision"], first[0].1["revision"], "a new revision: {notifications:?}");
    }
    for i in 0..2 {
        assert!(tool_names(&fleet.node(i).url()).await.contains(&"thanks".to_owned()), "node {i} serves revision 3");
    }
    assert!(!tool_names(&fleet.node(2).url()).await.contains(&"farewell".to_owned()), "node 2 stays behind");

    // The laggard catches up: once more, converged.
    fleet.write_catalog(2, &v3());
    let heard = exactly(&streams, 3, Duration::from_secs(10), Duration::from_secs(1)).await;
    for notifications in &heard {
        assert_eq!(notifications[2].1["converged"], true, "told again once the fleet agrees");
        assert_eq!(notifications[2].1["revision"], notifications[1].1["revision"], "on revision 3");
    }
}

#[tokio::test]
async fn an_invalid_catalog_file_at_start_is_fatal_with_its_position() {
    let dir = TempDir::new("catalog-invalid");
    let path = dir.path().join("catalog.toml");
    std::fs::write(&path, v2_broken()).expect("write");
    let log = dir.path().join("node.log");
    let mut node = Node::start_logging_to(&["--catalog", path.to_str().expect("utf-8")], &log);
    let code = node.exited(Duration::from_secs(10)).await;
    assert!(code.is_some_and(|c| c != 0), "exit code {code:?}");
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(text.contains("catalog.toml:") && text.contains("undeclared argument \"nme\""), "{text}");
}
