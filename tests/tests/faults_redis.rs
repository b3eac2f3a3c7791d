//! Redis faults, each on private Redis processes (never the shared 6379): every client
//! connection killed, a restart without persistence, a Sentinel failover, a split brain (a
//! primary cut off from its replica and sentinels, not from every node), and a trim past a
//! node that lags, and an outage longer than the nodes' grace period. Each runs the scenarios of `mcp_fleet_tests::faults` — continuous publishing
//! across the fault, then single publishes 0, 300 and 1500 ms after it — and checks on every
//! stream of every node that each accepted change arrived or was invalidated by a gap, that
//! the nodes keep answering, and that the counters tell what happened.

use std::sync::Arc;
use std::time::Duration;

use mcp_fleet_bus::ServerEventBus;
use mcp_fleet_bus_redis::{RedisBus, RedisBusOptions};
use mcp_fleet_tests::faults::procs::{RedisServer, SentinelSet, TempDir};
use mcp_fleet_tests::faults::{Fault, FaultFleet, STREAMS_PER_NODE, run_scenarios};
use mcp_fleet_tests::proxy::CuttableProxy;
use mcp_fleet_tests::{WAIT, eventually};

const STREAM_KEY: &str = "mcp-fleet-faults";

/// A node's bus at `url`, with timeouts short enough for a test to see recovery quickly.
async fn bus(url: &str, node: usize) -> Arc<dyn ServerEventBus> {
    let mut options = RedisBusOptions::from_url(url, &format!("node-{node}")).expect("url").with_stream_key(STREAM_KEY);
    options.publish_timeout = Duration::from_secs(1);
    options.block_timeout = Duration::from_millis(500);
    options.reconnect_min = Duration::from_millis(50);
    options.reconnect_max = Duration::from_millis(500);
    Arc::new(RedisBus::connect(options).await.expect("connect to the private redis"))
}

async fn buses(urls: [&str; 3]) -> Vec<Arc<dyn ServerEventBus>> {
    let mut out = Vec::new();
    for (i, url) in urls.into_iter().enumerate() {
        out.push(bus(url, i).await);
    }
    out
}

/// `CLIENT KILL TYPE normal`: every node's publishing and tailing connections at once.
struct ClientKill(redis::aio::MultiplexedConnection);

impl Fault for ClientKill {
    async fn inject(&mut self, _: &FaultFleet) {
        let killed: i64 =
            redis::cmd("CLIENT").arg("KILL").arg("TYPE").arg("normal").query_async(&mut self.0).await.expect("kill");
        assert!(killed >= 3, "killed {killed} connections");
    }

    async fn settle(&mut self, _: &FaultFleet) {}
}

#[tokio::test]
async fn every_client_connection_killed() {
    let dir = TempDir::new("redis-kill");
    let server = RedisServer::start(dir.path(), "redis", None).await;
    let url = server.url();
    let fleet = FaultFleet::start(buses([&url, &url, &url]).await).await;
    run_scenarios("redis client kill", &fleet, &mut ClientKill(server.admin().await)).await;
    // Nothing was lost, so nothing was invalidated: every node resumed where it was.
    fleet.assert_no_gaps();
    assert!(fleet.counter("mcp_fleet_bus_reconnects") >= 3 * 4);
    fleet.shutdown().await;
}

/// A crash and a restart without persistence: everything the server held is gone.
struct Restart(RedisServer);

impl Fault for Restart {
    async fn inject(&mut self, _: &FaultFleet) {
        self.0.kill();
        tokio::time::sleep(Duration::from_millis(200)).await;
        self.0.restart().await;
    }

    async fn settle(&mut self, _: &FaultFleet) {}
}

#[tokio::test]
async fn a_restart_without_persistence() {
    let dir = TempDir::new("redis-restart");
    let server = RedisServer::start(dir.path(), "redis", None).await;
    let url = server.url();
    let fleet = FaultFleet::start(buses([&url, &url, &url]).await).await;
    run_scenarios("redis restart", &fleet, &mut Restart(server)).await;
    // Each restart lost the history: a new epoch, which every node reported as a gap.
    assert!(fleet.counter("mcp_fleet_bus_gaps") >= 3 * 4, "{}", fleet.counters_line());
    fleet.shutdown().await;
}

/// The primary crashes; Sentinel promotes the replica; the old primary comes back as a replica.
struct Failover {
    set: SentinelSet,
    killed: Option<usize>,
}

impl Fault for Failover {
    async fn inject(&mut self, _: &FaultFleet) {
        self.killed = Some(self.set.kill_primary().await);
    }

    async fn settle(&mut self, _: &FaultFleet) {
        if let Some(killed) = self.killed.take() {
            self.set.recover(killed).await;
        }
    }
}

/// A failover is usually over in a second or two. On a loaded machine a sentinel whose timer
/// runs late enters TILT mode for 30 s and the failover waits for it: the nodes are deaf past
/// their grace period, end their listen streams with the completion result, and clients
/// reconnect and list again — which the harness does too (`listens_reopened` in the output).
/// Either way, every accepted change reaches every stream or is invalidated.
#[tokio::test]
async fn a_sentinel_failover() {
    let dir = TempDir::new("redis-sentinel");
    let set = SentinelSet::start(dir.path()).await;
    let url = set.url();
    let fleet = FaultFleet::start(buses([&url, &url, &url]).await).await;
    run_scenarios("redis sentinel failover", &fleet, &mut Failover { set, killed: None }).await;
    // A promoted replica has a new replication id: a new epoch on every node, every time.
    assert!(fleet.counter("mcp_fleet_bus_gaps") >= 3 * 4, "{}", fleet.counters_line());
    fleet.shutdown().await;
}

/// Whether the Redis on `port` is a replica whose link to its primary is up.
async fn is_linked_replica(port: u16) -> bool {
    let Some(mut conn) = mcp_fleet_tests::faults::procs::redis_connect(port).await else { return false };
    let info: String = redis::cmd("INFO").arg("replication").query_async(&mut conn).await.unwrap_or_default();
    info.contains("role:slave") && info.contains("master_link_status:up")
}

/// The broker is out of reach for longer than the nodes' `bus_down_grace` (what a failover
/// that outlasts it under load looks like to a node): every node ends its listen streams with
/// their completion result and refuses new ones until it hears the bus again. The promise is
/// the one a client follows: reconnect, list again, and hear every change after that — the
/// harness reopens each stream the same way and holds the new one to the invariant.
struct OutagePastGrace(CuttableProxy);

/// The grace period of [`an_outage_past_the_grace_period`]'s nodes.
const SHORT_GRACE: Duration = Duration::from_millis(1000);

impl Fault for OutagePastGrace {
    async fn inject(&mut self, fleet: &FaultFleet) {
        let closed = fleet.completed() + fleet.nodes.len() * STREAMS_PER_NODE;
        self.0.cut();
        eventually("every listen stream is ended with its completion result", WAIT * 2, || async {
            fleet.completed() >= closed
        })
        .await;
        self.0.restore();
    }

    async fn settle(&mut self, _: &FaultFleet) {}
}

#[tokio::test]
async fn an_outage_past_the_grace_period() {
    let dir = TempDir::new("redis-outage");
    let server = RedisServer::start(dir.path(), "redis", None).await;
    let proxy = CuttableProxy::start(format!("127.0.0.1:{}", server.port).parse().expect("addr")).await;
    let url = format!("redis://{}/0", proxy.addr);
    let fleet = FaultFleet::start_with(buses([&url, &url, &url]).await, |o| o.bus_down_grace(SHORT_GRACE)).await;
    run_scenarios("redis outage past the grace period", &fleet, &mut OutagePastGrace(proxy)).await;
    // Four outages, each closing every listen stream of every node once.
    assert_eq!(fleet.reopened(), 4 * fleet.nodes.len() * STREAMS_PER_NODE, "{}", fleet.counters_line());
    fleet.shutdown().await;
}

/// A split brain: the primary is cut off from its replica and the sentinels (which promote the
/// replica) but not from node 0, which reaches it directly and keeps publishing there until
/// the partition heals and the sentinels demote it — discarding what it took meanwhile. Nodes
/// 1 and 2 (through Sentinel) had their only gap at their failover, before those publishes.
/// With `min_replica_acks=1` (the default behind Sentinel; node 0's URL names it as it is a
/// plain one) the cut-off primary has no replica to acknowledge them: they fail, and every
/// publish that was accepted reaches every stream of nodes 1 and 2. (Node 0's own streams are
/// not held to it: its plain URL keeps it on the old primary, a replica once demoted, which
/// only a Sentinel URL would have followed.)
#[tokio::test]
async fn a_primary_cut_off_from_its_replica_and_sentinels_acknowledges_nothing() {
    let dir = TempDir::new("redis-split-brain");
    let (set, proxy) = SentinelSet::start_partitionable(dir.path()).await;
    let old_primary = set.servers[0].port;
    let direct = format!("redis://127.0.0.1:{old_primary}/0?min_replica_acks=1");
    let sentinel = set.url();
    let fleet = FaultFleet::start(buses([&direct, &sentinel, &sentinel]).await).await;
    let split = async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        proxy.cut();
        let (set, monitored) = (&set, proxy.addr.port());
        eventually("the sentinels promote the replica", WAIT * 2, || async move {
            set.primary_port().await.is_some_and(|p| p != monitored)
        })
        .await;
        // The split lasts: node 0 keeps publishing to the old primary, the others to the new.
        tokio::time::sleep(Duration::from_secs(2)).await;
        proxy.restore();
        eventually("the old primary is demoted to a replica", WAIT * 3, || is_linked_replica(old_primary)).await;
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    let (accepted, failed) = fleet.publish_during(split).await;
    fleet.assert_delivered_on(&[1, 2]).await;
    println!("redis split brain: {accepted} accepted, {failed} refused or failed; {}", fleet.counters_line());
    assert!(failed > 0, "the cut-off primary acknowledged every publish");
    fleet.shutdown().await;
}

/// Node 2 is cut off (through a proxy) while the stream is trimmed past its position.
struct TrimPastLaggingNode {
    proxy: CuttableProxy,
    admin: redis::aio::MultiplexedConnection,
}

impl Fault for TrimPastLaggingNode {
    async fn inject(&mut self, fleet: &FaultFleet) {
        self.proxy.cut();
        for kind in 0..2 {
            fleet.publish_until_accepted(0, kind).await;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        let _: () =
            redis::cmd("XTRIM").arg(STREAM_KEY).arg("MAXLEN").arg(0).query_async(&mut self.admin).await.expect("xtrim");
        self.proxy.restore();
    }

    async fn settle(&mut self, _: &FaultFleet) {}
}

#[tokio::test]
async fn a_trim_past_a_lagging_node() {
    let dir = TempDir::new("redis-trim");
    let server = RedisServer::start(dir.path(), "redis", None).await;
    let proxy = CuttableProxy::start(format!("127.0.0.1:{}", server.port).parse().expect("addr")).await;
    let (url, lagging) = (server.url(), format!("redis://{}", proxy.addr));
    let fleet = FaultFleet::start(buses([&url, &url, &lagging]).await).await;
    run_scenarios(
        "redis trim past a lagging node",
        &fleet,
        &mut TrimPastLaggingNode { proxy, admin: server.admin().await },
    )
    .await;
    let lagging_gaps = mcp_fleet_tests::faults::metric(&fleet.nodes[2].handler.metrics_text(), "mcp_fleet_bus_gaps");
    assert!(lagging_gaps >= 4, "the lagging node reported each trim as a gap ({lagging_gaps})");
    fleet.shutdown().await;
}
