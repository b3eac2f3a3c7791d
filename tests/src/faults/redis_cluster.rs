//! A private Redis Cluster for the bus's cluster tests: three masters with two replicas each
//! (so a master that fails over still has a replica to acknowledge publishes: the bus waits for
//! one, see `RedisBusOptions::min_replica_acks`), each `redis-server --cluster-enabled yes` on a
//! free port in a temp dir, joined by `redis-cli --cluster create`, stopped by pid on drop.
//!
//! The faults the cluster tests need: [`RedisCluster::kill_master_of`] (a crash; a replica is
//! promoted), [`RedisCluster::restart`] (it rejoins as a replica), and
//! [`RedisCluster::migrate_slot_of`] (a live slot migration, keys and all).

use std::path::Path;
use std::time::Duration;

use redis::aio::MultiplexedConnection;

use super::procs::{Proc, free_port, redis_connect};
use crate::{WAIT, eventually};
use mcp_fleet_bus::testing::Awaiting;

/// Masters in the cluster.
pub const MASTERS: usize = 3;
/// Replicas of each master.
pub const REPLICAS_PER_MASTER: usize = 2;
/// `cluster-node-timeout`: how long a master is unreachable before its replicas take over.
const NODE_TIMEOUT_MS: u64 = 1000;

/// One cluster node process.
pub struct ClusterNode {
    /// Its port.
    pub port: u16,
    proc: Proc,
}

/// The cluster: `MASTERS × (1 + REPLICAS_PER_MASTER)` nodes.
pub struct RedisCluster {
    /// Every node; which are masters changes with failovers.
    pub nodes: Vec<ClusterNode>,
}

/// One line of `CLUSTER NODES`: a node's address, role and slots.
#[derive(Debug, Clone)]
struct NodeLine {
    id: String,
    port: u16,
    master: bool,
    failed: bool,
    slots: Vec<(u16, u16)>,
}

impl RedisCluster {
    /// Start the nodes in `dir`, create the cluster and wait until every node says it is ok.
    pub async fn start(dir: &Path) -> RedisCluster {
        let count = MASTERS * (1 + REPLICAS_PER_MASTER);
        let mut nodes = Vec::with_capacity(count);
        for index in 0..count {
            nodes.push(ClusterNode::start(dir, index).await);
        }
        let mut args: Vec<String> = vec!["--cluster".into(), "create".into()];
        args.extend(nodes.iter().map(|n| format!("127.0.0.1:{}", n.port)));
        args.extend(["--cluster-replicas".into(), REPLICAS_PER_MASTER.to_string(), "--cluster-yes".into()]);
        let output = std::process::Command::new("redis-cli").args(&args).output().expect("run redis-cli --cluster");
        assert!(output.status.success(), "redis-cli --cluster create: {}", String::from_utf8_lossy(&output.stdout));
        let cluster = RedisCluster { nodes };
        cluster.await_healthy().await;
        cluster
    }

    /// `redis+cluster://127.0.0.1:<p1>,…` naming every node.
    pub fn url(&self) -> String {
        let hosts: Vec<String> = self.nodes.iter().map(|n| format!("127.0.0.1:{}", n.port)).collect();
        format!("redis+cluster://{}", hosts.join(","))
    }

    /// Wait until every running node reports `cluster_state:ok`, every slot has a master that
    /// is not failed, and each master has its replicas again.
    pub async fn await_healthy(&self) {
        let healthy = Awaiting::new("the redis cluster is healthy");
        eventually(&healthy, WAIT * 3, async || match self.unhealthy().await {
            Some(reason) => {
                healthy.saw(reason);
                false
            }
            None => true,
        })
        .await;
    }

    async fn unhealthy(&self) -> Option<String> {
        for node in self.nodes.iter().filter(|n| n.proc.is_running()) {
            let Some(mut conn) = redis_connect(node.port).await else {
                return Some(format!("{} is silent", node.port));
            };
            let info: String = redis::cmd("CLUSTER").arg("INFO").query_async(&mut conn).await.unwrap_or_default();
            if !info.contains("cluster_state:ok") {
                return Some(format!("{} is not ok", node.port));
            }
        }
        let lines = self.cluster_nodes().await;
        let masters = lines.iter().filter(|l| l.master && !l.failed && !l.slots.is_empty()).count();
        let replicas = lines.iter().filter(|l| !l.master && !l.failed).count();
        let running = self.nodes.iter().filter(|n| n.proc.is_running()).count();
        if masters != MASTERS || masters + replicas != running {
            return Some(format!("{masters} serving masters, {replicas} replicas, {running} running"));
        }
        // A publish waits for a replica: each master's replicas must be in sync, not just known
        // (a replica that has just loaded its copy is streamed to only after its first ack).
        for master in lines.iter().filter(|l| l.master && !l.failed) {
            let Some(mut conn) = redis_connect(master.port).await else {
                return Some(format!("{} is silent", master.port));
            };
            let info: String = redis::cmd("INFO").arg("replication").query_async(&mut conn).await.unwrap_or_default();
            let online = info.matches("state=online").count();
            if online < REPLICAS_PER_MASTER {
                return Some(format!("master {} has {online} replicas in sync", master.port));
            }
            if !acknowledged(&mut conn, master).await {
                return Some(format!("master {}'s replicas do not acknowledge a write yet", master.port));
            }
        }
        None
    }

    /// `CLUSTER NODES` as a running node sees it.
    async fn cluster_nodes(&self) -> Vec<NodeLine> {
        for node in self.nodes.iter().filter(|n| n.proc.is_running()) {
            if let Some(mut conn) = redis_connect(node.port).await
                && let Ok(text) = redis::cmd("CLUSTER").arg("NODES").query_async::<String>(&mut conn).await
            {
                return text.lines().filter_map(NodeLine::parse).collect();
            }
        }
        Vec::new()
    }

    /// The port of the master serving `key`'s slot now.
    pub async fn master_of(&self, key: &str) -> u16 {
        let slot = key_slot(key);
        let lines = self.cluster_nodes().await;
        let master =
            lines.iter().find(|l| l.master && !l.failed && l.slots.iter().any(|&(a, b)| a <= slot && slot <= b));
        master.unwrap_or_else(|| panic!("no master serves slot {slot}: {lines:?}")).port
    }

    /// Kill the master serving `key` (a crash) and wait until a replica took its slots over;
    /// returns the killed node's index, for [`RedisCluster::restart`].
    pub async fn kill_master_of(&mut self, key: &str) -> usize {
        let port = self.master_of(key).await;
        let killed = self.nodes.iter().position(|n| n.port == port).expect("the master is one of ours");
        self.nodes[killed].proc.kill();
        let cluster = &*self;
        eventually("a replica takes the killed master's slots", WAIT * 2, || async move {
            let lines = cluster.cluster_nodes().await;
            let slot = key_slot(key);
            lines.iter().any(|l| {
                l.master && l.port != port && !l.failed && l.slots.iter().any(|&(a, b)| a <= slot && slot <= b)
            })
        })
        .await;
        killed
    }

    /// Start node `index` again (empty, no persistence: it rejoins from its `nodes.conf` as a
    /// replica of whoever took over) and wait until the cluster is healthy.
    pub async fn restart(&mut self, index: usize) {
        self.nodes[index].proc.restart();
        self.await_healthy().await;
    }

    /// Move `key`'s slot to another master while it is in use: `IMPORTING`/`MIGRATING`, every
    /// key `MIGRATE`d, then the slot assigned to its new master everywhere. Returns the new
    /// master's port.
    pub async fn migrate_slot_of(&self, key: &str) -> u16 {
        let slot = key_slot(key);
        let lines = self.cluster_nodes().await;
        let serves = |l: &&NodeLine| l.master && !l.failed && l.slots.iter().any(|&(a, b)| a <= slot && slot <= b);
        let from = lines.iter().find(serves).expect("a master serves the slot").clone();
        let to = lines.iter().find(|l| l.master && !l.failed && l.id != from.id).expect("another master").clone();
        let (mut src, mut dst) = (admin(from.port).await, admin(to.port).await);
        setslot(&mut dst, slot, &["IMPORTING", &from.id]).await;
        setslot(&mut src, slot, &["MIGRATING", &to.id]).await;
        loop {
            let keys: Vec<String> = redis::cmd("CLUSTER")
                .arg("GETKEYSINSLOT")
                .arg(slot)
                .arg(100)
                .query_async(&mut src)
                .await
                .expect("getkeysinslot");
            if keys.is_empty() {
                break;
            }
            let mut migrate = redis::cmd("MIGRATE");
            migrate.arg("127.0.0.1").arg(to.port).arg("").arg(0).arg(5000).arg("KEYS").arg(&keys);
            let _: () = migrate.query_async(&mut src).await.expect("migrate keys");
        }
        for line in lines.iter().filter(|l| l.master && !l.failed) {
            setslot(&mut admin(line.port).await, slot, &["NODE", &to.id]).await;
        }
        to.port
    }
}

impl ClusterNode {
    /// Start node `index` in `dir` and wait until it answers — itself, not a server another
    /// test started on the same port in between: `free_port` only finds a port free for now,
    /// and tests run side by side. A node that lost that race (it exits: "Failed listening")
    /// is started again on another port.
    async fn start(dir: &Path, index: usize) -> ClusterNode {
        for _ in 0..5 {
            let mut node = ClusterNode::spawn(dir, index);
            if node.answers_from(dir).await {
                return node;
            }
            node.proc.kill();
        }
        panic!("cluster node {index} could not get a port of its own in five tries");
    }

    /// Whether the server answering on this node's port runs in `dir` (this node's, not
    /// another test's), within [`WAIT`].
    async fn answers_from(&self, dir: &Path) -> bool {
        let canonical = |d: &Path| std::fs::canonicalize(d).unwrap_or_else(|_| d.to_path_buf());
        let (port, wanted) = (self.port, canonical(dir));
        let deadline = tokio::time::Instant::now() + WAIT;
        while tokio::time::Instant::now() < deadline {
            if let Some(mut conn) = redis_connect(port).await {
                let seen: Vec<String> =
                    redis::cmd("CONFIG").arg("GET").arg("dir").query_async(&mut conn).await.unwrap_or_default();
                return seen.get(1).is_some_and(|d| canonical(Path::new(d)) == wanted);
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        false
    }

    fn spawn(dir: &Path, index: usize) -> ClusterNode {
        // The cluster bus listens on port + 10000: keep both in range.
        let port = std::iter::repeat_with(free_port).find(|p| *p <= 55_535).unwrap_or_else(free_port);
        let name = format!("cluster-{index}");
        let mut args: Vec<String> =
            ["--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--cluster-enabled", "yes"]
                .into_iter()
                .map(str::to_owned)
                .collect();
        args.extend(["--port".into(), port.to_string(), "--dir".into(), dir.display().to_string()]);
        args.extend([
            "--dbfilename".into(),
            format!("{name}.rdb"),
            "--cluster-config-file".into(),
            format!("{name}.conf"),
        ]);
        args.extend(["--cluster-node-timeout".into(), NODE_TIMEOUT_MS.to_string()]);
        // Any replica may take over, however long its link was down (a test kills masters
        // back to back).
        args.extend(["--cluster-replica-validity-factor".into(), "0".into()]);
        // Replicas stay with their masters: after a failover Redis would otherwise move one
        // from a master with two to the promoted one (left with one), the restarted node then
        // joins the promoted one too, and the layout `await_healthy` waits for never returns.
        args.extend(["--cluster-allow-replica-migration".into(), "no".into()]);
        let proc = Proc::spawn("redis-server", args, dir.join(format!("{name}.log")));
        ClusterNode { port, proc }
    }
}

impl NodeLine {
    /// `<id> <ip:port@cport> <flags> <master> <ping> <pong> <epoch> <link> <slot>…`
    fn parse(line: &str) -> Option<NodeLine> {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let (id, addr, flags) = (fields.first()?, fields.get(1)?, fields.get(2)?);
        let port = addr.split('@').next()?.rsplit(':').next()?.parse().ok()?;
        let slots = fields[8.min(fields.len())..]
            .iter()
            .filter(|s| !s.starts_with('['))
            .filter_map(|s| match s.split_once('-') {
                Some((a, b)) => Some((a.parse().ok()?, b.parse().ok()?)),
                None => s.parse().ok().map(|n| (n, n)),
            })
            .collect();
        Some(NodeLine {
            id: (*id).to_owned(),
            port,
            master: flags.contains("master"),
            failed: flags.contains("fail") || flags.contains("noaddr"),
            slots,
        })
    }
}

/// The cluster slot of `key` (CRC16 of its hash tag or whole, mod 16384), as Redis computes it.
pub fn key_slot(key: &str) -> u16 {
    let bytes = key.as_bytes();
    let tagged = key
        .find('{')
        .and_then(|open| key[open + 1..].find('}').filter(|&len| len > 0).map(|len| &bytes[open + 1..open + 1 + len]));
    crc16_xmodem(tagged.unwrap_or(bytes)) % 16384
}

fn crc16_xmodem(bytes: &[u8]) -> u16 {
    bytes.iter().fold(0u16, |mut crc, &byte| {
        crc ^= u16::from(byte) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 { (crc << 1) ^ 0x1021 } else { crc << 1 };
        }
        crc
    })
}

/// Whether every replica of `master` acknowledges a write to it within 200 ms (`WAIT` on the
/// connection that wrote a key of its slots).
async fn acknowledged(conn: &mut MultiplexedConnection, master: &NodeLine) -> bool {
    let serves = |slot: u16| master.slots.iter().any(|&(a, b)| a <= slot && slot <= b);
    let probe = (0..100_000).map(|n| format!("mcp-fleet-probe-{n}")).find(|k| serves(key_slot(k)));
    let Some(key) = probe else { return false };
    let _: Result<(), _> = redis::cmd("SET").arg(&key).arg(1).query_async(conn).await;
    let acks: usize = redis::cmd("WAIT").arg(REPLICAS_PER_MASTER).arg(200).query_async(conn).await.unwrap_or(0);
    acks >= REPLICAS_PER_MASTER
}

async fn admin(port: u16) -> MultiplexedConnection {
    redis_connect(port).await.expect("admin connection to a cluster node")
}

async fn setslot(conn: &mut MultiplexedConnection, slot: u16, args: &[&str]) {
    let mut cmd = redis::cmd("CLUSTER");
    cmd.arg("SETSLOT").arg(slot).arg(args);
    let _: () = cmd.query_async(conn).await.unwrap_or_else(|e| panic!("CLUSTER SETSLOT {slot} {args:?}: {e}"));
}

/// How long the tests give a failover: the node timeout, an election, and slack for a loaded
/// machine.
pub const FAILOVER_WAIT: Duration = Duration::from_millis(NODE_TIMEOUT_MS * 10);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_match_redis() {
        // Values from `CLUSTER KEYSLOT` on Redis 7.
        assert_eq!(key_slot("foo"), 12182);
        assert_eq!(key_slot("{user1000}.following"), key_slot("user1000"));
        assert_eq!(key_slot("123456789"), 12739);
    }
}
