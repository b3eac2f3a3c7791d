//! A seeded randomized fault run: random faults at random moments while every node publishes,
//! then the invariant of `mcp_fleet_tests::faults::record` over everything accepted. Short in CI
//! (`MCP_FLEET_CHAOS_SECONDS`, default 8), as long as you like on demand. It prints its seed;
//! `MCP_FLEET_CHAOS_SEED=<seed>` replays the same faults at the same moments (publishing
//! itself stays concurrent, so a replay is close, not identical).
//!
//! Private brokers only (never the shared 6379/4222).

use std::sync::Arc;
use std::time::Duration;

use mcp_fleet_bus::ServerEventBus;
use mcp_fleet_bus_nats::{NatsBus, NatsBusOptions};
use mcp_fleet_bus_redis::{RedisBus, RedisBusOptions};
use mcp_fleet_tests::WAIT;
use mcp_fleet_tests::faults::FaultFleet;
use mcp_fleet_tests::faults::endable::{EndableBus, Ending};
use mcp_fleet_tests::faults::procs::{NatsServer, RedisServer, TempDir};
use mcp_fleet_tests::faults::redis_cluster::RedisCluster;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tokio::time::Instant;

fn seed() -> u64 {
    std::env::var("MCP_FLEET_CHAOS_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(rand::random)
}

fn duration() -> Duration {
    let seconds = std::env::var("MCP_FLEET_CHAOS_SECONDS").ok().and_then(|s| s.parse().ok()).unwrap_or(8);
    Duration::from_secs(seconds)
}

/// The faults a chaos run draws from.
#[derive(Debug, Clone, Copy)]
enum Chaos {
    /// Redis: `CLIENT KILL TYPE normal`. NATS: the stream deleted. Redis Cluster: the slot of
    /// the fleet-wide shard migrated to another master.
    Connections,
    /// The broker crashes and restarts (Redis empty, NATS with its store). Redis Cluster: the
    /// master of the fleet-wide shard crashes, a replica takes over, and it rejoins.
    Restart,
    /// One node's consumer stream ends.
    ConsumerEnds(usize),
    /// One node's consumer task panics.
    ConsumerPanics(usize),
}

impl Chaos {
    fn draw(rng: &mut StdRng) -> Chaos {
        match rng.random_range(0..4) {
            0 => Chaos::Connections,
            1 => Chaos::Restart,
            2 => Chaos::ConsumerEnds(rng.random_range(0..3)),
            _ => Chaos::ConsumerPanics(rng.random_range(0..3)),
        }
    }
}

/// The private broker of one run.
enum Broker {
    Redis(RedisServer),
    Nats(NatsServer),
    Cluster(RedisCluster),
}

/// The fleet-wide shard of the cluster run's bus (stream `chaos`).
const CLUSTER_SHARD_ZERO: &str = "{chaos#0}";

impl Broker {
    async fn apply(&mut self, chaos: Chaos, switches: &[Arc<EndableBus>]) {
        match (self, chaos) {
            (Broker::Redis(server), Chaos::Connections) => {
                let _: i64 = redis::cmd("CLIENT")
                    .arg("KILL")
                    .arg("TYPE")
                    .arg("normal")
                    .query_async(&mut server.admin().await)
                    .await
                    .expect("kill");
            }
            (Broker::Nats(server), Chaos::Connections) => {
                let js = async_nats::jetstream::new(async_nats::connect(server.url()).await.expect("admin"));
                let _ = js.delete_stream("MCP_FLEET_CHAOS").await;
            }
            (Broker::Redis(server), Chaos::Restart) => {
                server.kill();
                server.restart().await;
            }
            (Broker::Nats(server), Chaos::Restart) => {
                server.kill();
                server.restart().await;
            }
            (Broker::Cluster(cluster), Chaos::Connections) => _ = cluster.migrate_slot_of(CLUSTER_SHARD_ZERO).await,
            (Broker::Cluster(cluster), Chaos::Restart) => {
                let killed = cluster.kill_master_of(CLUSTER_SHARD_ZERO).await;
                cluster.restart(killed).await;
            }
            (_, Chaos::ConsumerEnds(node)) => switches[node].force(Ending::End),
            (_, Chaos::ConsumerPanics(node)) => switches[node].force(Ending::Panic),
        }
    }
}

async fn run(label: &str, mut broker: Broker, buses: Vec<Arc<dyn ServerEventBus>>) {
    let seed = seed();
    println!("{label}: chaos seed {seed} (replay with MCP_FLEET_CHAOS_SEED={seed})");
    let (buses, switches): (Vec<_>, Vec<_>) = buses.into_iter().map(EndableBus::new).unzip();
    let fleet = FaultFleet::start(buses).await;
    let mut rng = StdRng::seed_from_u64(seed);
    let started = Instant::now();
    let faults = async {
        while started.elapsed() < duration() {
            tokio::time::sleep(Duration::from_millis(rng.random_range(100..1200))).await;
            let chaos = Chaos::draw(&mut rng);
            println!("{label}: t+{:?} {chaos:?}", started.elapsed());
            broker.apply(chaos, &switches).await;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    let (accepted, failed) = fleet.publish_during(faults).await;
    fleet.assert_delivered().await;
    fleet.assert_nodes_healthy(WAIT * 2).await;
    println!("{label}: {accepted} accepted, {failed} failed and retried; {}", fleet.counters_line());
    fleet.shutdown().await;
}

#[tokio::test]
async fn random_faults_under_concurrent_publishers_on_redis() {
    let dir = TempDir::new("chaos-redis");
    let server = RedisServer::start(dir.path(), "redis", None).await;
    let mut buses = Vec::new();
    for i in 0..3 {
        let mut options =
            RedisBusOptions::new(&server.url(), &format!("node-{i}")).expect("url").with_stream_key("chaos");
        options.publish_timeout = Duration::from_secs(1);
        options.block_timeout = Duration::from_millis(500);
        options.reconnect_max = Duration::from_millis(500);
        buses.push(Arc::new(RedisBus::connect(options).await.expect("connect")) as Arc<dyn ServerEventBus>);
    }
    run("chaos on redis", Broker::Redis(server), buses).await;
}

#[tokio::test]
async fn random_faults_under_concurrent_publishers_on_a_redis_cluster() {
    let dir = TempDir::new("chaos-redis-cluster");
    let cluster = RedisCluster::start(dir.path()).await;
    let mut buses = Vec::new();
    for i in 0..3 {
        let url = format!("{}?stream=chaos", cluster.url());
        let mut options = RedisBusOptions::from_url(&url, &format!("node-{i}")).expect("url");
        options.publish_timeout = Duration::from_secs(1);
        options.block_timeout = Duration::from_millis(500);
        options.reconnect_max = Duration::from_millis(500);
        buses.push(Arc::new(RedisBus::connect(options).await.expect("connect")) as Arc<dyn ServerEventBus>);
    }
    run("chaos on a redis cluster", Broker::Cluster(cluster), buses).await;
}

#[tokio::test]
async fn random_faults_under_concurrent_publishers_on_nats() {
    let dir = TempDir::new("chaos-nats");
    let server = NatsServer::start(dir.path()).await;
    let mut buses = Vec::new();
    for i in 0..3 {
        let mut options = NatsBusOptions::new(&server.url(), &format!("node-{i}"));
        options.stream_name = "MCP_FLEET_CHAOS".into();
        options.publish_timeout = Duration::from_secs(1);
        options.reconnect_max = Duration::from_millis(500);
        options.health_interval = Duration::from_millis(250);
        buses.push(Arc::new(NatsBus::connect(options).await.expect("connect")) as Arc<dyn ServerEventBus>);
    }
    run("chaos on nats", Broker::Nats(server), buses).await;
}
