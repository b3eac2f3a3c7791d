//! Redis Cluster faults, on a private cluster (three masters, two replicas each; never the
//! shared 6379): the master holding the fleet-wide shard killed and failed over, that shard's
//! slot migrated to another master, and its stream deleted. Each runs the scenarios of
//! `mcp_fleet_tests::faults` — continuous publishing across the fault, then single publishes
//! 0, 300 and 1500 ms after it — on three nodes with 10 listen streams and two 2025 session
//! streams each, and checks that every accepted change reached every stream or was invalidated
//! by a gap. The bus is split into eight shards (the cluster default), so its events are
//! unpositioned: see `faults::record` for how the invariant reads them.

use std::sync::Arc;
use std::time::Duration;

use mcp_fleet_bus::ServerEventBus;
use mcp_fleet_bus_redis::{RedisBus, RedisBusOptions};
use mcp_fleet_tests::faults::procs::{TempDir, redis_connect};
use mcp_fleet_tests::faults::redis_cluster::RedisCluster;
use mcp_fleet_tests::faults::{Fault, FaultFleet, run_scenarios};

const STREAM: &str = "mcp-fleet-faults";
/// The shard fleet-wide list changes go to: the one the faults hit.
const SHARD_ZERO: &str = "{mcp-fleet-faults#0}";

async fn buses(cluster: &RedisCluster) -> Vec<Arc<dyn ServerEventBus>> {
    let url = format!("{}?stream={STREAM}", cluster.url());
    let mut out: Vec<Arc<dyn ServerEventBus>> = Vec::new();
    for node in 0..3 {
        let mut options = RedisBusOptions::from_url(&url, &format!("node-{node}")).expect("cluster url");
        options.publish_timeout = Duration::from_secs(1);
        options.block_timeout = Duration::from_millis(500);
        options.reconnect_min = Duration::from_millis(50);
        options.reconnect_max = Duration::from_millis(500);
        out.push(Arc::new(RedisBus::connect(options).await.expect("connect to the private cluster")));
    }
    out
}

/// The master of shard zero crashes; a replica takes over; the old master rejoins as a replica.
struct MasterFailover {
    cluster: RedisCluster,
    killed: Option<usize>,
}

impl Fault for MasterFailover {
    async fn inject(&mut self, _: &FaultFleet) {
        self.killed = Some(self.cluster.kill_master_of(SHARD_ZERO).await);
    }

    async fn settle(&mut self, _: &FaultFleet) {
        if let Some(killed) = self.killed.take() {
            self.cluster.restart(killed).await;
        }
    }
}

#[tokio::test]
async fn a_master_killed_and_failed_over() {
    let dir = TempDir::new("cluster-failover");
    let cluster = RedisCluster::start(dir.path()).await;
    let fleet = FaultFleet::start(buses(&cluster).await).await;
    run_scenarios("redis cluster master failover", &fleet, &mut MasterFailover { cluster, killed: None }).await;
    // A promoted replica has another replication id: a new epoch on the shard, every time.
    assert!(fleet.counter("mcp_fleet_bus_gaps") >= 3 * 4, "{}", fleet.counters_line());
    fleet.shutdown().await;
}

/// Shard zero's slot moves to another master, keys and all, while the nodes publish to it.
struct SlotMigration(RedisCluster);

impl Fault for SlotMigration {
    async fn inject(&mut self, _: &FaultFleet) {
        self.0.migrate_slot_of(SHARD_ZERO).await;
    }

    async fn settle(&mut self, _: &FaultFleet) {}
}

#[tokio::test]
async fn a_slot_migrated_mid_traffic() {
    let dir = TempDir::new("cluster-migrate");
    let cluster = RedisCluster::start(dir.path()).await;
    let fleet = FaultFleet::start(buses(&cluster).await).await;
    run_scenarios("redis cluster slot migration", &fleet, &mut SlotMigration(cluster)).await;
    // The receiving master has another replication id: a new epoch on the shard, every time.
    assert!(fleet.counter("mcp_fleet_bus_gaps") >= 3 * 4, "{}", fleet.counters_line());
    fleet.shutdown().await;
}

/// Shard zero's stream is deleted; nothing is published on it for longer than the block time,
/// so every node's idle check finds it behind its cursor.
struct StreamDeleted(RedisCluster);

impl Fault for StreamDeleted {
    async fn inject(&mut self, _: &FaultFleet) {
        let master = self.0.master_of(SHARD_ZERO).await;
        let mut admin = redis_connect(master).await.expect("admin connection");
        let _: i64 = redis::cmd("DEL").arg(SHARD_ZERO).query_async(&mut admin).await.expect("del");
        tokio::time::sleep(Duration::from_millis(1500)).await;
    }

    async fn settle(&mut self, _: &FaultFleet) {}
}

#[tokio::test]
async fn one_shards_stream_deleted() {
    let dir = TempDir::new("cluster-delete");
    let cluster = RedisCluster::start(dir.path()).await;
    let fleet = FaultFleet::start(buses(&cluster).await).await;
    run_scenarios("redis cluster shard stream deleted", &fleet, &mut StreamDeleted(cluster)).await;
    println!("{}", fleet.counters_line());
    fleet.shutdown().await;
}
