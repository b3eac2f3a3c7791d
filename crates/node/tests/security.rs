//! The `mcp-fleet` binary as an attacker meets it (README, Security): the secrets it is given
//! never show in its log; an admin port beyond loopback needs a token, and so does
//! `/admin/fleet`; a catalog file reaches no file outside its folder and no environment
//! variable outside its allowlist — refused with its position at start and on reload.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::Duration;

use common::free_addr;
use http_body_util::BodyExt;
use mcp_fleet_tests::cluster::{Broker, broker_or_skip, unique_name};
use mcp_fleet_tests::faults::procs::TempDir;
use mcp_fleet_tests::{McpClient, eventually};
use serde_json::{Value, json};
use tokio::time::Instant;

/// A node started with `RUST_LOG=info`, stdout and stderr in one log file; killed on drop.
struct Started {
    child: Child,
    admin: std::net::SocketAddr,
    mcp: std::net::SocketAddr,
    log: PathBuf,
}

/// Start the binary with `args` in `dir`; `--listen` and `--admin-listen` (loopback, free
/// ports) come first unless `args` names its own admin address.
fn start(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Started {
    let (mcp, admin) = (free_addr(), free_addr());
    let log = dir.join(format!("node-{}.log", unique_name()));
    let out = std::fs::File::create(&log).expect("log file");
    let mut command = Command::new(env!("CARGO_BIN_EXE_mcp-fleet"));
    command.args(["--listen", &mcp.to_string()]);
    if !args.contains(&"--admin-listen") {
        command.args(["--admin-listen", &admin.to_string()]);
    }
    for var in ["MCP_FLEET_BUS", "MCP_FLEET_ADMIN_TOKEN", "OTEL_EXPORTER_OTLP_HEADERS", "OTEL_SERVICE_NAME"] {
        command.env_remove(var);
    }
    command.args(args).envs(env.iter().copied()).env("RUST_LOG", "info").current_dir(dir);
    let child = command.stdout(out.try_clone().expect("log file")).stderr(out).spawn().expect("start mcp-fleet");
    Started { child, admin, mcp, log }
}

impl Started {
    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Wait up to `within` for the process to exit; its exit code.
    async fn exited(&mut self, within: Duration) -> Option<i32> {
        let deadline = Instant::now() + within;
        while Instant::now() < deadline {
            if let Some(status) = self.child.try_wait().expect("wait") {
                return Some(status.code().unwrap_or(-1));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        None
    }

    /// Wait until `/readyz` answers 200 (panics with the log if the process exits first).
    async fn ready(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while admin(self.admin, http::Method::GET, "/readyz", None).await.map(|(s, _)| s) != Some(200) {
            if let Some(code) = self.child.try_wait().expect("wait") {
                panic!("the node exited ({code}) before it was ready:\n{}", self.log());
            }
            assert!(Instant::now() < deadline, "the node did not become ready:\n{}", self.log());
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    fn url(&self) -> String {
        format!("http://{}/mcp", self.mcp)
    }

    fn hangup(&self) {
        let status = Command::new("kill").arg("-HUP").arg(self.child.id().to_string()).status().expect("kill");
        assert!(status.success());
    }
}

impl Drop for Started {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One request to an admin port: status and body (`None` while it does not answer).
async fn admin(
    addr: std::net::SocketAddr,
    method: http::Method,
    path: &str,
    token: Option<&str>,
) -> Option<(u16, String)> {
    let stream = tokio::time::timeout(Duration::from_secs(1), tokio::net::TcpStream::connect(addr)).await.ok()?.ok()?;
    let (mut sender, conn) = hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream)).await.ok()?;
    tokio::spawn(conn);
    let mut req = http::Request::builder().method(method).uri(path).header("host", "admin");
    if let Some(token) = token {
        req = req.header("authorization", format!("Bearer {token}"));
    }
    let body = if path == "/admin/notify" { r#"{"kind":"tools"}"# } else { "" };
    let req = req.body(http_body_util::Full::new(bytes::Bytes::from(body))).ok()?;
    let resp = tokio::time::timeout(Duration::from_secs(2), sender.send_request(req)).await.ok()?.ok()?;
    let status = resp.status().as_u16();
    let body = resp.into_body().collect().await.ok()?.to_bytes();
    Some((status, String::from_utf8_lossy(&body).into_owned()))
}

fn assert_absent(log: &str, secrets: &[&str]) {
    for secret in secrets {
        assert!(!log.contains(secret), "{secret:?} is in the log:\n{log}");
    }
}

// --- Secrets never logged ------------------------------------------------------------------

#[tokio::test]
async fn an_unreachable_bus_is_retried_without_printing_its_credentials() {
    let dir = TempDir::new("security");
    let nowhere = free_addr();
    // What the log shows instead: the retries, or (a missing creds file is final) the error.
    for (bus, secret, shown) in [
        (format!("redis://default:SECRET-redis-pass@{nowhere}/0"), "SECRET-redis-pass", "retrying"),
        (format!("nats://{nowhere}?token=SECRET-nats-token"), "SECRET-nats-token", "retrying"),
        (format!("nats://SECRET-bare-token@{nowhere}"), "SECRET-bare-token", "retrying"),
        (format!("nats://{nowhere}?creds=/run/SECRET-creds-path.creds"), "SECRET-creds-path", "credentials file ***"),
    ] {
        let mut node = start(dir.path(), &["--bus", &bus, "--bus-connect-secs", "2"], &[]);
        let code = node.exited(Duration::from_secs(20)).await;
        let log = node.log();
        assert!(code.is_some_and(|c| c != 0), "{bus}: the node gives up on an unreachable bus:\n{log}");
        assert!(log.contains(shown), "{bus}: the log says what happened:\n{log}");
        assert_absent(&log, &[secret]);
    }
}

#[tokio::test]
async fn a_connected_node_names_its_bus_without_the_password_in_its_log_and_in_admin_fleet() {
    let Some(url) = broker_or_skip(Broker::Redis).await else { return };
    let dir = TempDir::new("security");
    // The test Redis has no password: its default user takes any (`nopass`).
    let bus = format!(
        "{}/0?stream=mcp-fleet-test:{}",
        url.replacen("redis://", "redis://default:SECRET-redis-connected@", 1),
        unique_name()
    );
    let mut node = start(dir.path(), &["--bus", &bus, "--admin-token", "SECRET-admin-token"], &[]);
    node.ready().await;
    let (status, fleet) =
        admin(node.admin, http::Method::GET, "/admin/fleet", Some("SECRET-admin-token")).await.expect("fleet");
    assert_eq!(status, 200, "{fleet}");
    let fleet: Value = serde_json::from_str(&fleet).expect("JSON");
    assert_eq!(fleet["bus"].as_str().map(|b| b.starts_with("redis://default:***@")), Some(true), "{fleet}");
    assert_absent(&fleet.to_string(), &["SECRET-redis-connected"]);
    let log = node.log();
    assert!(log.contains("serving MCP at /mcp"), "{log}");
    assert!(log.contains("redis://default:***@"), "the log still names the bus: {log}");
    assert_absent(&log, &["SECRET-redis-connected", "SECRET-admin-token"]);
}

#[tokio::test]
async fn otlp_credentials_stay_out_of_the_log() {
    let dir = TempDir::new("security");
    let collector = format!("http://collector:SECRET-otlp-pass@{}", free_addr());
    let mut node = start(
        dir.path(),
        &["--otlp-endpoint", &collector],
        &[("OTEL_EXPORTER_OTLP_HEADERS", "api-key=SECRET-otlp-header,x-team=infra")],
    );
    node.ready().await;
    let log = node.log();
    assert!(log.contains("exporting traces and audit records over OTLP/HTTP"), "{log}");
    assert!(log.contains("api-key=***"), "header names are shown, values are not: {log}");
    assert_absent(&log, &["SECRET-otlp-pass", "SECRET-otlp-header"]);
}

// --- The admin port ------------------------------------------------------------------------

#[tokio::test]
async fn an_admin_port_beyond_loopback_needs_a_token_or_an_explicit_insecure_flag() {
    let dir = TempDir::new("security");
    let port = free_addr().port();
    let everywhere = format!("0.0.0.0:{port}");
    let mut refused = start(dir.path(), &["--admin-listen", &everywhere], &[]);
    let code = refused.exited(Duration::from_secs(10)).await;
    let log = refused.log();
    assert!(code.is_some_and(|c| c != 0), "no token, no start:\n{log}");
    assert!(log.contains("--admin-token-file") && log.contains("--admin-insecure"), "the error says what to do: {log}");

    let local = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    let mut lab = start(dir.path(), &["--admin-listen", &everywhere, "--admin-insecure"], &[]);
    lab.admin = local;
    lab.ready().await;
    assert!(lab.log().contains("--admin-insecure"), "a warning says so: {}", lab.log());
    drop(lab);

    let mut tokened = start(dir.path(), &["--admin-listen", &everywhere, "--admin-token", "t0k3n-0123"], &[]);
    tokened.admin = local;
    tokened.ready().await;
}

#[tokio::test]
async fn an_empty_admin_token_stops_the_node_at_start() {
    let dir = TempDir::new("security");
    std::fs::write(dir.path().join("empty-token"), "\n").expect("write");
    let file = dir.path().join("empty-token");
    for args in [["--admin-token", ""], ["--admin-token-file", file.to_str().expect("utf-8")]] {
        let mut node = start(dir.path(), &args, &[]);
        let code = node.exited(Duration::from_secs(10)).await;
        let log = node.log();
        assert!(code.is_some_and(|c| c != 0), "{args:?}: no start\n{log}");
        assert!(log.contains("is empty"), "{args:?}: the error says why: {log}");
    }
}

#[tokio::test]
async fn with_a_token_admin_fleet_and_operations_need_it_and_probes_and_metrics_do_not() {
    let dir = TempDir::new("security");
    let mut node = start(dir.path(), &["--admin-token", "the-admin-token"], &[]);
    node.ready().await;
    for (method, path) in [(http::Method::GET, "/admin/fleet"), (http::Method::POST, "/admin/notify")] {
        for token in [None, Some("wrong"), Some("the-admin-token-and-more"), Some("the-admin")] {
            let (status, _) = admin(node.admin, method.clone(), path, token).await.expect("answer");
            assert_eq!(status, 401, "{method} {path} with {token:?}");
        }
        let (status, body) = admin(node.admin, method.clone(), path, Some("the-admin-token")).await.expect("answer");
        assert_eq!(status, 200, "{method} {path}: {body}");
    }
    for open in ["/livez", "/readyz", "/metrics"] {
        assert_eq!(admin(node.admin, http::Method::GET, open, None).await.map(|(s, _)| s), Some(200), "{open}");
    }
}

// --- The catalog file ----------------------------------------------------------------------

/// A catalog with one file resource named `file`.
fn file_catalog(file: &str) -> String {
    format!("[[resources]]\nuri = \"docs://notes\"\nname = \"notes\"\nfile = \"{file}\"\n")
}

#[tokio::test]
async fn a_catalog_naming_a_file_outside_its_folder_is_refused_at_start_with_its_position() {
    let dir = TempDir::new("security");
    let folder = dir.path().join("catalog");
    std::fs::create_dir(&folder).expect("folder");
    std::fs::write(dir.path().join("admin-token"), "SECRET-next-door").expect("write");
    std::os::unix::fs::symlink("/etc/passwd", folder.join("innocent.md")).expect("symlink");
    for file in ["/etc/passwd", "../admin-token", "innocent.md", "sub/../../admin-token"] {
        let path = folder.join("catalog.toml");
        std::fs::write(&path, file_catalog(file)).expect("write");
        let mut node = start(dir.path(), &["--catalog", path.to_str().expect("utf-8")], &[]);
        let code = node.exited(Duration::from_secs(10)).await;
        let log = node.log();
        assert!(code.is_some_and(|c| c != 0), "{file}: refused at start:\n{log}");
        assert!(log.contains(r#"catalog.toml:4:1: resources[0] "docs://notes": file "#), "{file}: positioned: {log}");
        assert!(log.contains("outside"), "{file}: {log}");
    }
}

#[tokio::test]
async fn a_files_root_holding_the_admin_token_is_refused_at_start() {
    let dir = TempDir::new("security");
    let folder = dir.path().join("catalog");
    std::fs::create_dir_all(dir.path().join("admin-token")).expect("folder");
    std::fs::create_dir(&folder).expect("folder");
    let path = folder.join("catalog.toml");
    std::fs::write(&path, "[[tools]]\nname = \"t\"\ntext = \"t\"\n").expect("write");
    let (path, root) = (path.to_str().expect("utf-8"), dir.path().to_str().expect("utf-8"));
    // The token beside the catalog (the default root), or under a wider --catalog-files-root.
    for (token, extra) in [(folder.join("admin-token"), None), (dir.path().join("admin-token/token"), Some(root))] {
        std::fs::write(&token, "SECRET-admin-token").expect("write");
        let token = token.to_str().expect("utf-8");
        let mut args = vec!["--catalog", path, "--admin-token-file", token];
        if let Some(root) = extra {
            args.extend(["--catalog-files-root", root]);
        }
        let mut node = start(dir.path(), &args, &[]);
        let code = node.exited(Duration::from_secs(10)).await;
        let log = node.log();
        assert!(code.is_some_and(|c| c != 0), "{token}: refused at start:\n{log}");
        assert!(log.contains("holds the --admin-token-file") && log.contains(token), "{token}: says why: {log}");
        assert_absent(&log, &["SECRET-admin-token"]);
    }
    // Kept apart, the same token is fine.
    let mut node =
        start(dir.path(), &["--catalog", path, "--admin-token-file", &format!("{root}/admin-token/token")], &[]);
    node.ready().await;
}

#[tokio::test]
async fn catalog_files_root_widens_where_files_may_come_from() {
    let dir = TempDir::new("security");
    let folder = dir.path().join("catalog");
    std::fs::create_dir(&folder).expect("folder");
    std::fs::write(dir.path().join("shared.md"), "shared notes").expect("write");
    let path = folder.join("catalog.toml");
    std::fs::write(&path, file_catalog("../shared.md")).expect("write");
    let root = dir.path().to_str().expect("utf-8");
    let mut node = start(dir.path(), &["--catalog", path.to_str().expect("utf-8"), "--catalog-files-root", root], &[]);
    node.ready().await;
    let read = McpClient::new(node.url()).result("resources/read", json!({"uri": "docs://notes"})).await;
    assert_eq!(read["contents"][0]["text"], "shared notes", "{read}");
}

#[tokio::test]
async fn a_reload_that_escapes_the_folder_or_the_allowlist_is_refused_and_the_old_catalog_serves() {
    let dir = TempDir::new("security");
    let path = dir.path().join("catalog.toml");
    std::fs::write(dir.path().join("notes.md"), "the notes").expect("write");
    std::fs::write(&path, file_catalog("notes.md")).expect("write");
    let mut node = start(dir.path(), &["--catalog", path.to_str().expect("utf-8"), "--catalog-poll-secs", "0"], &[]);
    node.ready().await;
    let client = McpClient::new(node.url());
    let leak = "[[tools]]\nname = \"leak\"\nhttp = { url = \"http://127.0.0.1:1/\", headers = { X-Leak = \"${MCP_FLEET_BUS}\" } }\n";
    for (text, expected) in [
        (file_catalog("/etc/passwd"), r#"catalog.toml:4:1: resources[0] "docs://notes": file "/etc/passwd""#),
        (leak.to_owned(), r#"catalog.toml:3:51: tools[0] "leak": environment variable MCP_FLEET_BUS is not allowed"#),
    ] {
        std::fs::write(&path, &text).expect("write");
        node.hangup();
        eventually("the reload is refused", Duration::from_secs(10), async || node.log().contains(expected)).await;
        let read = client.result("resources/read", json!({"uri": "docs://notes"})).await;
        assert_eq!(read["contents"][0]["text"], "the notes", "the previous catalog serves: {read}");
    }
}

#[tokio::test]
async fn a_catalog_reading_a_variable_outside_the_allowlist_is_refused_at_start() {
    let dir = TempDir::new("security");
    let path = dir.path().join("catalog.toml");
    let catalog = |var: &str| {
        format!(
            "[[tools]]\nname = \"t\"\nhttp = {{ url = \"http://127.0.0.1:1/\", headers = {{ X-A = \"${{{var}}}\" }} }}\n"
        )
    };
    let bus = "redis://default:SECRET-bus@127.0.0.1:1/0";
    std::fs::write(&path, catalog("MCP_FLEET_BUS")).expect("write");
    let args = ["--catalog", path.to_str().expect("utf-8")];
    let mut node = start(dir.path(), &args, &[("MCP_FLEET_BUS", bus)]);
    let code = node.exited(Duration::from_secs(10)).await;
    let log = node.log();
    assert!(code.is_some_and(|c| c != 0), "refused at start:\n{log}");
    assert!(
        log.contains(r#"catalog.toml:3:51: tools[0] "t": environment variable MCP_FLEET_BUS is not allowed"#),
        "{log}"
    );
    assert_absent(&log, &["SECRET-bus"]);

    // MCP_CATALOG_* is allowed by default; --catalog-env-allow adds names and prefixes.
    std::fs::write(&path, catalog("MCP_CATALOG_TOKEN")).expect("write");
    start(dir.path(), &args, &[("MCP_CATALOG_TOKEN", "x")]).ready().await;
    std::fs::write(&path, catalog("ORDERS_TOKEN")).expect("write");
    let widened = [&args[..], &["--catalog-env-allow", "PAYMENTS_KEY,ORDERS_*"]].concat();
    start(dir.path(), &widened, &[("ORDERS_TOKEN", "x")]).ready().await;
}
