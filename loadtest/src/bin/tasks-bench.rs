//! `tasks/get` across replicas, and the store's cost of 10,000 live tasks (BENCHMARKS.md,
//! "Tasks across replicas"). Three in-process nodes share one bus (`redis` or `nats` on
//! loopback, under a unique stream/prefix); tasks are created on node 0 and read by clients of
//! nodes 1 and 2 for a bounded time at a bounded concurrency; then 10,000 detached (so live,
//! runner-less) tasks are created on node 0 and the store's growth is reported. Stops by itself
//! and deletes its Redis keys.
//!
//! Usage: `tasks-bench redis|nats [read_secs] [concurrency]`.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use hdrhistogram::Histogram;
use http::request::Parts;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use mcp_fleet_loadtest::cleanup::{delete_redis_keys, redis_cli, redis_keys};
use mcp_fleet_server::auth::AuthError;
use mcp_fleet_server::types::{CallToolResult, Tool};
use mcp_fleet_server::{
    HandlerOptions, McpHandler, McpServer, Principal, catalog::TaskSupport, create_mcp_handler, tasks::TaskOptions,
};
use serde_json::{Value, json};

const NODES: usize = 3;
const READ_TASKS: usize = 100;
const LIVE_TASKS: usize = 10_000;
const CREATE_CONCURRENCY: usize = 16;

type Http = Client<HttpConnector, Full<Bytes>>;

fn tenant(parts: &Parts) -> Result<Principal, AuthError> {
    match parts.headers.get("x-tenant").and_then(|v| v.to_str().ok()) {
        Some(t) => Ok(Principal::new(format!("user@{t}"), Some(t.to_owned()))),
        None => Err(AuthError::unauthenticated("Bearer realm=\"bench\"")),
    }
}

/// One tool, `external`: a task at once, detached, so it stays `working` with no runner.
fn server() -> McpServer {
    let server = McpServer::builder("tasks-bench", "0.0.1").build();
    server.task_tool(Tool::new("external", "A live task"), TaskSupport::Required, |call| async move {
        let task = call.ctx.detach_task().await?;
        Ok(CallToolResult::text(format!("handed over {}", task.id())))
    });
    server
}

/// POST `method` with the tasks extension declared; the JSON-RPC message (JSON or first SSE data).
async fn rpc(http: &Http, url: &str, method: &str, mut params: Value) -> Result<Value, String> {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}},
    });
    let name = params.get("taskId").or_else(|| params.get("name")).and_then(Value::as_str).map(str::to_owned);
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let mut req = http::Request::post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method)
        .header("x-tenant", "bench");
    if let Some(name) = name {
        req = req.header("mcp-name", name);
    }
    let req = req.body(Full::new(Bytes::from(body.to_string()))).map_err(|e| e.to_string())?;
    let resp = http.request(req).await.map_err(|e| e.to_string())?;
    let status = resp.status();
    let bytes = resp.into_body().collect().await.map_err(|e| e.to_string())?.to_bytes();
    let text = String::from_utf8_lossy(&bytes);
    let json_text = match text.trim_start().starts_with('{') {
        true => text.to_string(),
        false => text.lines().find_map(|l| l.strip_prefix("data:")).unwrap_or_default().trim().to_owned(),
    };
    let msg: Value = serde_json::from_str(&json_text).map_err(|e| format!("{status}: {e}: {text}"))?;
    match msg.get("result") {
        Some(result) => Ok(result.clone()),
        None => Err(format!("{status}: {msg}")),
    }
}

async fn create(http: &Http, url: &str) -> Result<String, String> {
    let result = rpc(http, url, "tools/call", json!({"name": "external", "arguments": {}})).await?;
    match (result["resultType"].as_str(), result["taskId"].as_str()) {
        (Some("task"), Some(id)) => Ok(id.to_owned()),
        _ => Err(format!("not a task: {result}")),
    }
}

/// Create `n` tasks on `url` at [`CREATE_CONCURRENCY`]; their ids and the per-creation latency.
async fn create_many(http: &Http, url: &str, n: usize) -> (Vec<String>, Histogram<u64>) {
    let next = Arc::new(AtomicU64::new(0));
    let workers = (0..CREATE_CONCURRENCY).map(|_| {
        let (http, url, next) = (http.clone(), url.to_owned(), next.clone());
        tokio::spawn(async move {
            let mut hist = Histogram::<u64>::new(3).expect("histogram");
            let mut ids = Vec::new();
            while next.fetch_add(1, Ordering::Relaxed) < n as u64 {
                let start = Instant::now();
                ids.push(create(&http, &url).await.expect("create a task"));
                hist.record(start.elapsed().as_micros() as u64).expect("record");
            }
            (ids, hist)
        })
    });
    let mut all = (Vec::new(), Histogram::<u64>::new(3).expect("histogram"));
    for worker in futures_util::future::join_all(workers).await {
        let (ids, hist) = worker.expect("worker");
        all.0.extend(ids);
        all.1.add(hist).expect("merge");
    }
    all
}

fn ms(hist: &Histogram<u64>, q: f64) -> f64 {
    hist.value_at_quantile(q) as f64 / 1000.0
}

fn redis_used_memory() -> u64 {
    redis_cli(&["info", "memory"])
        .lines()
        .find_map(|l| l.strip_prefix("used_memory:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0)
}

fn dir_bytes(dir: &std::path::Path) -> u64 {
    std::fs::read_dir(dir).into_iter().flatten().flatten().fold(0, |sum, entry| match entry.metadata() {
        Ok(m) if m.is_dir() => sum + dir_bytes(&entry.path()),
        Ok(m) => sum + m.len(),
        Err(_) => sum,
    })
}

/// On-disk bytes of the NATS task bucket (`KV_<stream>_KS_tasks`) in the local server's store
/// directory (this server runs without a monitoring endpoint); `None` if it is not readable.
fn nats_bucket_bytes(stream: &str) -> Option<u64> {
    let accounts = std::fs::read_dir("/var/lib/nats-server/jetstream").ok()?;
    accounts
        .flatten()
        .map(|account| account.path().join("streams").join(format!("KV_{stream}_KS_tasks")))
        .find(|dir| dir.is_dir())
        .map(|dir| dir_bytes(&dir))
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let broker = args.get(1).map(String::as_str).unwrap_or("redis").to_owned();
    let read_secs: u64 = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(10).min(60);
    let concurrency: usize = args.get(3).and_then(|a| a.parse().ok()).unwrap_or(16).clamp(1, 64);
    let stamp = SystemTime::now().duration_since(UNIX_EPOCH).expect("clock").as_millis();
    let unique = format!("tasksbench{}x{stamp}", std::process::id());
    let url = match broker.as_str() {
        "redis" => format!("redis://127.0.0.1:6379/0?stream={unique}"),
        "nats" => format!("nats://127.0.0.1:4222?stream={}&prefix={unique}", unique.to_uppercase()),
        other => panic!("broker {other}: redis or nats"),
    };
    println!("broker {broker}, bus {url}, {NODES} nodes, read {read_secs} s at concurrency {concurrency}");

    let mut nodes: Vec<(McpHandler, String, tokio::task::JoinHandle<()>)> = Vec::new();
    for i in 0..NODES {
        let node_id = format!("bench-{i}");
        let bus = mcp_fleet_bus_connect::connect(&url, &node_id).await.expect("bus");
        let options = HandlerOptions::default()
            .node_id(node_id)
            .bus(bus)
            .authenticator(tenant)
            .shutdown_deadline(Duration::from_secs(1))
            .tasks(TaskOptions::default().ttl(Duration::from_secs(900)).max_tasks_per_principal(LIVE_TASKS * 2));
        let handler = create_mcp_handler(server(), options).await.expect("handler");
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let serving = tokio::spawn({
            let handler = handler.clone();
            async move { handler.serve(listener).await.expect("serve") }
        });
        nodes.push((handler, format!("http://{addr}/mcp"), serving));
    }
    let http: Http = Client::builder(TokioExecutor::new()).pool_max_idle_per_host(64).build_http();

    // Phase 1: tasks/get across replicas.
    let (ids, _) = create_many(&http, &nodes[0].1, READ_TASKS).await;
    let ids = Arc::new(ids);
    let first = rpc(&http, &nodes[1].1, "tasks/get", json!({"taskId": ids[0]})).await.expect("cross-replica get");
    assert_eq!(first["status"], "working", "{first}");
    let deadline = Instant::now() + Duration::from_secs(read_secs);
    let errors = Arc::new(AtomicU64::new(0));
    let readers = (0..concurrency).map(|w| {
        let (http, url, ids, errors) = (http.clone(), nodes[1 + w % 2].1.clone(), ids.clone(), errors.clone());
        tokio::spawn(async move {
            let mut hist = Histogram::<u64>::new(3).expect("histogram");
            let mut i = w;
            while Instant::now() < deadline {
                let start = Instant::now();
                match rpc(&http, &url, "tasks/get", json!({"taskId": ids[i % ids.len()]})).await {
                    Ok(task) if task["status"] == "working" => {
                        hist.record(start.elapsed().as_micros() as u64).expect("record")
                    }
                    _ => drop(errors.fetch_add(1, Ordering::Relaxed)),
                }
                i += concurrency;
            }
            hist
        })
    });
    let started = Instant::now();
    let mut reads = Histogram::<u64>::new(3).expect("histogram");
    for reader in futures_util::future::join_all(readers).await {
        reads.add(reader.expect("reader")).expect("merge");
    }
    let elapsed = started.elapsed().as_secs_f64();
    println!(
        "tasks/get on nodes 1+2 of {READ_TASKS} tasks created on node 0: {} ok, {} errors in {elapsed:.1} s = {:.0} req/s; \
         latency p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        reads.len(),
        errors.load(Ordering::Relaxed),
        reads.len() as f64 / elapsed,
        ms(&reads, 0.5),
        ms(&reads, 0.99),
        reads.max() as f64 / 1000.0
    );

    // Phase 2: 10,000 live tasks in the store.
    let before = (broker == "redis").then(|| (redis_used_memory(), redis_keys(&unique).len()));
    let nats_before = nats_bucket_bytes(&unique.to_uppercase());
    let started = Instant::now();
    let (live, creates) = create_many(&http, &nodes[0].1, LIVE_TASKS).await;
    let elapsed = started.elapsed().as_secs_f64();
    println!(
        "created {} live tasks on node 0 in {elapsed:.1} s ({:.0}/s at concurrency {CREATE_CONCURRENCY}); \
         per-task creation p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        live.len(),
        live.len() as f64 / elapsed,
        ms(&creates, 0.5),
        ms(&creates, 0.99),
        creates.max() as f64 / 1000.0
    );
    let last = rpc(&http, &nodes[2].1, "tasks/get", json!({"taskId": live[live.len() - 1]})).await.expect("get");
    assert_eq!(last["status"], "working", "{last}");
    match before {
        Some((memory, keys)) => {
            let (after_memory, after_keys) = (redis_used_memory(), redis_keys(&unique).len());
            let delta = after_memory.saturating_sub(memory);
            println!(
                "redis: used_memory {memory} -> {after_memory} (+{delta} bytes = {:.0} bytes/task, {:.1} MiB for {LIVE_TASKS}); \
                 keys under *{unique}*: {keys} -> {after_keys}",
                delta as f64 / live.len() as f64,
                delta as f64 / 1048576.0
            );
        }
        None => match (nats_before, nats_bucket_bytes(&unique.to_uppercase())) {
            (Some(b), Some(a)) => println!(
                "nats: task bucket on disk {b} -> {a} bytes (+{} = {:.0} bytes/task, {:.1} MiB for {LIVE_TASKS}); {} tasks live",
                a.saturating_sub(b),
                a.saturating_sub(b) as f64 / live.len() as f64,
                a.saturating_sub(b) as f64 / 1048576.0,
                live.len() + READ_TASKS
            ),
            _ => {
                println!("nats: {} tasks live in the KV bucket (its bytes not readable here)", live.len() + READ_TASKS)
            }
        },
    }

    for (handler, _, serving) in nodes {
        let _ = tokio::time::timeout(Duration::from_secs(30), handler.shutdown()).await;
        let _ = tokio::time::timeout(Duration::from_secs(5), serving).await;
    }
    if broker == "redis" {
        let (deleted, left) = delete_redis_keys(&unique);
        println!("deleted {deleted} redis keys; left: {left}");
    }
}
