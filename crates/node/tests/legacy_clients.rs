//! 2025-era MCP clients from the registries — the TypeScript SDK v1 (`@modelcontextprotocol/sdk`,
//! `StreamableHTTPClientTransport`) and the Python SDK v1 (`mcp`, `streamable_http_client` +
//! `ClientSession`) — against a fleet of three `mcp-fleet` nodes behind HAProxy
//! (`deploy/local/haproxy.cfg`: round robin, no affinity), on Redis and on NATS JetStream.
//!
//! Why: the 2025 wire is stateful (a session, a GET stream, server-to-client requests), and the
//! fleet keeps that state in the bus so that any replica serves any request. A hand-written
//! client proves only what its author thought of; these are the clients people run, with their
//! own reconnection and session handling. Each of them, through the load balancer: initializes
//! (2025-11-25), lists and calls tools, subscribes, hears `tools/list_changed` and
//! `resources/updated` published on each of the three nodes on its GET stream, unsubscribes and
//! stops hearing that URI, answers an elicitation (the demo `confirm` tool) whose answer is
//! POSTed to another replica than the one that asked, and survives a SIGKILL of the node holding
//! its GET stream: the SDK reconnects with `Last-Event-ID` by itself, and hears the changes
//! published while it had no stream (replayed from the new node's history, or as the gap rule's
//! notification of every list and subscribed URI when the history cannot tell), then new ones.
//! Finally it ends the session (TypeScript: `terminateSession()`; Python: leaving the
//! transport's context, its only way), after which every node answers 404 for the id.
//!
//! The clients (`tests/clients/`: `package.json` + lock, `requirements.txt`, and a thin adapter
//! per SDK that the test drives over stdin/stdout) are installed on first use with `npm ci` and
//! a venv + `pip install` under `<target dir>/legacy-clients/`, keyed by the lock files' content.
//! Without a broker, haproxy, node/npm or python3 the tests print `skipped: …`; with
//! `MCP_FLEET_REQUIRE_BROKERS=1` (CI) they fail instead. Every wait has a timeout; a scenario
//! takes under 60 s once the clients are installed (about 6 s here); `--nocapture` shows what
//! each client heard and sent.

mod common;

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{LoadBalancer, Node, private_bus};
use mcp_fleet_tests::cluster::{Broker, EVENT_META};
use mcp_fleet_tests::eventually;
use mcp_fleet_tests::faults::procs::TempDir;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::mpsc;
use tokio::time::Instant;

/// The negotiated version every client must get.
const VERSION: &str = "2025-11-25";
/// Stays subscribed: it must come back after the resume.
const KEPT: &str = "fleet://status";
/// Unsubscribed halfway: it must never be heard after that.
const DROPPED: &str = "fleet://items/7";
const TOOLS_CHANGED: &str = "notifications/tools/list_changed";
const PROMPTS_CHANGED: &str = "notifications/prompts/list_changed";
const RESOURCES_CHANGED: &str = "notifications/resources/list_changed";
const UPDATED: &str = "notifications/resources/updated";
/// How long a client may take to hear one notification.
const HEAR: Duration = Duration::from_secs(10);
/// A scenario's bound once the clients are installed.
const SCENARIO: Duration = Duration::from_secs(60);
/// An install's bound (npm ci, pip install; done once per lock file content).
const INSTALL: Duration = Duration::from_secs(180);

#[tokio::test]
async fn the_typescript_sdk_client_through_haproxy_on_redis() {
    scenario(Broker::Redis, Sdk::TypeScript).await;
}

#[tokio::test]
async fn the_typescript_sdk_client_through_haproxy_on_nats() {
    scenario(Broker::Nats, Sdk::TypeScript).await;
}

#[tokio::test]
async fn the_python_sdk_client_through_haproxy_on_redis() {
    scenario(Broker::Redis, Sdk::Python).await;
}

#[tokio::test]
async fn the_python_sdk_client_through_haproxy_on_nats() {
    scenario(Broker::Nats, Sdk::Python).await;
}

/// Set up the fleet, the load balancer and the client (or skip), then run [`exercise`] within
/// [`SCENARIO`].
async fn scenario(broker: Broker, sdk: Sdk) {
    let Some(bus) = private_bus(broker).await else { return };
    let Some(program) = sdk.install().await else { return };
    let dir = TempDir::new("legacy-clients");
    let mut nodes = Vec::new();
    for i in 0..3 {
        let id = format!("node-{i}");
        let log = dir.path().join(format!("{id}.log"));
        nodes.push(Node::start_logging_to(&["--bus", &bus, "--node-id", &id], &log));
    }
    for node in &nodes {
        node.ready().await;
    }
    let Some(lb) = LoadBalancer::start([&nodes[0], &nodes[1], &nodes[2]], dir.path()).await else {
        println!("skipped: haproxy is not installed");
        return;
    };
    let client = Driven::spawn(sdk, &program, &dir.path().join("client.log"));
    let mut fleet = Fleet { nodes: nodes.into_iter().map(Some).collect(), lb, client, dir };
    if tokio::time::timeout(SCENARIO, exercise(&mut fleet)).await.is_err() {
        panic!("{sdk:?} on {broker:?}: the scenario took over {SCENARIO:?}\n{}", fleet.client.transcript());
    }
}

/// Everything one client does, and what the fleet must show for it.
async fn exercise(fleet: &mut Fleet) {
    let lb = fleet.lb.url.clone();

    // The handshake, through the load balancer; the SDK opens its GET stream after
    // `initialized`. Waiting for it before anything else keeps the round robin's order of the
    // client's requests the same on every run.
    let connected = fleet.client.op(json!({"op": "connect", "url": lb})).await;
    assert_eq!(connected["protocolVersion"], VERSION, "{connected}");
    assert_eq!(connected["server"]["name"], "mcp-fleet-demo", "{connected}");
    assert_eq!(connected["capabilities"]["resources"]["subscribe"], true, "{connected}");
    let session = connected["sessionId"].as_str().expect("a session id").to_owned();
    assert!(session.len() == 32 && session.bytes().all(|b| b.is_ascii_hexdigit()), "{session}");
    let holder = fleet.stream_holder().await;

    // Tools.
    let tools = fleet.client.op(json!({"op": "list_tools"})).await;
    for name in ["echo", "add", "confirm"] {
        assert!(tools.as_array().expect("names").contains(&json!(name)), "{name} in {tools}");
    }
    let echoed = fleet.client.op(json!({"op": "call", "name": "echo", "arguments": {"text": "over the fleet"}})).await;
    assert_eq!(echoed["content"][0]["text"], "over the fleet", "{echoed}");

    // Two subscriptions; changes published on each node reach the stream, wherever it is.
    for uri in [KEPT, DROPPED] {
        fleet.client.op(json!({"op": "subscribe", "uri": uri})).await;
    }
    for i in 0..3 {
        fleet.publish_and_hear(i, json!({"kind": "tools"}), TOOLS_CHANGED, None).await;
        for uri in [KEPT, DROPPED] {
            fleet.publish_and_hear(i, json!({"kind": "resource", "uri": uri}), UPDATED, Some(uri)).await;
        }
    }

    // Unsubscribed: updates of that URI, from every node, are not heard; a later list change
    // (published after them, so behind them on the bus) is.
    fleet.client.op(json!({"op": "unsubscribe", "uri": DROPPED})).await;
    let unsubscribed = fleet.client.mark();
    for i in 0..3 {
        fleet.notify(i, json!({"kind": "resource", "uri": DROPPED})).await;
    }
    fleet.publish_and_hear(2, json!({"kind": "tools"}), TOOLS_CHANGED, None).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let late = fleet.client.heard_since(unsubscribed, UPDATED, Some(DROPPED));
    assert!(late.is_empty(), "heard {DROPPED} after unsubscribing: {late:?}\n{}", fleet.client.transcript());

    // An elicitation round trip: asked on the call's stream by one node, answered by a POST
    // that round robin sends to the next.
    let before = fleet.counters().await;
    let asked = fleet.client.mark();
    let confirmed = fleet.client.op(json!({"op": "call", "name": "confirm", "arguments": {"action": "deploy"}})).await;
    assert_eq!(confirmed["content"][0]["text"], "Confirmed: deploy", "{confirmed}");
    let elicitations = fleet.client.events_since(asked, "elicitation");
    assert_eq!(elicitations.len(), 1, "{}", fleet.client.transcript());
    assert_eq!(elicitations[0]["params"]["message"], "Confirm: deploy?", "{elicitations:?}");
    let after = fleet.counters().await;
    let moved =
        |pick: fn(&Counters) -> f64| -> Vec<usize> { (0..3).filter(|&i| pick(&after[i]) > pick(&before[i])).collect() };
    let (askers, answered) = (moved(|c| c.server_requests), moved(|c| c.answers));
    assert_eq!(askers.len(), 1, "one node sent the elicitation: {before:?} → {after:?}");
    assert_eq!(answered.len(), 1, "one node took the answer: {before:?} → {after:?}");
    assert_ne!(askers, answered, "the answer landed on the node that asked: {after:?}");
    let serving = (0..3).filter(|&i| after[i].session_requests > 0.0).count();
    assert!(serving > 1, "the session was served by {serving} node(s): {after:?}");

    // The node holding the GET stream dies. Changes published meanwhile (before the client
    // reconnects: both SDKs wait a second first) reach it once it has resumed — through the
    // load balancer, on a live node, with Last-Event-ID — replayed from that node's history
    // or, when the history cannot tell, as the gap rule's notification of every list and every
    // subscribed URI.
    //
    // Round robin sends the client's next request — its reconnection — to the node after the
    // one that took the answer. The Python SDK makes a single reconnection attempt and then
    // gives up for good, and until HAProxy's health checks mark the killed node DOWN a request
    // routed to it fails (503, after HAProxy's retries; the config has no `option redispatch`).
    // So that attempt must not be due on the node about to die: when it would be, one request
    // of the session through the load balancer moves the rotation on. (Whether the GET stream
    // took the slot before or after `initialized` differs from run to run in the Python SDK.)
    if (answered[0] + 1) % 3 == holder {
        let ping = json!({"jsonrpc": "2.0", "id": "rotate", "method": "ping"});
        let (status, body) = session_request(&fleet.lb.url, "POST", &session, Some(ping)).await;
        assert_eq!(status, 200, "a ping through the load balancer: {body}");
    }
    let killed = fleet.client.mark();
    fleet.nodes[holder].as_mut().expect("the holder runs").kill();
    fleet.nodes[holder] = None;
    let live: Vec<usize> = fleet.live().collect();
    let missed = [
        (TOOLS_CHANGED, None, fleet.notify(live[0], json!({"kind": "tools"})).await),
        (UPDATED, Some(KEPT), fleet.notify(live[1], json!({"kind": "resource", "uri": KEPT})).await),
    ];
    let (resumed_on, how) = fleet.resumed_stream_holder().await;
    let mut expected: Vec<(&str, Option<&str>)> = missed.iter().map(|(method, uri, _)| (*method, *uri)).collect();
    if how == "invalidated" {
        expected.extend([(PROMPTS_CHANGED, None), (RESOURCES_CHANGED, None)]);
    }
    for (method, uri) in expected {
        if !fleet.client.heard_within(killed, method, uri, HEAR).await {
            panic!(
                "the {:?} client did not hear {method} {uri:?} after its GET stream resumed ({how}) on node-{resumed_on}\n{}\n{}",
                fleet.client.sdk,
                fleet.legacy_metrics().await,
                fleet.client.transcript()
            );
        }
    }
    for (method, uri, published) in &missed {
        let heard = fleet.client.heard_since(killed, method, *uri);
        let told = |n: &Value| match how {
            "replayed" => n["params"]["_meta"][EVENT_META]["version"] == published["version"],
            _ => n["params"]["_meta"][EVENT_META]["gap"] == true,
        };
        assert!(heard.iter().any(told), "{how}: {method} {uri:?} published as {published}, heard {heard:?}");
    }
    let dropped = fleet.client.heard_since(killed, UPDATED, Some(DROPPED));
    assert!(dropped.is_empty(), "the resume names an unsubscribed URI: {dropped:?}");

    // Until HAProxy's health checks notice, it still sends a share of the requests to the dead
    // node (and answers them 503 after its retries: the config has no `option redispatch`).
    // The client's next requests wait for that; then new changes from each live node reach the
    // resumed stream.
    fleet.lb.await_down(holder, Duration::from_secs(10)).await;
    for i in fleet.live() {
        fleet.publish_and_hear(i, json!({"kind": "resource", "uri": KEPT}), UPDATED, Some(KEPT)).await;
    }
    let other = fleet.live().find(|&i| i != resumed_on).expect("two nodes live");
    fleet.publish_and_hear(other, json!({"kind": "tools"}), TOOLS_CHANGED, None).await;
    let still = fleet.client.op(json!({"op": "list_tools"})).await;
    assert_eq!(still, tools, "the session goes on after the resume");

    // Every live node serves the session, directly.
    for i in fleet.live() {
        let (status, body) =
            fleet.raw(i, "POST", &session, Some(json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}))).await;
        assert_eq!(status, 200, "node-{i} before the DELETE: {body}");
    }

    // The client ends the session; every node then answers 404 for its id, and the GET stream
    // is gone.
    let ended = fleet.client.op(json!({"op": "terminate"})).await;
    assert_eq!(ended["sessionId"], session.as_str(), "{ended}");
    for i in fleet.live() {
        let ping = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
        let (status, body) = fleet.raw(i, "POST", &session, Some(ping)).await;
        assert_eq!(status, 404, "node-{i} after the DELETE: {body}");
        let (status, body) = fleet.raw(i, "GET", &session, None).await;
        assert_eq!(status, 404, "node-{i} GET after the DELETE: {body}");
    }
    let mut ended_total = 0.0;
    for i in fleet.live() {
        let node = fleet.node(i);
        eventually("the ended session's GET stream closes", Duration::from_secs(5), async || {
            gauge(&metrics(node).await, "mcp_fleet_legacy_streams_open", &[]) == 0.0
        })
        .await;
        ended_total += gauge(&metrics(node).await, "mcp_fleet_legacy_sessions_ended_total", &[]);
    }
    assert_eq!(ended_total, 1.0, "one DELETE ended the session");
    fleet.client.op(json!({"op": "close"})).await;
    fleet.client.exited().await;
    // Shown with --nocapture: what the client heard and sent.
    println!("{}", fleet.client.transcript());
}

/// The two SDKs.
#[derive(Debug, Clone, Copy)]
enum Sdk {
    TypeScript,
    Python,
}

/// The program (and its leading arguments) that runs an installed client adapter.
struct Program {
    command: PathBuf,
    args: Vec<PathBuf>,
}

impl Sdk {
    /// Install this SDK (once per lock file content) and answer how to run its adapter;
    /// `None` after printing the skip (a failure under `MCP_FLEET_REQUIRE_BROKERS=1`).
    async fn install(self) -> Option<Program> {
        let install = tokio::task::spawn_blocking(move || self.install_blocking());
        match install.await.expect("the install task") {
            Ok(program) => Some(program),
            Err(why) => {
                skip(&format!("the {self:?} SDK client could not be set up: {why}"));
                None
            }
        }
    }

    fn install_blocking(self) -> Result<Program, String> {
        let sources = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients");
        let (name, locks): (&str, &[&str]) = match self {
            Sdk::TypeScript => ("ts", &["package.json", "package-lock.json"]),
            Sdk::Python => ("py", &["requirements.txt"]),
        };
        let mut key = Fnv::default();
        for lock in locks {
            key.write(&std::fs::read(sources.join(lock)).map_err(|e| format!("{lock}: {e}"))?);
        }
        let root = cache_root();
        std::fs::create_dir_all(&root).map_err(|e| format!("{}: {e}", root.display()))?;
        let dir = root.join(format!("{name}-{:016x}", key.0));
        let stamp = dir.join(".installed");
        // One install at a time, across test threads and processes.
        let lock = File::create(root.join(".lock")).map_err(|e| format!("lock file: {e}"))?;
        lock.lock().map_err(|e| format!("lock: {e}"))?;
        if !stamp.exists() {
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
            for lock in locks {
                std::fs::copy(sources.join(lock), dir.join(lock)).map_err(|e| format!("copy {lock}: {e}"))?;
            }
            match self {
                Sdk::TypeScript => {
                    run(&dir, "npm", &["ci", "--no-audit", "--no-fund", "--ignore-scripts", "--loglevel=error"])?;
                }
                Sdk::Python => {
                    run(&dir, "python3", &["-m", "venv", "venv"])?;
                    let pip = &["-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-input"];
                    run(&dir, "venv/bin/python", &[pip.as_slice(), &["-r", "requirements.txt"]].concat())?;
                }
            }
            std::fs::write(&stamp, b"").map_err(|e| format!("stamp: {e}"))?;
        }
        // The runtime must still be there (an install outlives an uninstalled node).
        match self {
            Sdk::TypeScript => run(&dir, "node", &["--version"])?,
            Sdk::Python => run(&dir, "venv/bin/python", &["--version"])?,
        }
        match self {
            Sdk::TypeScript => {
                // ESM resolves packages from the script's own directory: the adapter runs from
                // beside its node_modules (copied, then renamed over, so a concurrent run never
                // reads half a file).
                let script = dir.join("ts_client.mjs");
                let aside = dir.join(format!("ts_client.{}.mjs.new", mcp_fleet_tests::cluster::unique_name()));
                std::fs::copy(sources.join("ts_client.mjs"), &aside).map_err(|e| format!("copy adapter: {e}"))?;
                std::fs::rename(&aside, &script).map_err(|e| format!("place adapter: {e}"))?;
                Ok(Program { command: "node".into(), args: vec![script] })
            }
            Sdk::Python => Ok(Program {
                command: dir.join("venv/bin/python"),
                args: vec!["-u".into(), sources.join("py_client.py")],
            }),
        }
    }
}

/// `<target dir>/legacy-clients`: beside the build, outside the sources.
fn cache_root() -> PathBuf {
    let binary = Path::new(env!("CARGO_BIN_EXE_mcp-fleet"));
    let target = binary.parent().and_then(Path::parent).unwrap_or(Path::new("."));
    target.join("legacy-clients")
}

/// Run `program args` in `dir` to success within [`INSTALL`]; its output goes to `dir/install.log`.
fn run(dir: &Path, program: &str, args: &[&str]) -> Result<(), String> {
    let log_path = dir.join("install.log");
    let log = std::fs::OpenOptions::new().create(true).append(true).open(&log_path).map_err(|e| e.to_string())?;
    let err = log.try_clone().map_err(|e| e.to_string())?;
    let program_path = if program.contains('/') { dir.join(program) } else { PathBuf::from(program) };
    let mut child = std::process::Command::new(&program_path)
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(err)
        .spawn()
        .map_err(|e| format!("{program}: {e}"))?;
    let deadline = std::time::Instant::now() + INSTALL;
    loop {
        if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
            if status.success() {
                return Ok(());
            }
            let log = std::fs::read_to_string(&log_path).unwrap_or_default();
            return Err(format!("{program} {} failed ({status}):\n{}", args.join(" "), tail(&log, 40)));
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("{program} {} took over {INSTALL:?}", args.join(" ")));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The skip policy of the broker tests: fail under `MCP_FLEET_REQUIRE_BROKERS=1`, else say why.
fn skip(why: &str) {
    assert!(std::env::var("MCP_FLEET_REQUIRE_BROKERS").as_deref() != Ok("1"), "{why} (MCP_FLEET_REQUIRE_BROKERS=1)");
    println!("skipped: {why}");
}

/// FNV-1a, 64 bits: a stable key for the lock files' content.
struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl Fnv {
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0 ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
}

/// A client adapter process: commands in on stdin, replies and events out on stdout.
struct Driven {
    sdk: Sdk,
    child: Child,
    stdin: ChildStdin,
    next_id: u64,
    replies: mpsc::UnboundedReceiver<Value>,
    /// Every event line, in arrival order.
    events: Arc<Mutex<Vec<Value>>>,
    log: PathBuf,
}

impl Driven {
    fn spawn(sdk: Sdk, program: &Program, log: &Path) -> Driven {
        let stderr = File::create(log).expect("client log");
        let mut child = Command::new(&program.command)
            .args(&program.args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|e| panic!("start the {sdk:?} client ({}): {e}", program.command.display()));
        let stdin = child.stdin.take().expect("stdin");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, replies) = mpsc::unbounded_channel();
        let events: Arc<Mutex<Vec<Value>>> = Arc::default();
        tokio::spawn({
            let events = events.clone();
            async move {
                let mut lines = BufReader::new(stdout).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    let message: Value =
                        serde_json::from_str(&line).unwrap_or_else(|_| json!({"event": "stdout", "line": line}));
                    if message.get("reply").is_some() {
                        let _ = tx.send(message);
                    } else {
                        events.lock().expect("events").push(message);
                    }
                }
            }
        });
        Driven { sdk, child, stdin, next_id: 0, replies, events, log: log.to_owned() }
    }

    /// Run one command; its `ok` value (a failed command fails the test).
    async fn op(&mut self, mut command: Value) -> Value {
        self.next_id += 1;
        command["id"] = json!(self.next_id);
        let mut line = command.to_string();
        line.push('\n');
        self.stdin.write_all(line.as_bytes()).await.expect("write to the client");
        self.stdin.flush().await.expect("flush to the client");
        let reply = match tokio::time::timeout(Duration::from_secs(20), self.replies.recv()).await {
            Ok(Some(reply)) => reply,
            Ok(None) => panic!("the {:?} client exited during {command}\n{}", self.sdk, self.transcript()),
            Err(_) => panic!("the {:?} client did not answer {command} within 20 s\n{}", self.sdk, self.transcript()),
        };
        assert_eq!(reply["reply"], command["id"], "replies come in order");
        match reply.get("ok") {
            Some(ok) => ok.clone(),
            None => panic!("{command} failed in the {:?} client: {}\n{}", self.sdk, reply["error"], self.transcript()),
        }
    }

    /// How many events have come so far (a mark for [`Driven::heard_since`]).
    fn mark(&self) -> usize {
        self.events.lock().expect("events").len()
    }

    fn events_since(&self, mark: usize, kind: &str) -> Vec<Value> {
        let events = self.events.lock().expect("events");
        events.iter().skip(mark).filter(|e| e["event"] == kind).cloned().collect()
    }

    /// The notifications `method` (about `uri`, if given) heard since `mark`.
    fn heard_since(&self, mark: usize, method: &str, uri: Option<&str>) -> Vec<Value> {
        let heard = self.events_since(mark, "notification");
        heard.into_iter().filter(|n| n["method"] == method && uri.is_none_or(|u| n["params"]["uri"] == u)).collect()
    }

    /// Wait (up to `within`) until `method` (about `uri`) has been heard since `mark`.
    async fn hear_since(&self, mark: usize, method: &str, uri: Option<&str>, within: Duration) {
        if !self.heard_within(mark, method, uri, within).await {
            panic!("the {:?} client did not hear {method} {uri:?} within {within:?}\n{}", self.sdk, self.transcript());
        }
    }

    /// Whether `method` (about `uri`) is heard since `mark`, waiting up to `within`.
    async fn heard_within(&self, mark: usize, method: &str, uri: Option<&str>, within: Duration) -> bool {
        let deadline = Instant::now() + within;
        while self.heard_since(mark, method, uri).is_empty() {
            if Instant::now() > deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        true
    }

    /// Wait (up to 10 s) for the adapter to exit after `close`.
    async fn exited(&mut self) {
        match tokio::time::timeout(Duration::from_secs(10), self.child.wait()).await {
            Ok(status) => {
                assert!(status.expect("wait").success(), "the {:?} client's exit\n{}", self.sdk, self.transcript())
            }
            Err(_) => panic!("the {:?} client did not exit after close\n{}", self.sdk, self.transcript()),
        }
    }

    /// The events so far and the tail of the adapter's stderr, for failure messages.
    fn transcript(&self) -> String {
        let events = self.events.lock().expect("events");
        let mut text = format!("{:?} client events:\n", self.sdk);
        for event in events.iter() {
            text.push_str(&format!("  {event}\n"));
        }
        let log = std::fs::read_to_string(&self.log).unwrap_or_default();
        text.push_str(&format!("{:?} client stderr ({}):\n{}", self.sdk, self.log.display(), tail(&log, 80)));
        text
    }
}

/// The last `n` lines of `text`.
fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// What one node's metrics say about the session.
#[derive(Debug, Default, Clone, Copy)]
struct Counters {
    /// Server-to-client requests it sent.
    server_requests: f64,
    /// Answers to server-to-client requests POSTed to it (accepted with 202).
    answers: f64,
    /// Requests of the 2025-11-25 era it served.
    session_requests: f64,
}

/// Three nodes (a killed one is `None`), the load balancer and the client.
struct Fleet {
    nodes: Vec<Option<Node>>,
    lb: LoadBalancer,
    client: Driven,
    dir: TempDir,
}

impl Fleet {
    fn node(&self, i: usize) -> &Node {
        self.nodes[i].as_ref().expect("a live node")
    }

    fn live(&self) -> impl Iterator<Item = usize> + use<> {
        let live: Vec<usize> = (0..self.nodes.len()).filter(|&i| self.nodes[i].is_some()).collect();
        live.into_iter()
    }

    /// `POST /admin/notify` on node `i`; the published event's place (`epoch`, `version`).
    async fn notify(&self, i: usize, change: Value) -> Value {
        let url = format!("http://{}/admin/notify", self.node(i).admin);
        let (status, body) = http(&url, "POST", &[], Some(change.to_string())).await;
        assert_eq!(status, 200, "notify on node-{i}: {body}");
        serde_json::from_str(&body).expect("the notify answer")
    }

    /// Publish `change` on node `i` and wait until the client hears `method` (about `uri`).
    async fn publish_and_hear(&self, i: usize, change: Value, method: &str, uri: Option<&str>) {
        let mark = self.client.mark();
        self.notify(i, change).await;
        self.client.hear_since(mark, method, uri, HEAR).await;
    }

    /// The node whose metrics show the session's GET stream open (waiting up to 10 s for one).
    async fn stream_holder(&self) -> usize {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let mut open = Vec::new();
            for i in self.live() {
                if gauge(&metrics(self.node(i)).await, "mcp_fleet_legacy_streams_open", &[]) > 0.0 {
                    open.push(i);
                }
            }
            if open.len() == 1 {
                return open[0];
            }
            assert!(
                Instant::now() < deadline,
                "no single node holds the GET stream: {open:?}\n{}",
                self.client.transcript()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The live node that took the resumed GET stream (with `Last-Event-ID`), and how it resumed
    /// it (`replayed` or `invalidated`), waiting up to 15 s.
    async fn resumed_stream_holder(&self) -> (usize, &'static str) {
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            for i in self.live() {
                let text = metrics(self.node(i)).await;
                if gauge(&text, "mcp_fleet_legacy_streams_open", &[]) == 0.0 {
                    continue;
                }
                for how in ["replayed", "invalidated"] {
                    let label = format!("reason=\"{how}\"");
                    if gauge(&text, "mcp_fleet_legacy_stream_resumes_total", &[&label]) > 0.0 {
                        return (i, how);
                    }
                }
            }
            assert!(Instant::now() < deadline, "no live node took a resumed GET stream\n{}", self.client.transcript());
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Each node's [`Counters`] (zero for a dead one).
    async fn counters(&self) -> Vec<Counters> {
        let mut all = Vec::new();
        for node in &self.nodes {
            let Some(node) = node else {
                all.push(Counters::default());
                continue;
            };
            let text = metrics(node).await;
            all.push(Counters {
                server_requests: gauge(&text, "mcp_fleet_legacy_server_requests_total", &[]),
                answers: gauge(&text, "mcp_fleet_http_requests_total", &["method=\"response\"", "status=\"202\""]),
                session_requests: gauge(
                    &text,
                    "mcp_fleet_protocol_requests_total",
                    &[&format!("version=\"{VERSION}\"")],
                ),
            });
        }
        all
    }

    /// The `mcp_fleet_legacy_*` samples of every live node, for failure messages.
    async fn legacy_metrics(&self) -> String {
        let mut text = String::new();
        for i in self.live() {
            let metrics = metrics(self.node(i)).await;
            let samples: Vec<&str> =
                metrics.lines().filter(|l| l.starts_with("mcp_fleet_legacy_") && !l.ends_with(" 0")).collect();
            text.push_str(&format!("node-{i}: {}\n", samples.join(", ")));
        }
        text
    }

    /// A request of the session straight to node `i` (no load balancer): status and body.
    async fn raw(&self, i: usize, method: &str, session: &str, body: Option<Value>) -> (u16, String) {
        session_request(&self.node(i).url(), method, session, body).await
    }
}

impl Drop for Fleet {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("{}\nnode and haproxy logs: {}", self.client.transcript(), self.dir.path().display());
        }
    }
}

/// A request of `session` to `url`, as a 2025-11-25 client sends it: status and body.
async fn session_request(url: &str, method: &str, session: &str, body: Option<Value>) -> (u16, String) {
    let headers = [
        ("mcp-session-id", session),
        ("mcp-protocol-version", VERSION),
        ("accept", "application/json, text/event-stream"),
        ("content-type", "application/json"),
    ];
    http(url, method, &headers, body.map(|b| b.to_string())).await
}

/// One HTTP/1.1 request on a fresh connection: status and body (the first 64 KiB, read for at
/// most 2 s: enough for an error, and a stream is not read to its end).
async fn http(url: &str, method: &str, headers: &[(&str, &str)], body: Option<String>) -> (u16, String) {
    use http_body_util::BodyExt as _;
    let uri: http::Uri = url.parse().expect("url");
    let authority = uri.authority().expect("authority").to_string();
    let connect = tokio::net::TcpStream::connect(&authority);
    let stream =
        tokio::time::timeout(Duration::from_secs(2), connect).await.expect("connect in time").expect("connect");
    let (mut sender, conn) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream)).await.expect("handshake");
    tokio::spawn(conn);
    let mut request = http::Request::builder().method(method).uri(uri.path()).header("host", &authority);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let request =
        request.body(http_body_util::Full::new(bytes::Bytes::from(body.unwrap_or_default()))).expect("request");
    let response = tokio::time::timeout(Duration::from_secs(5), sender.send_request(request))
        .await
        .expect("answer in time")
        .expect("answer");
    let status = response.status().as_u16();
    let mut body = response.into_body();
    let mut text = Vec::new();
    let read = async {
        while let Some(Ok(frame)) = body.frame().await {
            if let Some(data) = frame.data_ref() {
                text.extend_from_slice(data);
            }
            if text.len() > 64 * 1024 {
                break;
            }
        }
    };
    let _ = tokio::time::timeout(Duration::from_secs(2), read).await;
    (status, String::from_utf8_lossy(&text).into_owned())
}

async fn metrics(node: &Node) -> String {
    match node.admin_get("/metrics").await {
        Some((200, text)) => text,
        other => panic!("metrics of {}: {other:?}", node.mcp),
    }
}

/// The sum of the samples of `name` whose labels include every one of `labels`.
fn gauge(text: &str, name: &str, labels: &[&str]) -> f64 {
    text.lines()
        .filter(|line| !line.starts_with('#'))
        .filter_map(|line| {
            let (series, value) = line.rsplit_once(' ')?;
            let metric = series.split('{').next()?;
            (metric == name && labels.iter().all(|l| series.contains(l))).then(|| value.parse::<f64>().ok())?
        })
        .sum()
}

#[test]
fn gauge_reads_openmetrics_samples() {
    let text = "# TYPE x counter\nx_total 2\nx_total_other 5\ny_total{method=\"response\",status=\"202\"} 3\ny_total{method=\"response\",status=\"400\"} 1\n";
    assert_eq!(gauge(text, "x_total", &[]), 2.0);
    assert_eq!(gauge(text, "y_total", &["method=\"response\"", "status=\"202\""]), 3.0);
    assert_eq!(gauge(text, "y_total", &["method=\"response\""]), 4.0);
    assert_eq!(gauge(text, "z", &[]), 0.0);
    assert_eq!(tail("a\nb\nc", 2), "b\nc");
}
