//! The events extension under load (BENCHMARKS.md, "Events"): three in-process nodes on one bus
//! (`redis` or `nats` on loopback, under a unique stream), `--streams` push subscribers
//! (`events/stream`) and `--pollers` long-polling ones (`events/poll` with `timeoutMs`) spread
//! over them, and `--events` occurrences emitted at `--rate` a second from the nodes in turn.
//! Every subscriber counts what it got by the occurrence's sequence number — delivered,
//! duplicates, missing — and the emit → delivery latency, per mode. Stops by itself, and
//! deletes what it left on the broker.
//!
//! ```sh
//! events-bench redis --streams 300 --pollers 30 --events 2000 --rate 500
//! ```

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use clap::Parser;
use hdrhistogram::Histogram;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use mcp_fleet_protocol::sse::{SseDecoder, SseEvent};
use mcp_fleet_server::events::{EventType, Events};
use mcp_fleet_server::typed::NoArgs;
use mcp_fleet_server::{HandlerOptions, McpHandler, McpServer, create_mcp_handler};
use serde_json::{Value, json};

const NODES: usize = 3;
const NAME: &str = "bench.tick";

type Http = Client<HttpConnector, Full<Bytes>>;

#[derive(Parser)]
#[command(about = "Push and poll subscribers of the events extension across three nodes")]
struct Args {
    /// `redis` or `nats` (on loopback).
    broker: String,
    /// Push subscribers (`events/stream`), spread over the nodes.
    #[arg(long, default_value_t = 300)]
    streams: usize,
    /// Long-polling subscribers (`events/poll`), spread over the nodes.
    #[arg(long, default_value_t = 30)]
    pollers: usize,
    /// Occurrences emitted.
    #[arg(long, default_value_t = 2000)]
    events: usize,
    /// Occurrences emitted per second.
    #[arg(long, default_value_t = 500)]
    rate: u64,
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

async fn start_nodes(url: &str) -> Vec<(McpHandler, String)> {
    let mut nodes = Vec::new();
    for i in 0..NODES {
        let node_id = format!("events-bench-{i}");
        let bus = mcp_fleet_bus_connect::connect(url, &node_id).await.expect("bus");
        let events = Events::new().event(EventType::new::<NoArgs, Tick>(NAME, "A benchmark tick")).history(100_000);
        let options = HandlerOptions::default()
            .node_id(node_id)
            .bus(bus)
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

fn post(url: &str, method: &str, params: Value) -> http::Request<Full<Bytes>> {
    let mut params = params;
    params["_meta"] = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}});
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    http::Request::post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method)
        .body(Full::new(Bytes::from(body.to_string())))
        .expect("request")
}

/// One push subscriber: opens its stream, says when it is active, counts until it has
/// everything or `until`.
async fn push(
    http: Http,
    url: String,
    base: Instant,
    events: usize,
    ready: Arc<tokio::sync::Barrier>,
    until: Instant,
) -> Tally {
    let mut tally = Tally::new(events);
    let resp = http.request(post(&url, "events/stream", json!({"name": NAME, "cursor": null}))).await.expect("stream");
    let mut body = resp.into_body();
    let (mut decoder, mut out, mut active) = (SseDecoder::new(), Vec::new(), false);
    while !tally.complete() {
        let Ok(Some(Ok(frame))) = tokio::time::timeout_at(until.into(), body.frame()).await else { break };
        let Ok(data) = frame.into_data() else { continue };
        decoder.feed(&data, &mut out);
        for event in out.drain(..) {
            let SseEvent::Message(text) = event else { continue };
            let Ok(message) = serde_json::from_str::<Value>(&text) else { continue };
            match message["method"].as_str() {
                Some("notifications/events/active") if !active => {
                    active = true;
                    ready.wait().await;
                }
                Some("notifications/events/event") => tally.record(&message["params"]["data"], since(base)),
                _ => {}
            }
        }
    }
    tally
}

/// One long-polling subscriber.
async fn poll(
    http: Http,
    url: String,
    base: Instant,
    events: usize,
    ready: Arc<tokio::sync::Barrier>,
    until: Instant,
) -> Tally {
    let mut tally = Tally::new(events);
    let mut cursor = rpc(&http, &url, json!({"name": NAME, "cursor": null})).await["cursor"].clone();
    ready.wait().await;
    while !tally.complete() && Instant::now() < until {
        let params = json!({"name": NAME, "cursor": cursor, "timeoutMs": 5000, "maxEvents": 1000});
        let result = rpc(&http, &url, params).await;
        let now = since(base);
        for occurrence in result["events"].as_array().into_iter().flatten() {
            tally.record(&occurrence["data"], now);
        }
        cursor = result["cursor"].clone();
    }
    tally
}

/// `events/poll`'s result.
async fn rpc(http: &Http, url: &str, params: Value) -> Value {
    let resp = http.request(post(url, "events/poll", params)).await.expect("poll");
    let bytes = resp.into_body().collect().await.expect("body").to_bytes();
    let message: Value = serde_json::from_slice(&bytes).expect("JSON");
    message["result"].clone()
}

fn since(base: Instant) -> u64 {
    base.elapsed().as_micros() as u64
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

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let args = Args::parse();
    let stamp = SystemTime::now().duration_since(UNIX_EPOCH).expect("clock").as_millis();
    let unique = format!("eventsbench{}x{stamp}", std::process::id());
    let url = match args.broker.as_str() {
        "redis" => format!("redis://127.0.0.1:6379/0?stream={unique}"),
        "nats" => format!("nats://127.0.0.1:4222?stream={}&prefix={unique}", unique.to_uppercase()),
        other => panic!("broker {other}: redis or nats"),
    };
    let nodes = start_nodes(&url).await;
    let http: Http = Client::builder(TokioExecutor::new()).pool_max_idle_per_host(4096).build_http();
    let base = Instant::now();
    let emit_secs = args.events as u64 / args.rate.max(1) + 1;
    let until = Instant::now() + Duration::from_secs(60 + emit_secs + args.wait_secs);
    let ready = Arc::new(tokio::sync::Barrier::new(args.streams + args.pollers + 1));
    let spawn = |i: usize, pushing: bool| {
        let (http, url, ready) = (http.clone(), nodes[i % NODES].1.clone(), ready.clone());
        match pushing {
            true => tokio::spawn(push(http, url, base, args.events, ready, until)),
            false => tokio::spawn(poll(http, url, base, args.events, ready, until)),
        }
    };
    let pushers: Vec<_> = (0..args.streams).map(|i| spawn(i, true)).collect();
    let pollers: Vec<_> = (0..args.pollers).map(|i| spawn(i, false)).collect();
    ready.wait().await;
    println!("broker {}, {NODES} nodes, {} push streams and {} pollers ready", args.broker, args.streams, args.pollers);

    let cpu_before = cpu_seconds();
    let started = Instant::now();
    let mut every = tokio::time::interval(Duration::from_micros(1_000_000 / args.rate.max(1)));
    for seq in 0..args.events {
        every.tick().await;
        let tick = Tick { seq, sent_us: since(base) };
        nodes[seq % NODES].0.events().emit(NAME, &tick).await.expect("emit");
    }
    let emitted = started.elapsed().as_secs_f64();
    let join = |handles: Vec<tokio::task::JoinHandle<Tally>>| async {
        futures_util::future::join_all(handles).await.into_iter().map(|t| t.expect("subscriber")).collect::<Vec<_>>()
    };
    let (pushed, polled) = (join(pushers).await, join(pollers).await);
    println!("emitted {} in {emitted:.2} s ({:.0}/s)", args.events, args.events as f64 / emitted);
    report("push", &pushed, args.events);
    report("poll", &polled, args.events);
    println!("process CPU {:.2} s (nodes, subscribers and emitter in one process)", cpu_seconds() - cpu_before);
    for (handler, _) in nodes {
        handler.shutdown().await;
    }
    match args.broker.as_str() {
        "redis" => drop(mcp_fleet_loadtest::cleanup::delete_redis_keys(&unique)),
        _ => drop(mcp_fleet_loadtest::cleanup::delete_nats_bus("nats://127.0.0.1:4222", &unique.to_uppercase()).await),
    }
}

/// This process's CPU seconds so far (0 when `/proc` cannot tell).
fn cpu_seconds() -> f64 {
    let ticks = mcp_fleet_loadtest::procfs::cpu_ticks(std::process::id()).unwrap_or(0);
    (ticks * mcp_fleet_loadtest::procfs::TICK_MS) as f64 / 1000.0
}
