//! The fault suite's harness: a fleet of nodes with recorded listen streams (and 2025-era
//! session GET streams) on private brokers
//! ([`procs`]), and the scenarios every fault goes through ([`run_scenarios`]):
//!
//! 1. continuous publishing from every node, with the fault in the middle;
//! 2. a single publish 0, 300 and 1500 ms after the fault, retried while `notify()` errors.
//!
//! A listen stream its node ends with the completion result (deaf past `bus_down_grace`, as a
//! long failover under load can make it) is opened again as a client would, and the client's
//! new list counts as the invalidation of everything sent before it ([`record`]).
//!
//! After each, the invariant of [`record`] is checked on every stream of every node, every node
//! must answer HTTP and hear the bus again, and the counters that explain what happened are
//! printed. Tests read like the list: one fault per test, its brokers its own.

pub mod endable;
pub mod procs;
pub mod record;
pub mod redis_cluster;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_fleet_bus::ServerEventBus;
use mcp_fleet_server::{HandlerOptions, Notifier};
use serde_json::json;
use tokio::time::Instant;

use crate::cluster::{FOLLOWED, follow_all, publish_kind};
use crate::legacy::LegacySession;
use crate::{McpClient, TestNode, WAIT, request, test_server};
use record::{Accepted, Reopen, StreamRecord, assert_all_covered};

/// Listen streams per node (30 across a 3-node fleet, as in the issue).
pub const STREAMS_PER_NODE: usize = 10;
/// 2025-era GET streams per node, each of its own session subscribed to `test://a`: they hear
/// the same events through the same intake, and are held to the same invariant.
pub const LEGACY_STREAMS_PER_NODE: usize = 2;
/// How long delivery (or a gap) may take after a publish, faults included.
pub const DELIVERY_WAIT: Duration = Duration::from_secs(30);
/// Pause between one node's publishes in continuous mode.
const PUBLISH_EVERY: Duration = Duration::from_millis(20);

/// A fault the scenarios can inject.
pub trait Fault {
    /// Break something; returns once the fault happened.
    fn inject(&mut self, fleet: &FaultFleet) -> impl Future<Output = ()>;
    /// Bring the brokers back to a steady state for the next scenario.
    fn settle(&mut self, fleet: &FaultFleet) -> impl Future<Output = ()>;
}

/// Nodes on private brokers, each with [`STREAMS_PER_NODE`] recorded listen streams following
/// every kind in [`FOLLOWED`], and [`LEGACY_STREAMS_PER_NODE`] session GET streams following
/// the same.
pub struct FaultFleet {
    /// The nodes.
    pub nodes: Vec<TestNode>,
    /// Every listen stream.
    pub streams: Vec<StreamRecord>,
    accepted: Mutex<Vec<Accepted>>,
}

impl FaultFleet {
    /// Start one node per bus and open the streams (half HTTP/1.1, half h2c).
    pub async fn start(buses: Vec<Arc<dyn ServerEventBus>>) -> FaultFleet {
        Self::start_with(buses, |options| options).await
    }

    /// The same, with every node's options passed through `configure` first.
    pub async fn start_with(
        buses: Vec<Arc<dyn ServerEventBus>>,
        configure: impl Fn(HandlerOptions) -> HandlerOptions,
    ) -> FaultFleet {
        let mut nodes = Vec::new();
        for (i, bus) in buses.into_iter().enumerate() {
            let options = configure(HandlerOptions::default().node_id(format!("node-{i}")).bus(bus));
            nodes.push(TestNode::start(test_server(), options).await);
        }
        let mut streams = Vec::new();
        for (i, node) in nodes.iter().enumerate() {
            for j in 0..STREAMS_PER_NODE {
                let client = if j % 2 == 0 { McpClient::new(node.url()) } else { McpClient::h2c(node.url()) };
                let reopen = Reopen { client, id: json!(format!("s{i}-{j}")), filter: follow_all() };
                let mut stream = reopen.client.listen(reopen.id.clone(), reopen.filter.clone()).await;
                let ack = stream.next_message().await.expect("ack");
                assert_eq!(ack["method"], "notifications/subscriptions/acknowledged", "{ack}");
                streams.push(StreamRecord::reopening(i, stream, reopen));
            }
            for j in 0..LEGACY_STREAMS_PER_NODE {
                let client = if j % 2 == 0 { McpClient::new(node.url()) } else { McpClient::h2c(node.url()) };
                let session = LegacySession::open(&client, json!({})).await;
                session.result(&client, "resources/subscribe", json!({"uri": "test://a"})).await;
                let stream = session.stream(&client, None).await;
                assert_eq!(stream.status, http::StatusCode::OK, "node {i} opens a session stream");
                streams.push(StreamRecord::start(i, stream));
            }
        }
        FaultFleet { nodes, streams, accepted: Mutex::default() }
    }

    /// How many times listen streams were ended with their completion result (their node deaf
    /// past its grace period) and opened again, over the whole fleet.
    pub fn reopened(&self) -> usize {
        self.streams.iter().map(StreamRecord::reopened).sum()
    }

    /// How many completion results listen streams got, over the whole fleet.
    pub fn completed(&self) -> usize {
        self.streams.iter().map(StreamRecord::completed).sum()
    }

    /// Every node's notifier.
    pub fn notifiers(&self) -> Vec<Notifier> {
        self.nodes.iter().map(|n| n.handler.notify()).collect()
    }

    /// Publish one change of `FOLLOWED[kind]` through `node`, retrying while `notify()`
    /// errors (up to [`DELIVERY_WAIT`]); the accepted publish is recorded.
    pub async fn publish_until_accepted(&self, node: usize, kind: usize) -> Accepted {
        let notifier = self.nodes[node].handler.notify();
        let deadline = Instant::now() + DELIVERY_WAIT;
        loop {
            let sent = Instant::now();
            match publish_kind(&notifier, kind).await {
                Ok(event) => {
                    let accepted = Accepted::of(sent, kind, &event);
                    self.accepted.lock().expect("accepted").push(accepted);
                    return accepted;
                }
                Err(err) => {
                    assert!(Instant::now() < deadline, "node {node} could not publish for {DELIVERY_WAIT:?}: {err}")
                }
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Publish from every node at once (kinds round robin) until `during` completes; returns
    /// how many publishes were accepted and how many failed (failures are the caller's to
    /// retry, as an application would; they are not part of the invariant).
    pub async fn publish_during(&self, during: impl Future<Output = ()>) -> (usize, usize) {
        let stop = tokio::sync::watch::channel(false);
        let publishers: Vec<_> = self
            .notifiers()
            .into_iter()
            .enumerate()
            .map(|(node, notifier)| {
                let stop = stop.1.clone();
                tokio::spawn(async move {
                    let (mut accepted, mut failures) = (Vec::new(), 0);
                    for n in 0.. {
                        if *stop.borrow() {
                            break;
                        }
                        let kind = (n + node) % FOLLOWED.len();
                        let sent = Instant::now();
                        match publish_kind(&notifier, kind).await {
                            Ok(e) => accepted.push(Accepted::of(sent, kind, &e)),
                            Err(_) => failures += 1,
                        }
                        tokio::time::sleep(PUBLISH_EVERY).await;
                    }
                    (accepted, failures)
                })
            })
            .collect();
        during.await;
        let _ = stop.0.send(true);
        let (mut count, mut failed) = (0, 0);
        for publisher in publishers {
            let (accepted, failures) = publisher.await.expect("publisher task");
            count += accepted.len();
            failed += failures;
            self.accepted.lock().expect("accepted").extend(accepted);
        }
        (count, failed)
    }

    /// Check the invariant for every publish accepted since the last check.
    pub async fn assert_delivered(&self) {
        let nodes: Vec<usize> = (0..self.nodes.len()).collect();
        self.assert_delivered_on(&nodes).await;
    }

    /// The same on the streams of `nodes` only.
    pub async fn assert_delivered_on(&self, nodes: &[usize]) {
        let accepted = std::mem::take(&mut *self.accepted.lock().expect("accepted"));
        assert!(!accepted.is_empty(), "the scenario accepted no publish at all");
        let streams: Vec<&StreamRecord> = self.streams.iter().filter(|s| nodes.contains(&s.node)).collect();
        assert_all_covered(&streams, &accepted, DELIVERY_WAIT).await;
    }

    /// After a fault that loses nothing (a connection kill, a restart with the store, the loss
    /// of one replica of three): no node reported a gap and no stream heard one.
    pub fn assert_no_gaps(&self) {
        assert_eq!(self.counter("mcp_fleet_bus_gaps"), 0, "a lossless fault reported gaps: {}", self.counters_line());
        for (i, stream) in self.streams.iter().enumerate() {
            assert_eq!(stream.gaps(), 0, "stream {i} (node {}) heard a gap:\n{}", stream.node, stream.recent(6));
        }
    }

    /// Every node hears the bus again (within `within`) and answers `tools/list`.
    pub async fn assert_nodes_healthy(&self, within: Duration) {
        for (i, node) in self.nodes.iter().enumerate() {
            let what = format!("node {i} hears the bus again");
            crate::eventually(&what, within, || async { node.handler.bus_health().connected }).await;
            let reply = McpClient::new(node.url()).post(&request(json!(1), "tools/list", json!({}))).await;
            assert_eq!(reply.status, http::StatusCode::OK, "node {i} answers tools/list");
            assert!(node.handler.metrics_text().contains("mcp_fleet_bus_connected 1"), "node {i} reports connected");
        }
    }

    /// The sum over nodes of the counter `name` (its `_total` sample in `/metrics`).
    pub fn counter(&self, name: &str) -> u64 {
        self.nodes.iter().map(|n| metric(&n.handler.metrics_text(), name)).sum()
    }

    /// A one-line summary of the counters that explain a fault.
    pub fn counters_line(&self) -> String {
        let names = [
            "mcp_fleet_bus_gaps",
            "mcp_fleet_bus_reconnects",
            "mcp_fleet_bus_backend_consumer_restarts",
            "mcp_fleet_bus_consumer_restarts",
            "mcp_fleet_bus_publish_failures",
            "mcp_fleet_bus_duplicates_dropped",
        ];
        let counters = names.iter().map(|n| format!("{}={}", n.trim_start_matches("mcp_fleet_"), self.counter(n)));
        counters.chain([format!("listens_reopened={}", self.reopened())]).collect::<Vec<_>>().join(" ")
    }

    /// Shut every node down.
    pub async fn shutdown(self) {
        // The readers stop first: a node shutting down ends its listens with their completion
        // result, which a reader would answer by reopening them on a node that is gone.
        let FaultFleet { nodes, streams, .. } = self;
        drop(streams);
        for node in nodes {
            node.shutdown().await;
        }
    }
}

/// The value of the counter `name` (`<name>_total <n>`) in OpenMetrics `text`, 0 if absent.
pub fn metric(text: &str, name: &str) -> u64 {
    let prefix = format!("{name}_total ");
    text.lines().find_map(|l| l.strip_prefix(&prefix)).and_then(|v| v.trim().parse().ok()).unwrap_or(0)
}

/// Run every scenario of the module docs against `fault`, labelled `label` in the output.
pub async fn run_scenarios(label: &str, fleet: &FaultFleet, fault: &mut impl Fault) {
    let started = Instant::now();
    let during = async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        fault.inject(fleet).await;
        fault.settle(fleet).await;
        tokio::time::sleep(Duration::from_millis(300)).await;
    };
    let (accepted, failed) = fleet.publish_during(during).await;
    fleet.assert_delivered().await;
    fleet.assert_nodes_healthy(WAIT * 2).await;
    println!("{label}: continuous: {accepted} accepted, {failed} failed and retried; {}", fleet.counters_line());
    for (n, delay) in [0u64, 300, 1500].into_iter().enumerate() {
        fault.inject(fleet).await;
        tokio::time::sleep(Duration::from_millis(delay)).await;
        let accepted = fleet.publish_until_accepted(n % fleet.nodes.len(), n % FOLLOWED.len()).await;
        fleet.assert_delivered().await;
        fault.settle(fleet).await;
        fleet.assert_nodes_healthy(WAIT * 2).await;
        let (kind, epoch, version) = (FOLLOWED[accepted.kind], accepted.epoch, accepted.version);
        println!(
            "{label}: publish {delay} ms after the fault ({kind} {epoch}/{version}): delivered or invalidated everywhere"
        );
    }
    println!("{label}: all scenarios passed in {:?}; {}", started.elapsed(), fleet.counters_line());
}
