//! Private broker processes for the fault suite: Redis servers and replicas, Redis Sentinel,
//! NATS servers and a NATS cluster — each on free loopback ports, with its files in a temp dir,
//! started from the machine's binaries (`redis-server`, `nats-server`) and stopped by pid. The
//! shared brokers on 6379 and 4222 are never touched.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::proxy::CuttableProxy;
use crate::{WAIT, eventually};
use mcp_fleet_bus::testing::Awaiting;

/// A loopback port nobody listens on right now.
pub fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind an ephemeral port");
    listener.local_addr().expect("local addr").port()
}

/// A directory under the system temp dir, removed on drop.
pub struct TempDir(PathBuf);

impl TempDir {
    /// A fresh directory named after `label`.
    pub fn new(label: &str) -> TempDir {
        let path = std::env::temp_dir().join(format!("mcp-fleet-{label}-{}", crate::cluster::unique_name()));
        std::fs::create_dir_all(&path).expect("create temp dir");
        TempDir(path)
    }

    /// Its path.
    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    /// Removed, unless the test failed: then the broker logs stay for whoever investigates.
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("broker logs kept in {}", self.0.display());
        } else {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// One broker process; killed (SIGKILL) on drop.
pub struct Proc {
    program: String,
    args: Vec<String>,
    log: PathBuf,
    child: Option<Child>,
}

impl Proc {
    /// Start `program args…`, its output appended to `log`.
    pub fn spawn(program: &str, args: Vec<String>, log: PathBuf) -> Proc {
        let mut proc = Proc { program: program.to_owned(), args, log, child: None };
        proc.start();
        proc
    }

    fn start(&mut self) {
        let log = std::fs::OpenOptions::new().create(true).append(true).open(&self.log).expect("open broker log");
        let child = Command::new(&self.program)
            .args(&self.args)
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log handle"))
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("start {} (is it installed?): {e}", self.program));
        self.child = Some(child);
    }

    /// Kill it (SIGKILL: a crash, not a shutdown) and reap it.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Start it again with the same command line (same ports, same data directory).
    pub fn restart(&mut self) {
        self.kill();
        self.start();
    }

    /// Whether it is running.
    pub fn is_running(&self) -> bool {
        self.child.is_some()
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A Redis server without persistence: a restart comes back empty.
pub struct RedisServer {
    /// Its port.
    pub port: u16,
    proc: Proc,
}

impl RedisServer {
    /// Start a server in `dir` (as a replica of `primary_port`, if given) and wait until it
    /// answers.
    pub async fn start(dir: &Path, name: &str, primary_port: Option<u16>) -> RedisServer {
        let port = free_port();
        let mut args: Vec<String> =
            ["--bind", "127.0.0.1", "--save", "", "--appendonly", "no"].into_iter().map(str::to_owned).collect();
        args.extend(["--port".into(), port.to_string(), "--dir".into(), dir.display().to_string()]);
        args.extend(["--dbfilename".into(), format!("{name}.rdb")]);
        if let Some(primary) = primary_port {
            args.extend(["--replicaof".into(), "127.0.0.1".into(), primary.to_string()]);
        }
        let proc = Proc::spawn("redis-server", args, dir.join(format!("{name}.log")));
        let server = RedisServer { port, proc };
        server.await_ready().await;
        server
    }

    /// `redis://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// An admin connection.
    pub async fn admin(&self) -> redis::aio::MultiplexedConnection {
        redis_connect(self.port).await.expect("admin connection to a private redis")
    }

    async fn await_ready(&self) {
        let port = self.port;
        eventually("the private redis answers PING", WAIT, || async move { redis_connect(port).await.is_some() }).await;
    }

    /// Kill it (a crash).
    pub fn kill(&mut self) {
        self.proc.kill();
    }

    /// Start it again (empty: no persistence) and wait until it answers.
    pub async fn restart(&mut self) {
        self.proc.restart();
        self.await_ready().await;
    }

    /// Whether the process runs.
    pub fn is_running(&self) -> bool {
        self.proc.is_running()
    }
}

/// A connection to the Redis on `port`, if it answers `PING` within a second.
pub async fn redis_connect(port: u16) -> Option<redis::aio::MultiplexedConnection> {
    let client = redis::Client::open(format!("redis://127.0.0.1:{port}")).ok()?;
    let attempt = async {
        let mut conn = client.get_multiplexed_async_connection().await.ok()?;
        let _: String = redis::cmd("PING").query_async(&mut conn).await.ok()?;
        Some(conn)
    };
    tokio::time::timeout(Duration::from_secs(1), attempt).await.ok().flatten()
}

/// A primary, two replicas and three sentinels (quorum 2) watching them as `mymaster`. Two
/// replicas, so that a failover leaves the new primary a replica to acknowledge publishes
/// (the bus waits for one behind Sentinel: see `RedisBusOptions::min_replica_acks`).
pub struct SentinelSet {
    /// The three data servers; which one is primary changes with failovers.
    pub servers: Vec<RedisServer>,
    sentinel_ports: Vec<u16>,
    _sentinels: Vec<Proc>,
}

/// The name the sentinels monitor.
pub const MASTER_NAME: &str = "mymaster";

impl SentinelSet {
    /// Start it in `dir` and wait until the sentinels know the replicas and each other.
    pub async fn start(dir: &Path) -> SentinelSet {
        let primary = RedisServer::start(dir, "primary", None).await;
        let port = primary.port;
        let replicas = [
            RedisServer::start(dir, "replica-1", Some(port)).await,
            RedisServer::start(dir, "replica-2", Some(port)).await,
        ];
        SentinelSet::watching(dir, primary, replicas, port).await
    }

    /// The same, but the replicas and the sentinels reach the primary only through a proxy:
    /// cutting it partitions the primary from them while clients that connect to the primary
    /// directly still reach it (a split brain).
    pub async fn start_partitionable(dir: &Path) -> (SentinelSet, CuttableProxy) {
        let primary = RedisServer::start(dir, "primary", None).await;
        let proxy = CuttableProxy::start(format!("127.0.0.1:{}", primary.port).parse().expect("addr")).await;
        let replicas = [
            RedisServer::start(dir, "replica-1", Some(proxy.addr.port())).await,
            RedisServer::start(dir, "replica-2", Some(proxy.addr.port())).await,
        ];
        let set = SentinelSet::watching(dir, primary, replicas, proxy.addr.port()).await;
        (set, proxy)
    }

    async fn watching(dir: &Path, primary: RedisServer, replicas: [RedisServer; 2], monitored: u16) -> SentinelSet {
        let mut sentinel_ports = Vec::new();
        let mut sentinels = Vec::new();
        for i in 0..3 {
            let port = free_port();
            let conf = dir.join(format!("sentinel-{i}.conf"));
            let text = format!(
                "port {port}\nbind 127.0.0.1\ndir {dir}\nsentinel monitor {MASTER_NAME} 127.0.0.1 {monitored} 2\n\
                 sentinel down-after-milliseconds {MASTER_NAME} 400\nsentinel failover-timeout {MASTER_NAME} 2000\n\
                 sentinel parallel-syncs {MASTER_NAME} 1\n",
                dir = dir.display(),
            );
            std::fs::write(&conf, text).expect("write sentinel config");
            let args = vec![conf.display().to_string(), "--sentinel".to_owned()];
            sentinels.push(Proc::spawn("redis-server", args, dir.join(format!("sentinel-{i}.log"))));
            sentinel_ports.push(port);
        }
        let [first, second] = replicas;
        let set = SentinelSet { servers: vec![primary, first, second], sentinel_ports, _sentinels: sentinels };
        set.await_settled().await;
        set
    }

    /// `redis+sentinel://127.0.0.1:<s1>,127.0.0.1:<s2>,127.0.0.1:<s3>/mymaster`.
    pub fn url(&self) -> String {
        let hosts: Vec<String> = self.sentinel_ports.iter().map(|p| format!("127.0.0.1:{p}")).collect();
        format!("redis+sentinel://{}/{MASTER_NAME}", hosts.join(","))
    }

    /// The primary's port, as a sentinel that answers sees it.
    pub async fn primary_port(&self) -> Option<u16> {
        for port in &self.sentinel_ports {
            if let Some(mut conn) = redis_connect(*port).await {
                let addr: Result<(String, String), _> =
                    redis::cmd("SENTINEL").arg("get-master-addr-by-name").arg(MASTER_NAME).query_async(&mut conn).await;
                if let Ok((_, port)) = addr {
                    return port.parse().ok();
                }
            }
        }
        None
    }

    /// Kill the primary (a crash; the sentinels will notice and promote a replica); returns
    /// the index of the killed server, for [`SentinelSet::recover`].
    pub async fn kill_primary(&mut self) -> usize {
        let primary = self.primary_port().await.expect("the sentinels name a primary");
        let killed = self.servers.iter().position(|s| s.port == primary).expect("the primary is one of ours");
        self.servers[killed].kill();
        killed
    }

    /// Wait until the sentinels promoted another server than `killed`, start `killed` again
    /// (it comes back empty and the sentinels make it a replica of the new primary), and wait
    /// until the set can fail over again.
    pub async fn recover(&mut self, killed: usize) {
        let old = self.servers[killed].port;
        let set = &*self;
        eventually("the sentinels promote the replica", WAIT * 2, || async move {
            set.primary_port().await.is_some_and(|p| p != old)
        })
        .await;
        self.servers[killed].restart().await;
        self.await_settled().await;
    }

    /// Wait until the primary has both replicas connected and every sentinel sees them
    /// and the two other sentinels: the set can fail over again. Bounded by `SETTLE_WAIT`;
    /// a timeout names what the last check found unsettled.
    pub async fn await_settled(&self) {
        let settled = Awaiting::new("the sentinel set is settled");
        eventually(&settled, SETTLE_WAIT, async || match self.unsettled().await {
            Some(reason) => {
                settled.saw(reason);
                false
            }
            None => true,
        })
        .await;
    }

    /// What keeps the set from being settled, or `None` when it is.
    async fn unsettled(&self) -> Option<String> {
        let Some(primary) = self.primary_port().await else { return Some("no sentinel names a primary".into()) };
        let Some(mut conn) = redis_connect(primary).await else {
            return Some(format!("primary {primary} does not answer"));
        };
        let info: String = redis::cmd("INFO").arg("replication").query_async(&mut conn).await.unwrap_or_default();
        let online = info.matches("state=online").count();
        if !info.contains("role:master") || online < 2 {
            return Some(format!(
                "primary {primary}: master={}, {online} replicas online",
                info.contains("role:master")
            ));
        }
        for port in &self.sentinel_ports {
            let Some(mut conn) = redis_connect(*port).await else {
                return Some(format!("sentinel {port} does not answer"));
            };
            let master: Vec<String> =
                redis::cmd("SENTINEL").arg("master").arg(MASTER_NAME).query_async(&mut conn).await.unwrap_or_default();
            let field = |name: &str| master.iter().position(|f| f == name).and_then(|i| master.get(i + 1)).cloned();
            let (replicas, others, flags) = (field("num-slaves"), field("num-other-sentinels"), field("flags"));
            if replicas.as_deref() != Some("2") || others.as_deref() != Some("2") || flags.as_deref() != Some("master")
            {
                let info: String = redis::cmd("INFO").arg("sentinel").query_async(&mut conn).await.unwrap_or_default();
                let tilt = info.lines().find(|l| l.starts_with("sentinel_tilt:")).unwrap_or("sentinel_tilt:?");
                return Some(format!(
                    "sentinel {port}: num-slaves={replicas:?} num-other-sentinels={others:?} flags={flags:?} {}",
                    tilt.trim()
                ));
            }
        }
        None
    }
}

/// How long [`SentinelSet::await_settled`] waits. A sentinel whose timer runs late by 2 s (a
/// loaded CI machine) enters TILT mode for 30 s and acts on nothing meanwhile, reconfiguring
/// the restarted server included; the bound leaves room for one TILT and the settling after it.
const SETTLE_WAIT: Duration = Duration::from_secs(90);

/// A NATS server with JetStream, alone or as one member of a cluster.
pub struct NatsServer {
    /// Its client port.
    pub port: u16,
    /// Its `server_name`.
    pub name: String,
    /// Its JetStream store directory.
    pub store: PathBuf,
    proc: Proc,
}

impl NatsServer {
    fn spawn(dir: &Path, name: &str, port: u16, cluster: Option<(u16, &[u16])>) -> NatsServer {
        let store = dir.join(format!("{name}-js"));
        let mut args: Vec<String> = vec!["-a".into(), "127.0.0.1".into(), "-p".into(), port.to_string(), "-js".into()];
        args.extend(["-sd".into(), store.display().to_string(), "--server_name".into(), name.to_owned()]);
        if let Some((route_port, routes)) = cluster {
            let routes: Vec<String> = routes.iter().map(|p| format!("nats://127.0.0.1:{p}")).collect();
            args.extend(["--cluster".into(), format!("nats://127.0.0.1:{route_port}")]);
            args.extend(["--routes".into(), routes.join(","), "--cluster_name".into(), "mcpft".into()]);
        }
        let proc = Proc::spawn("nats-server", args, dir.join(format!("{name}.log")));
        NatsServer { port, name: name.to_owned(), store, proc }
    }

    /// Start a lone server in `dir` and wait until JetStream answers.
    pub async fn start(dir: &Path) -> NatsServer {
        let server = NatsServer::spawn(dir, "nats-0", free_port(), None);
        await_jetstream(&server.url()).await;
        server
    }

    /// `nats://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    /// Kill it (a crash; the store directory stays).
    pub fn kill(&mut self) {
        self.proc.kill();
    }

    /// Start it again on the same port and store, and wait until JetStream answers.
    pub async fn restart(&mut self) {
        self.proc.restart();
        await_jetstream(&self.url()).await;
    }
}

/// A JetStream context on the server at `url`, if it accepts a connection within a second.
async fn jetstream_at(url: &str) -> Option<async_nats::jetstream::Context> {
    let client = tokio::time::timeout(Duration::from_secs(1), async_nats::connect(url)).await.ok()?.ok()?;
    Some(async_nats::jetstream::new(client))
}

/// Wait until JetStream answers at `url` (for a cluster: a meta leader exists): a stream
/// lookup comes back with "not found" rather than failing.
pub async fn await_jetstream(url: &str) {
    use async_nats::jetstream::context::GetStreamErrorKind;
    eventually("jetstream answers", WAIT * 3, || async move {
        let Some(js) = jetstream_at(url).await else { return false };
        match tokio::time::timeout(Duration::from_secs(1), js.get_stream("MCP_FLEET_PROBE")).await {
            Ok(Ok(_)) => true,
            Ok(Err(err)) => matches!(err.kind(), GetStreamErrorKind::JetStream(e)
                if e.error_code() == async_nats::jetstream::ErrorCode::STREAM_NOT_FOUND),
            Err(_) => false,
        }
    })
    .await;
}

/// Three NATS servers with JetStream, routed into one cluster.
pub struct NatsCluster {
    /// The servers, `nats-0` … `nats-2`.
    pub servers: Vec<NatsServer>,
}

impl NatsCluster {
    /// Start it in `dir` and wait until JetStream has a meta leader.
    pub async fn start(dir: &Path) -> NatsCluster {
        let ports: Vec<u16> = (0..3).map(|_| free_port()).collect();
        let routes: Vec<u16> = (0..3).map(|_| free_port()).collect();
        let servers = (0..3)
            .map(|i| NatsServer::spawn(dir, &format!("nats-{i}"), ports[i], Some((routes[i], &routes))))
            .collect();
        let cluster = NatsCluster { servers };
        await_jetstream(&cluster.servers[0].url()).await;
        cluster.await_placement().await;
        cluster
    }

    /// Wait until a three-replica stream can be placed: a meta leader alone is not enough, the
    /// other servers must have joined it, or creating an R3 stream fails with "no suitable
    /// peers for placement".
    async fn await_placement(&self) {
        let url = self.servers[0].url();
        let url = url.as_str();
        eventually("an R3 stream can be placed", WAIT * 3, || async move {
            let Some(js) = jetstream_at(url).await else { return false };
            let config = async_nats::jetstream::stream::Config {
                name: "MCP_FLEET_PLACEMENT_PROBE".into(),
                subjects: vec!["mcp-fleet-placement-probe".into()],
                num_replicas: 3,
                ..Default::default()
            };
            match tokio::time::timeout(Duration::from_secs(2), js.create_stream(config)).await {
                Ok(Ok(_)) => js.delete_stream("MCP_FLEET_PLACEMENT_PROBE").await.is_ok(),
                _ => false,
            }
        })
        .await;
    }

    /// Every server, comma-separated: `nats://127.0.0.1:<p0>,127.0.0.1:<p1>,127.0.0.1:<p2>`.
    pub fn url(&self) -> String {
        let hosts: Vec<String> = self.servers.iter().map(|s| format!("127.0.0.1:{}", s.port)).collect();
        format!("nats://{}", hosts.join(","))
    }
}
