//! NATS JetStream faults, each on private nats-server processes (never the shared 4222): a
//! server restart (with its store), the stream rolled back within its epoch (a restored
//! snapshot of the store), the stream deleted, and one server of a 3-server cluster (stream
//! with 3 replicas) killed. Each runs the scenarios of `mcp_fleet_tests::faults` —
//! continuous publishing across the fault, then single publishes 0, 300 and 1500 ms after it —
//! and checks on every stream of every node that each accepted change arrived or was
//! invalidated by a gap, that the nodes keep answering, and that the counters tell what
//! happened. One more pins the rollback case those scenarios reach only when a consumer lags:
//! an event acknowledged to a node and lost before its consumer read it.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use mcp_fleet_bus::{BusItem, Change, EventKind, ServerEventBus};
use mcp_fleet_bus_nats::{NatsBus, NatsBusOptions};
use mcp_fleet_tests::faults::procs::{NatsCluster, NatsServer, TempDir};
use mcp_fleet_tests::faults::{Fault, FaultFleet, run_scenarios};
use mcp_fleet_tests::{WAIT, eventually};

const STREAM: &str = "MCP_FLEET_FAULTS";

/// A node's bus at `url`, with timeouts short enough for a test to see recovery quickly.
async fn bus(url: &str, node: usize) -> Arc<dyn ServerEventBus> {
    let mut options = NatsBusOptions::from_url(url, &format!("node-{node}")).expect("url");
    options.stream_name = STREAM.into();
    options.publish_timeout = Duration::from_secs(1);
    options.reconnect_min = Duration::from_millis(50);
    options.reconnect_max = Duration::from_millis(500);
    options.health_interval = Duration::from_millis(250);
    Arc::new(NatsBus::connect(options).await.expect("connect to the private nats"))
}

async fn buses(url: &str) -> Vec<Arc<dyn ServerEventBus>> {
    let mut out = Vec::new();
    for i in 0..3 {
        out.push(bus(url, i).await);
    }
    out
}

/// A crash and a restart on the same store directory: the stream survives, consumers do not.
struct Restart(NatsServer);

impl Fault for Restart {
    async fn inject(&mut self, _: &FaultFleet) {
        self.0.kill();
        tokio::time::sleep(Duration::from_millis(200)).await;
        self.0.restart().await;
    }

    async fn settle(&mut self, _: &FaultFleet) {}
}

#[tokio::test]
async fn a_server_restart() {
    let dir = TempDir::new("nats-restart");
    let server = NatsServer::start(dir.path()).await;
    let fleet = FaultFleet::start(buses(&server.url()).await).await;
    run_scenarios("nats restart", &fleet, &mut Restart(server)).await;
    // The stream survived: nothing to invalidate; every node resumed after its last sequence.
    fleet.assert_no_gaps();
    assert!(fleet.counter("mcp_fleet_bus_reconnects") >= 3 * 4, "{}", fleet.counters_line());
    fleet.shutdown().await;
}

/// The stream loses its tail but keeps its creation time — a restored volume snapshot, `nats
/// stream restore`, a host crash before fsync: the store is copied while the server is down,
/// the consumers are moved past that point, and the copy is put back.
struct RolledBack {
    server: NatsServer,
    snapshot: PathBuf,
}

impl RolledBack {
    /// Stop the server, let `with_store` work on the stopped store, start it again.
    async fn offline(&mut self, with_store: impl FnOnce(&Path, &Path)) {
        self.server.kill();
        tokio::time::sleep(Duration::from_millis(100)).await;
        with_store(&self.server.store, &self.snapshot);
        self.server.restart().await;
    }
}

fn copy_dir(from: &Path, to: &Path) {
    let _ = std::fs::remove_dir_all(to);
    let copied = std::process::Command::new("cp").arg("-a").arg(from).arg(to).status().expect("cp");
    assert!(copied.success(), "copy {} to {}", from.display(), to.display());
}

impl Fault for RolledBack {
    async fn inject(&mut self, fleet: &FaultFleet) {
        self.offline(copy_dir).await;
        // Every consumer reads past the snapshot: those messages are delivered, then lost.
        for kind in 0..3 {
            fleet.publish_until_accepted(kind % fleet.nodes.len(), kind).await;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
        self.offline(|store, snapshot| copy_dir(snapshot, store)).await;
    }

    async fn settle(&mut self, _: &FaultFleet) {}
}

#[tokio::test]
async fn the_stream_rolled_back_within_its_epoch() {
    let dir = TempDir::new("nats-rollback");
    let server = NatsServer::start(dir.path()).await;
    let fleet = FaultFleet::start(buses(&server.url()).await).await;
    let epoch = fleet.publish_until_accepted(0, 0).await.epoch;
    let mut fault = RolledBack { server, snapshot: dir.path().join("snapshot") };
    run_scenarios("nats stream rolled back", &fleet, &mut fault).await;
    // Same epoch (the creation time survived), yet each rollback is a gap on every node.
    assert_eq!(fleet.publish_until_accepted(0, 0).await.epoch, epoch, "the rollback kept the stream's epoch");
    fleet.assert_delivered().await;
    assert!(fleet.counter("mcp_fleet_bus_gaps") >= 3 * 4, "{}", fleet.counters_line());
    fleet.shutdown().await;
}

/// A node published an event the stream then lost, and its consumer never read it (one still
/// reconnecting after the restart that restored the store; here, one started after it): the
/// stream ends where that consumer is, so only the node's record of what was acknowledged to
/// it tells. Its consumer reports the gap at its first look at the stream, not at the node's
/// next publish (which may never come).
#[tokio::test]
async fn an_acknowledged_event_lost_before_this_node_read_it_is_a_gap_without_a_publish() {
    let dir = TempDir::new("nats-lost-unread");
    let server = NatsServer::start(dir.path()).await;
    let node = bus(&server.url(), 0).await;
    let tools = || Change::list(EventKind::ToolsListChanged);
    let kept = node.publish(tools()).await.expect("publish before the snapshot");
    let mut store = RolledBack { server, snapshot: dir.path().join("snapshot") };
    store.offline(copy_dir).await;
    let lost = until_ok("publish accepted", async || node.publish(tools()).await).await;
    assert!(lost.version > kept.version, "{lost:?} after {kept:?}");
    store.offline(|store, snapshot| copy_dir(snapshot, store)).await;
    let mut stream = until_ok("subscription", async || node.subscribe().await).await;
    let first = tokio::time::timeout(WAIT, stream.next()).await.expect("an item in time").expect("stream open");
    assert!(matches!(first, BusItem::Gap(_)), "the lost event is a gap first, got {first:?}");
}

/// `attempt` retried every 50 ms while the (restarting) server refuses, for up to [`WAIT`].
async fn until_ok<T, E: std::fmt::Display>(what: &str, mut attempt: impl AsyncFnMut() -> Result<T, E>) -> T {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        match attempt().await {
            Ok(done) => return done,
            Err(e) => assert!(tokio::time::Instant::now() < deadline, "no {what} within {WAIT:?}: {e}"),
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// An operator's `nats stream rm`: the stream and its consumers are gone.
struct StreamDeleted(async_nats::jetstream::Context);

impl Fault for StreamDeleted {
    async fn inject(&mut self, _: &FaultFleet) {
        self.0.delete_stream(STREAM).await.expect("delete the stream");
    }

    async fn settle(&mut self, _: &FaultFleet) {
        let js = &self.0;
        eventually("some node recreated the stream", WAIT, || async move { js.get_stream(STREAM).await.is_ok() }).await;
    }
}

#[tokio::test]
async fn the_stream_deleted() {
    let dir = TempDir::new("nats-delete");
    let server = NatsServer::start(dir.path()).await;
    let fleet = FaultFleet::start(buses(&server.url()).await).await;
    let admin = async_nats::jetstream::new(async_nats::connect(server.url()).await.expect("admin"));
    run_scenarios("nats stream deleted", &fleet, &mut StreamDeleted(admin)).await;
    // Each deletion lost the history: a new epoch, reported by every node.
    assert!(fleet.counter("mcp_fleet_bus_gaps") >= 3 * 4, "{}", fleet.counters_line());
    fleet.shutdown().await;
}

/// The server leading the stream (replicated on all three) is killed, then brought back.
struct ClusterMemberKilled {
    cluster: NatsCluster,
    admin: async_nats::jetstream::Context,
    killed: Option<usize>,
}

impl ClusterMemberKilled {
    /// The index of the server leading the stream.
    async fn leader(&self) -> usize {
        let mut stream = self.admin.get_stream(STREAM).await.expect("stream");
        let info = stream.info().await.expect("stream info");
        let leader = info.cluster.as_ref().and_then(|c| c.leader.clone()).expect("the stream has a leader");
        self.cluster.servers.iter().position(|s| s.name == leader).expect("the leader is one of ours")
    }

    /// Whether every replica of the stream is current.
    async fn replicas_current(&self) -> bool {
        let Ok(mut stream) = self.admin.get_stream(STREAM).await else { return false };
        let Ok(info) = stream.info().await else { return false };
        info.cluster
            .as_ref()
            .is_some_and(|c| c.leader.is_some() && c.replicas.len() == 2 && c.replicas.iter().all(|r| r.current))
    }
}

impl Fault for ClusterMemberKilled {
    async fn inject(&mut self, _: &FaultFleet) {
        let leader = self.leader().await;
        self.cluster.servers[leader].kill();
        self.killed = Some(leader);
    }

    async fn settle(&mut self, _: &FaultFleet) {
        if let Some(killed) = self.killed.take() {
            self.cluster.servers[killed].restart().await;
            let this = &*self;
            eventually(
                "all three replicas are current again",
                WAIT * 3,
                || async move { this.replicas_current().await },
            )
            .await;
        }
    }
}

#[tokio::test]
async fn one_server_of_a_three_server_cluster_killed() {
    let dir = TempDir::new("nats-cluster");
    let cluster = NatsCluster::start(dir.path()).await;
    let url = format!("{}?replicas=3", cluster.url());
    let fleet = FaultFleet::start(buses(&url).await).await;
    let admin = async_nats::jetstream::new(async_nats::connect(cluster.servers[0].url()).await.expect("admin"));
    let mut fault = ClusterMemberKilled { cluster, admin, killed: None };
    assert!(
        fault.replicas_current().await || {
            eventually("the stream has three current replicas", WAIT * 3, || async { fault.replicas_current().await })
                .await;
            true
        }
    );
    run_scenarios("nats cluster member killed", &fleet, &mut fault).await;
    // An R3 stream survives the loss of one server: no history lost, no gap.
    fleet.assert_no_gaps();
    fleet.shutdown().await;
}
