//! The `mcp-fleet` binary under test: started with free ports, probed and queried on its admin
//! port, stopped with SIGTERM or SIGKILL, killed on drop; a private stream of a real broker for
//! a fleet of them, and HAProxy in front of three. Shared by the node's test files.

#![allow(dead_code)] // each test file uses its own part of it

use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use http_body_util::BodyExt;
use mcp_fleet_tests::cluster::{Broker, broker_or_skip, unique_name};
use mcp_fleet_tests::eventually;
use tokio::time::Instant;

/// A running `mcp-fleet` process, killed on drop.
pub(crate) struct Node {
    child: Child,
    pub(crate) mcp: SocketAddr,
    pub(crate) admin: SocketAddr,
}

impl Node {
    /// Start the binary with `args` (plus free MCP and admin ports), optionally through
    /// `prlimit` with a soft open-file limit; its log goes to the test's stderr.
    pub(crate) fn start(args: &[&str], soft_nofile: Option<u64>) -> Node {
        Node::spawn(args, soft_nofile, Stdio::inherit())
    }

    /// Start the binary with `args`, its log (RUST_LOG=warn) appended to `log`.
    pub(crate) fn start_logging_to(args: &[&str], log: &Path) -> Node {
        let file = std::fs::OpenOptions::new().create(true).append(true).open(log).expect("open the node log");
        Node::spawn(args, None, Stdio::from(file))
    }

    fn spawn(args: &[&str], soft_nofile: Option<u64>, log: Stdio) -> Node {
        let (mcp, admin) = (free_addr(), free_addr());
        let binary = env!("CARGO_BIN_EXE_mcp-fleet");
        let mut command = match soft_nofile {
            Some(soft) => {
                let mut c = Command::new("prlimit");
                c.arg(format!("--nofile={soft}:")).arg(binary);
                c
            }
            None => Command::new(binary),
        };
        command
            .args(["--listen", &mcp.to_string(), "--admin-listen", &admin.to_string()])
            .args(args)
            .env("RUST_LOG", "warn")
            // Tests choose their own exporter settings.
            .env_remove("OTEL_SERVICE_NAME")
            .env_remove("OTEL_RESOURCE_ATTRIBUTES")
            .env_remove("OTEL_EXPORTER_OTLP_PROTOCOL")
            .env_remove("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
            // The node logs to stdout.
            .stdout(log)
            .stderr(Stdio::inherit());
        Node { child: command.spawn().expect("start mcp-fleet"), mcp, admin }
    }

    pub(crate) fn url(&self) -> String {
        format!("http://{}/mcp", self.mcp)
    }

    /// The status of `GET <path>` on the admin port (`None` while it does not answer).
    pub(crate) async fn probe(&self, path: &str) -> Option<u16> {
        self.admin_get(path).await.map(|(status, _)| status)
    }

    /// `GET <path>` on the admin port: status and body (`None` while it does not answer).
    pub(crate) async fn admin_get(&self, path: &str) -> Option<(u16, String)> {
        let connect = tokio::net::TcpStream::connect(self.admin);
        let stream = tokio::time::timeout(Duration::from_secs(1), connect).await.ok()?.ok()?;
        let (mut sender, conn) =
            hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream)).await.ok()?;
        tokio::spawn(conn);
        let req =
            http::Request::get(path).header("host", "admin").body(http_body_util::Empty::<bytes::Bytes>::new()).ok()?;
        let resp = tokio::time::timeout(Duration::from_secs(1), sender.send_request(req)).await.ok()?.ok()?;
        let status = resp.status().as_u16();
        let body = resp.into_body().collect().await.ok()?.to_bytes();
        Some((status, String::from_utf8_lossy(&body).into_owned()))
    }

    /// Wait (up to 15 s) until `/readyz` says 200.
    pub(crate) async fn ready(&self) {
        let what = format!("node {} is ready", self.mcp);
        eventually(what, Duration::from_secs(15), async || self.probe("/readyz").await == Some(200)).await;
    }

    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Send SIGTERM (graceful drain).
    pub(crate) fn terminate(&self) {
        self.signal("-TERM");
    }

    /// Send SIGHUP (reload the catalog file).
    pub(crate) fn hangup(&self) {
        self.signal("-HUP");
    }

    fn signal(&self, which: &str) {
        let status = Command::new("kill").arg(which).arg(self.child.id().to_string()).status().expect("kill");
        assert!(status.success());
    }

    /// SIGKILL, and reap it.
    pub(crate) fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Wait (up to `within`) for the process to exit; its exit code.
    pub(crate) async fn exited(&mut self, within: Duration) -> Option<i32> {
        let deadline = Instant::now() + within;
        while Instant::now() < deadline {
            if let Some(status) = self.child.try_wait().expect("wait") {
                return status.code();
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        None
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A free local port (bound then released: good enough for tests on one machine).
pub(crate) fn free_addr() -> SocketAddr {
    std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr")
}

/// A `--bus` URL on `broker` that no other test uses (a fresh Redis stream key, or a fresh
/// JetStream stream and subject prefix); `None` (after printing the skip) when the broker is
/// unreachable, a failure under `MCP_FLEET_REQUIRE_BROKERS`.
pub(crate) async fn private_bus(broker: Broker) -> Option<String> {
    let url = broker_or_skip(broker).await?;
    let unique = unique_name().replace('-', "_");
    Some(match broker {
        Broker::Redis => format!("{url}/0?stream=mcp-fleet-test:{unique}"),
        Broker::Nats => format!("{url}?stream=MCP_FLEET_TEST_{unique}&prefix=mcp-fleet-test.{unique}"),
    })
}

/// HAProxy with `deploy/local/haproxy.cfg` in front of three nodes; killed on drop.
pub(crate) struct LoadBalancer {
    child: Child,
    /// Its MCP endpoint.
    pub(crate) url: String,
    /// HAProxy's own log (server state changes).
    log: std::path::PathBuf,
}

impl LoadBalancer {
    /// `None` when haproxy is not installed (a failure under `MCP_FLEET_REQUIRE_BROKERS`).
    pub(crate) async fn start(nodes: [&Node; 3], dir: &Path) -> Option<LoadBalancer> {
        if Command::new("haproxy").arg("-v").stdout(Stdio::null()).status().is_err() {
            // CI installs it and requires it, like the brokers.
            assert!(std::env::var_os("MCP_FLEET_REQUIRE_BROKERS").is_none(), "haproxy is not installed");
            eprintln!("haproxy is not installed: the load-balanced part is skipped");
            return None;
        }
        let bind = free_addr();
        let config = concat!(env!("CARGO_MANIFEST_DIR"), "/../../deploy/local/haproxy.cfg");
        let mut command = Command::new("haproxy");
        command.arg("-f").arg(config).env("LB_BIND", bind.to_string());
        for (i, node) in nodes.iter().enumerate() {
            command.env(format!("NODE{}", i + 1), node.mcp.to_string());
            command.env(format!("ADMIN{}_PORT", i + 1), node.admin.port().to_string());
        }
        let log = dir.join("haproxy.log");
        let stderr = std::fs::File::create(&log).expect("haproxy log");
        let child = command.stdout(Stdio::null()).stderr(stderr).spawn().expect("start haproxy");
        let lb = LoadBalancer { child, url: format!("http://{bind}/mcp"), log };
        eventually("haproxy forwards to the fleet", Duration::from_secs(10), async || {
            tokio::net::TcpStream::connect(bind).await.is_ok()
        })
        .await;
        Some(lb)
    }

    /// Wait (up to `within`) until HAProxy's health checks have taken the `i`th node (0-based,
    /// `node{i+1}` in the config) out of the rotation.
    pub(crate) async fn await_down(&self, i: usize, within: Duration) {
        let said = format!("Server fleet/node{} is DOWN", i + 1);
        eventually("haproxy marks the node down", within, async || {
            std::fs::read_to_string(&self.log).is_ok_and(|log| log.contains(&said))
        })
        .await;
    }
}

impl Drop for LoadBalancer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
