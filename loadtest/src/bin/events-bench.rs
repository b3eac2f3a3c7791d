//! The events extension under load (BENCHMARKS.md, "Events"): three in-process nodes on one bus
//! (`redis` or `nats` on loopback, under a unique stream), `--streams` push subscribers
//! (`events/stream`) and `--pollers` long-polling ones (`events/poll` with `timeoutMs`) spread
//! over them, `--webhooks` webhook subscriptions (`events/subscribe`, each to its own path on
//! one in-bench receiver that checks every signature, subscribed through the nodes in turn),
//! and `--events` occurrences emitted at `--rate` a second from the nodes in turn. Every
//! subscriber counts what it got by the occurrence's sequence number — delivered, duplicates,
//! missing — and the emit → delivery latency, per mode. Every request carries a principal (the
//! `x-bench-principal` header, which the nodes' authenticator takes: webhooks need one). Stops
//! by itself, and deletes what it left on the broker.
//!
//! ```sh
//! events-bench redis --streams 300 --pollers 30 --webhooks 10 --events 2000 --rate 500
//! ```

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use clap::Parser;
use futures_util::StreamExt;
use hdrhistogram::Histogram;
use http::request::Parts;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use mcp_fleet_loadtest::webhook_receiver::Receiver;
use mcp_fleet_protocol::sse::{SseDecoder, SseEvent};
use mcp_fleet_server::auth::AuthError;
use mcp_fleet_server::events::{DEFAULT_MAX_PER_PRINCIPAL, EventType, Events, Webhooks};
use mcp_fleet_server::typed::NoArgs;
use mcp_fleet_server::{HandlerOptions, McpHandler, McpServer, Principal, create_mcp_handler};
use serde_json::{Value, json};

const NODES: usize = 3;
const NAME: &str = "bench.tick";
/// The header the nodes' authenticator takes the caller's principal from.
const PRINCIPAL: &str = "x-bench-principal";
/// The principal of every webhook subscription (they differ by path).
const HOOK_PRINCIPAL: &str = "bench-webhooks";
/// How often every node reloads the webhook subscriptions.
const RELOAD: Duration = Duration::from_millis(500);

type Http = Client<HttpConnector, Full<Bytes>>;

#[derive(Parser)]
#[command(about = "Push, poll and webhook subscribers of the events extension across three nodes")]
struct Args {
    /// `redis` or `nats` (on loopback).
    broker: String,
    /// Push subscribers (`events/stream`), spread over the nodes.
    #[arg(long, default_value_t = 300)]
    streams: usize,
    /// Long-polling subscribers (`events/poll`), spread over the nodes.
    #[arg(long, default_value_t = 30)]
    pollers: usize,
    /// Webhook subscriptions (`events/subscribe`), each to its own path on the in-bench
    /// receiver, subscribed through the nodes in turn.
    #[arg(long, default_value_t = 0)]
    webhooks: usize,
    /// Occurrences emitted.
    #[arg(long, default_value_t = 2000)]
    events: usize,
    /// Occurrences emitted per second.
    #[arg(long, default_value_t = 500)]
    rate: u64,
    /// A webhook delivery's lease (ms): a replica that stops renewing it is replaced within
    /// about twice this. The holder renews it every third of a lease, the replicas watching
    /// it look again every lease.
    #[arg(long, default_value_t = 2000)]
    lease_ms: u64,
    /// After the last emit, how long subscribers may take to get everything.
    #[arg(long, default_value_t = 20)]
    wait_secs: u64,
}

/// What each occurrence carries: its sequence number and when it was emitted.
#[derive(serde::Serialize, schemars::JsonSchema)]
struct Tick {
    seq: usize,
    sent_us: u64,
}

/// What one subscriber got.
struct Tally {
    counts: Vec<u32>,
    /// Sequence numbers seen at least once: `complete` is asked per frame, so it is counted,
    /// not searched for.
    distinct: usize,
    latency_us: Histogram<u64>,
}

impl Tally {
    fn new(events: usize) -> Self {
        Tally { counts: vec![0; events], distinct: 0, latency_us: Histogram::new(3).expect("histogram") }
    }

    /// Count one occurrence (`data`), received `now_us` after the clock's base.
    fn record(&mut self, data: &Value, now_us: u64) {
        let (Some(seq), Some(sent)) = (data["seq"].as_u64(), data["sent_us"].as_u64()) else { return };
        if let Some(count) = self.counts.get_mut(seq as usize) {
            *count += 1;
            self.distinct += usize::from(*count == 1);
            let _ = self.latency_us.record(now_us.saturating_sub(sent).max(1));
        }
    }

    fn complete(&self) -> bool {
        self.distinct == self.counts.len()
    }
}

/// What every push and poll subscriber shares.
#[derive(Clone)]
struct Run {
    http: Http,
    base: Instant,
    events: usize,
    ready: Arc<tokio::sync::Barrier>,
    until: Instant,
}

/// Quick webhook settings for loopback: `http` to 127.0.0.0/8, short lease, retries and
/// reloads, room for `hooks` subscriptions of one principal.
fn webhooks(hooks: usize, lease: Duration) -> Webhooks {
    Webhooks::new()
        .allow_http(true)
        .allow_network("127.0.0.0/8".parse().expect("a network"))
        .lease(lease)
        .retry_backoff(Duration::from_millis(100), Duration::from_secs(1))
        .refresh_every(RELOAD)
        .timeout(Duration::from_secs(5))
        .max_concurrent(256)
        .max_per_principal(hooks.max(DEFAULT_MAX_PER_PRINCIPAL))
}

/// The `x-bench-principal` header as the caller (no tenant); no header is a 401.
fn principal_from_header(parts: &Parts) -> Result<Principal, AuthError> {
    match parts.headers.get(PRINCIPAL).and_then(|v| v.to_str().ok()) {
        Some(id) => Ok(Principal::new(id, None)),
        None => Err(AuthError::unauthenticated("Bearer realm=\"events-bench\"")),
    }
}

async fn start_nodes(url: &str, args: &Args) -> Vec<(McpHandler, String)> {
    let mut nodes = Vec::new();
    for i in 0..NODES {
        let node_id = format!("events-bench-{i}");
        let bus = mcp_fleet_bus_connect::connect(url, &node_id).await.expect("bus");
        let mut events = Events::new().event(EventType::new::<NoArgs, Tick>(NAME, "A benchmark tick")).history(100_000);
        if args.webhooks > 0 {
            events = events.webhooks(webhooks(args.webhooks, Duration::from_millis(args.lease_ms)));
        }
        let options = HandlerOptions::default()
            .node_id(node_id)
            .bus(bus)
            .authenticator(principal_from_header)
            .request_state_key(vec![9; 32])
            .shutdown_deadline(Duration::from_secs(1))
            .events(events.max_streams(1_000_000));
        let handler =
            create_mcp_handler(McpServer::builder("events-bench", "0.0.1").build(), options).await.expect("handler");
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        tokio::spawn({
            let handler = handler.clone();
            async move { handler.serve(listener).await.expect("serve") }
        });
        nodes.push((handler, format!("http://{addr}/mcp")));
    }
    nodes
}

fn post(url: &str, method: &str, params: Value, principal: &str) -> http::Request<Full<Bytes>> {
    let mut params = params;
    params["_meta"] = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}});
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    http::Request::post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method)
        .header(PRINCIPAL, principal)
        .body(Full::new(Bytes::from(body.to_string())))
        .expect("request")
}

/// One push subscriber: opens its stream, says when it is active, counts until it has
/// everything or `until`.
async fn push(run: Run, url: String, principal: String) -> Tally {
    let mut tally = Tally::new(run.events);
    let request = post(&url, "events/stream", json!({"name": NAME, "cursor": null}), &principal);
    let mut body = run.http.request(request).await.expect("stream").into_body();
    let (mut decoder, mut out, mut active) = (SseDecoder::new(), Vec::new(), false);
    while !tally.complete() {
        let Ok(Some(Ok(frame))) = tokio::time::timeout_at(run.until.into(), body.frame()).await else { break };
        let Ok(data) = frame.into_data() else { continue };
        decoder.feed(&data, &mut out);
        for event in out.drain(..) {
            let SseEvent::Message(text) = event else { continue };
            let Ok(message) = serde_json::from_str::<Value>(&text) else { continue };
            match message["method"].as_str() {
                Some("notifications/events/active") if !active => {
                    active = true;
                    run.ready.wait().await;
                }
                Some("notifications/events/event") => tally.record(&message["params"]["data"], since(run.base)),
                _ => {}
            }
        }
    }
    tally
}

/// One long-polling subscriber.
async fn poll(run: Run, url: String, principal: String) -> Tally {
    let mut tally = Tally::new(run.events);
    let first = call(&run.http, &url, "events/poll", json!({"name": NAME, "cursor": null}), &principal).await;
    let mut cursor = first["result"]["cursor"].clone();
    run.ready.wait().await;
    while !tally.complete() && Instant::now() < run.until {
        let params = json!({"name": NAME, "cursor": cursor, "timeoutMs": 5000, "maxEvents": 1000});
        let result = call(&run.http, &url, "events/poll", params, &principal).await["result"].take();
        let now = since(run.base);
        for occurrence in result["events"].as_array().into_iter().flatten() {
            tally.record(&occurrence["data"], now);
        }
        cursor = result["cursor"].clone();
    }
    tally
}

/// `method` as `principal`: the whole JSON-RPC reply.
async fn call(http: &Http, url: &str, method: &str, params: Value, principal: &str) -> Value {
    let resp = http.request(post(url, method, params, principal)).await.expect(method);
    let bytes = resp.into_body().collect().await.expect("body").to_bytes();
    serde_json::from_slice(&bytes).expect("JSON")
}

fn since(base: Instant) -> u64 {
    base.elapsed().as_micros() as u64
}

/// The webhook subscriptions: the receiver, and each hook's tally (fed by the receiver).
struct Hooks {
    receiver: Receiver,
    tallies: Arc<Vec<Mutex<Tally>>>,
}

impl Hooks {
    /// The receiver of `hooks` hooks, counting `events` occurrences each.
    fn start(hooks: usize, events: usize, base: Instant) -> Hooks {
        let tallies = Arc::new((0..hooks).map(|_| Mutex::new(Tally::new(events))).collect::<Vec<_>>());
        let on_delivery = Arc::new({
            let tallies = tallies.clone();
            move |hook: usize, occurrence: Value| {
                let now = since(base);
                if let Some(tally) = tallies.get(hook) {
                    tally.lock().unwrap_or_else(PoisonError::into_inner).record(&occurrence["data"], now);
                }
            }
        });
        Hooks { receiver: Receiver::start(hooks, on_delivery).expect("webhook receiver"), tallies }
    }

    /// `events/subscribe` (or `unsubscribe`) for every hook, through the nodes in turn; how
    /// many calls failed (each said on stderr).
    async fn subscribe(&self, http: &Http, nodes: &[(McpHandler, String)], method: &str) -> usize {
        let mut failed = 0;
        for i in 0..self.tallies.len() {
            let (url, secret) = (self.receiver.url(i), self.receiver.secret(i));
            let delivery = json!({"mode": "webhook", "url": url, "secret": secret});
            let params = json!({"name": NAME, "arguments": {}, "delivery": delivery, "ttlMs": 1_800_000});
            let reply = call(http, &nodes[i % NODES].1, method, params, HOOK_PRINCIPAL).await;
            match reply["result"]["id"].as_str() {
                Some(id) => self.receiver.expect_subscription(i, id.to_owned()),
                None if reply.get("result").is_some() => {}
                None => {
                    eprintln!("{method} of hook {i}: {reply}");
                    failed += 1;
                }
            }
        }
        failed
    }

    /// Wait until every hook has everything or `deadline`, then `linger` more for late
    /// duplicates (a delivery taken over from a lapsed lease).
    async fn settle(&self, deadline: Instant, linger: Duration) {
        let complete = || self.tallies.iter().all(|t| t.lock().unwrap_or_else(PoisonError::into_inner).complete());
        let mut said = Instant::now();
        while !complete() && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
            if said.elapsed() >= Duration::from_secs(5) {
                let delivered: usize =
                    self.tallies.iter().map(|t| t.lock().unwrap_or_else(PoisonError::into_inner).distinct).sum();
                eprintln!("webhooks: {delivered} distinct deliveries so far");
                said = Instant::now();
            }
        }
        tokio::time::sleep(linger).await;
    }

    /// Each hook's tally, taken out.
    fn take(&self) -> Vec<Tally> {
        let take =
            |t: &Mutex<Tally>| std::mem::replace(&mut *t.lock().unwrap_or_else(PoisonError::into_inner), Tally::new(0));
        self.tallies.iter().map(take).collect()
    }

    /// What the receiver counted, one line.
    fn receiver_line(&self) -> String {
        let c = self.receiver.counts();
        let n = |a: &AtomicU64| a.load(Ordering::Relaxed);
        format!(
            "webhook receiver: {} connections, {} requests ({} verifications); invalid signatures {}, \
             wrong subscription id {}, stale timestamps {}, malformed {}",
            n(&c.connections),
            n(&c.requests),
            n(&c.verifications),
            n(&c.invalid_signatures),
            n(&c.wrong_subscription),
            n(&c.stale_timestamps),
            n(&c.malformed)
        )
    }
}

/// The nodes' webhook metrics, summed over the nodes (the non-zero series).
fn webhook_metrics(nodes: &[(McpHandler, String)]) -> String {
    let mut sums: BTreeMap<String, f64> = BTreeMap::new();
    for (handler, _) in nodes {
        let text = handler.metrics_text();
        for line in text.lines().filter(|l| l.contains("webhook") && !l.starts_with('#')) {
            if let Some((series, value)) = line.rsplit_once(' ') {
                *sums.entry(series.to_owned()).or_default() += value.parse::<f64>().unwrap_or(0.0);
            }
        }
    }
    let nonzero = sums.iter().filter(|(_, v)| **v != 0.0).map(|(s, v)| format!("{s} {v}"));
    nonzero.collect::<Vec<_>>().join(", ")
}

/// One line per mode: deliveries, duplicates, missing, latency.
fn report(mode: &str, tallies: &[Tally], events: usize) {
    let mut latency = Histogram::<u64>::new(3).expect("histogram");
    let (mut delivered, mut duplicates, mut missing) = (0u64, 0u64, 0u64);
    for tally in tallies {
        latency.add(&tally.latency_us).expect("merge");
        for count in &tally.counts {
            delivered += u64::from(*count.min(&1));
            duplicates += u64::from(count.saturating_sub(1));
            missing += u64::from(*count == 0);
        }
    }
    let ms = |q: f64| latency.value_at_quantile(q) as f64 / 1000.0;
    println!(
        "{mode}: {} subscribers, delivered {delivered} of {}, duplicates {duplicates}, missing {missing}; \
         latency p50 {:.1} ms  p99 {:.1} ms  max {:.1} ms",
        tallies.len(),
        tallies.len() * events,
        ms(0.5),
        ms(0.99),
        latency.max() as f64 / 1000.0
    );
}

/// `--events` occurrences at `--rate`, from the nodes in turn: how long it took (s), and how
/// many emits failed (each said once on stderr; a failed emit may still have been published).
async fn emit(nodes: &[(McpHandler, String)], args: &Args, base: Instant) -> (f64, usize) {
    let (started, mut failed) = (Instant::now(), 0);
    let mut every = tokio::time::interval(Duration::from_micros(1_000_000 / args.rate.max(1)));
    for seq in 0..args.events {
        every.tick().await;
        let tick = Tick { seq, sent_us: since(base) };
        if let Err(error) = nodes[seq % NODES].0.events().emit(NAME, &tick).await {
            eprintln!("emit {seq} failed: {error}");
            failed += 1;
        }
    }
    (started.elapsed().as_secs_f64(), failed)
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let args = Args::parse();
    // Each webhook delivery is a connection at both ends, in the same process.
    let _ = mcp_fleet_loadtest::raise_file_limit();
    let stamp = SystemTime::now().duration_since(UNIX_EPOCH).expect("clock").as_millis();
    let unique = format!("eventsbench{}x{stamp}", std::process::id());
    let nodes = start_nodes(&broker_url(&args.broker, &unique), &args).await;
    let http: Http = Client::builder(TokioExecutor::new()).pool_max_idle_per_host(4096).build_http();
    let base = Instant::now();
    let emit_secs = args.events as u64 / args.rate.max(1) + 1;
    let until = Instant::now() + Duration::from_secs(60 + emit_secs + args.wait_secs);
    let ready = Arc::new(tokio::sync::Barrier::new(args.streams + args.pollers + 1));
    let run = Run { http: http.clone(), base, events: args.events, ready: ready.clone(), until };
    let url = |i: usize| nodes[i % NODES].1.clone();
    let pushers: Vec<_> =
        (0..args.streams).map(|i| tokio::spawn(push(run.clone(), url(i), format!("push-{i}")))).collect();
    let pollers: Vec<_> =
        (0..args.pollers).map(|i| tokio::spawn(poll(run.clone(), url(i), format!("poll-{i}")))).collect();
    let hooks = Hooks::start(args.webhooks, args.events, base);
    assert_eq!(hooks.subscribe(&http, &nodes, "events/subscribe").await, 0, "every webhook subscribed");
    ready.wait().await;
    if args.webhooks > 0 {
        // Let every node load the subscriptions.
        tokio::time::sleep(RELOAD * 2 + Duration::from_millis(200)).await;
    }
    let (broker, streams, pollers_n, webhooks) = (&args.broker, args.streams, args.pollers, args.webhooks);
    println!("broker {broker}, {NODES} nodes, {streams} push streams, {pollers_n} pollers, {webhooks} webhooks ready");

    let cpu_before = cpu_seconds();
    let (emitted, failed) = emit(&nodes, &args, base).await;
    let webhooks_until = Instant::now() + Duration::from_secs(args.wait_secs);
    let join = |handles: Vec<tokio::task::JoinHandle<Tally>>| async {
        futures_util::future::join_all(handles).await.into_iter().map(|t| t.expect("subscriber")).collect::<Vec<_>>()
    };
    let (pushed, polled) = (join(pushers).await, join(pollers).await);
    if args.webhooks > 0 {
        hooks.settle(webhooks_until, Duration::from_millis(args.lease_ms * 2)).await;
    }
    let cpu = cpu_seconds() - cpu_before;
    let rate = args.events as f64 / emitted;
    println!("emitted {} in {emitted:.2} s ({rate:.0}/s), {failed} emits failed", args.events);
    report("push", &pushed, args.events);
    report("poll", &polled, args.events);
    if args.webhooks > 0 {
        report("webhook", &hooks.take(), args.events);
        println!("{}", hooks.receiver_line());
        println!("nodes' webhook metrics: {}", webhook_metrics(&nodes));
    }
    println!("process CPU {cpu:.2} s (nodes, subscribers, receiver and emitter in one process)");
    let unsubscribed = hooks.subscribe(&http, &nodes, "events/unsubscribe").await;
    if unsubscribed > 0 {
        println!("{unsubscribed} webhook unsubscribes failed (the broker cleanup removes them anyway)");
    }
    finish(nodes, &args.broker, &unique).await;
}

fn broker_url(broker: &str, unique: &str) -> String {
    match broker {
        "redis" => format!("redis://127.0.0.1:6379/0?stream={unique}"),
        "nats" => format!("nats://127.0.0.1:4222?stream={}&prefix={unique}", unique.to_uppercase()),
        other => panic!("broker {other}: redis or nats"),
    }
}

/// Stop the nodes and delete what the run left on the broker: Redis keys under its name; the
/// NATS stream, its membership bucket and its keyspaces' buckets (`KV_<stream>_KS_…`).
async fn finish(nodes: Vec<(McpHandler, String)>, broker: &str, unique: &str) {
    for (handler, _) in nodes {
        handler.shutdown().await;
    }
    if broker == "redis" {
        let _ = mcp_fleet_loadtest::cleanup::delete_redis_keys(unique);
        return;
    }
    let (url, stream) = ("nats://127.0.0.1:4222", unique.to_uppercase());
    let _ = mcp_fleet_loadtest::cleanup::delete_nats_bus(url, &stream).await;
    let Ok(client) = async_nats::connect(url).await else { return };
    let js = async_nats::jetstream::new(client);
    let prefix = format!("KV_{stream}_KS_");
    let names: Vec<String> = js.stream_names().filter_map(|name| async move { name.ok() }).collect().await;
    for name in names.iter().filter(|n| n.starts_with(&prefix)) {
        let _ = js.delete_stream(name).await;
    }
}

/// This process's CPU seconds so far (0 when `/proc` cannot tell).
fn cpu_seconds() -> f64 {
    let ticks = mcp_fleet_loadtest::procfs::cpu_ticks(std::process::id()).unwrap_or(0);
    (ticks * mcp_fleet_loadtest::procfs::TICK_MS) as f64 / 1000.0
}
