//! HAProxy with the shipped `deploy/local/haproxy.cfg` in front of in-process nodes: round
//! robin per request, health checks answered by a small responder (in-process nodes have no
//! admin port), so a test talks to the fleet the way a deployment's clients do.

use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;

use crate::faults::procs::free_port;

/// A running HAProxy (killed when dropped).
pub struct Balancer {
    child: Child,
    health: tokio::task::JoinHandle<()>,
    /// Its MCP endpoint.
    pub url: String,
}

impl Drop for Balancer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.health.abort();
    }
}

impl Balancer {
    /// HAProxy in front of `nodes` (three MCP addresses); `None` when haproxy is not installed
    /// (a failure under `MCP_FLEET_REQUIRE_BROKERS`, as CI installs it).
    pub async fn start(nodes: [SocketAddr; 3]) -> Option<Balancer> {
        if Command::new("haproxy").arg("-v").stdout(Stdio::null()).status().is_err() {
            assert!(std::env::var_os("MCP_FLEET_REQUIRE_BROKERS").is_none(), "haproxy is not installed");
            eprintln!("haproxy is not installed: the balanced test is skipped");
            return None;
        }
        let health = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let health_port = health.local_addr().expect("addr").port();
        let health = tokio::spawn(async move {
            while let Ok((mut socket, _)) = health.accept().await {
                let ok = b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n";
                let _ = socket.write_all(ok).await;
            }
        });
        let bind = SocketAddr::from(([127, 0, 0, 1], free_port()));
        let config = concat!(env!("CARGO_MANIFEST_DIR"), "/../deploy/local/haproxy.cfg");
        let mut command = Command::new("haproxy");
        command.arg("-f").arg(config).env("LB_BIND", bind.to_string());
        for (i, node) in nodes.iter().enumerate() {
            command.env(format!("NODE{}", i + 1), node.to_string());
            command.env(format!("ADMIN{}_PORT", i + 1), health_port.to_string());
        }
        let child = command.stdout(Stdio::null()).stderr(Stdio::null()).spawn().expect("start haproxy");
        let balancer = Balancer { child, health, url: format!("http://{bind}/mcp") };
        for _ in 0..100 {
            if tokio::net::TcpStream::connect(bind).await.is_ok() {
                return Some(balancer);
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("haproxy did not listen on {bind}");
    }
}
