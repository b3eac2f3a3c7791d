//! `mcp-fleet-loadtest`: measures change-notification fan-out from outside the server.
//!
//! It opens `--streams` `subscriptions/listen` streams (one TCP connection each, HTTP/1.1),
//! then publishes `--events` tools-list changes through the node's admin endpoint, one every
//! `--interval-ms`, and times each delivery from the moment the publish request was sent to the
//! moment the notification arrived on each stream. It reports deliveries, missing ones,
//! latency percentiles and the fan-out time (publish → last stream). Only loopback targets
//! make sense here; every wait is bounded.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use clap::Parser;
use http::Request;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use mcp_fleet_protocol::sse::{SseDecoder, SseEvent};
use serde_json::{Value, json};
use tokio::net::TcpStream;

mod limit;

/// What to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Mode {
    /// Measure an mcp-fleet node (the default).
    Fanout,
    /// The machine's limit, writer side: `--mcp` is the address to listen on.
    LimitWriter,
    /// The machine's limit, reader side: `--mcp` is the writer's address.
    LimitReader,
}

/// Fan-out load test of an mcp-fleet node.
#[derive(Debug, Parser)]
struct Args {
    /// What to run.
    #[arg(long, value_enum, default_value = "fanout")]
    mode: Mode,
    /// Multiplex this many listen streams on each HTTP/2 (h2c) connection; 0 = one HTTP/1.1
    /// connection per stream.
    #[arg(long, default_value_t = 0)]
    h2_streams_per_conn: usize,
    /// Frame size for the limit writer, in bytes (the node's frames are ≈ 300).
    #[arg(long, default_value_t = 300)]
    frame_bytes: usize,
    /// host:port of the MCP endpoint (served at /mcp).
    #[arg(long, default_value = "127.0.0.1:8080")]
    mcp: String,
    /// host:port of the node's admin endpoint (POST /admin/notify).
    #[arg(long, default_value = "127.0.0.1:9090")]
    admin: String,
    /// Listen streams to open.
    #[arg(long, default_value_t = 1000)]
    streams: usize,
    /// Change events to publish.
    #[arg(long, default_value_t = 20)]
    events: usize,
    /// Pause between events, in milliseconds (lets each fan-out finish: no coalescing).
    #[arg(long, default_value_t = 200)]
    interval_ms: u64,
    /// The server's pid, to report its CPU time per delivery (Linux `/proc`; the node must run
    /// on this machine).
    #[arg(long)]
    server_pid: Option<u32>,
}

/// Receipts: (stream, event version, arrival time).
type Receipts = Arc<Mutex<Vec<(usize, u64, Instant)>>>;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    match args.mode {
        Mode::Fanout => {}
        Mode::LimitWriter => {
            let interval = Duration::from_millis(args.interval_ms);
            return limit::writer(&args.mcp, args.streams, args.events, args.frame_bytes, interval);
        }
        Mode::LimitReader => return limit::reader(&args.mcp, args.streams).await,
    }
    let receipts: Receipts = Arc::new(Mutex::new(Vec::new()));
    let opened = Instant::now();
    let mut tasks = Vec::with_capacity(args.streams);
    let mut h2: Option<Http2Sender> = None;
    for i in 0..args.streams {
        let (ready_tx, ready_rx) = tokio::sync::oneshot::channel();
        let sender = if args.h2_streams_per_conn == 0 {
            Sender::Http1(http1_sender(&args.mcp).await?)
        } else {
            if i % args.h2_streams_per_conn == 0 {
                h2 = Some(http2_sender(&args.mcp).await?);
            }
            Sender::Http2(h2.clone().ok_or("no HTTP/2 connection")?)
        };
        tasks.push(tokio::spawn(listen(sender, args.mcp.clone(), i, receipts.clone(), ready_tx)));
        tokio::time::timeout(Duration::from_secs(10), ready_rx).await??;
    }
    println!("opened {} listen streams in {:?}", args.streams, opened.elapsed());
    let mut sent: HashMap<u64, Instant> = HashMap::new();
    let cpu_before = args.server_pid.map(cpu_ticks).transpose()?;
    for _ in 0..args.events {
        let at = Instant::now();
        let version = publish(&args.admin).await?;
        sent.insert(version, at);
        tokio::time::sleep(Duration::from_millis(args.interval_ms)).await;
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    let receipts = receipts.lock().map_err(|_| "poisoned")?;
    report(&args, &sent, &receipts);
    if let (Some(pid), Some(before)) = (args.server_pid, cpu_before) {
        let ticks = cpu_ticks(pid)? - before;
        // Linux reports process CPU time in clock ticks of 10 ms (USER_HZ = 100).
        let cpu = Duration::from_millis(ticks * 10);
        let per = cpu.as_secs_f64() * 1e6 / receipts.len().max(1) as f64;
        println!(
            "server CPU during the event phase {cpu:?}: {per:.2} µs per delivery (includes keepalives and publishes)"
        );
    }
    for t in tasks {
        t.abort();
    }
    Ok(())
}

type Http2Sender = hyper::client::conn::http2::SendRequest<Full<Bytes>>;

/// How a listen request is sent: its own HTTP/1.1 connection, or a stream of a shared h2c one.
enum Sender {
    Http1(hyper::client::conn::http1::SendRequest<Full<Bytes>>),
    Http2(Http2Sender),
}

async fn http1_sender(
    addr: &str,
) -> Result<hyper::client::conn::http1::SendRequest<Full<Bytes>>, Box<dyn std::error::Error>> {
    let stream = TcpStream::connect(addr).await?;
    stream.set_nodelay(true)?;
    let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
    tokio::spawn(conn);
    Ok(sender)
}

async fn http2_sender(addr: &str) -> Result<Http2Sender, Box<dyn std::error::Error>> {
    let stream = TcpStream::connect(addr).await?;
    stream.set_nodelay(true)?;
    let (sender, conn) =
        hyper::client::conn::http2::handshake(hyper_util::rt::TokioExecutor::new(), TokioIo::new(stream)).await?;
    tokio::spawn(conn);
    Ok(sender)
}

async fn listen(sender: Sender, addr: String, i: usize, receipts: Receipts, ready: tokio::sync::oneshot::Sender<()>) {
    let result = async {
        let body = json!({"jsonrpc": "2.0", "id": i, "method": "subscriptions/listen", "params": {
            "notifications": {"toolsListChanged": true},
            "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}}});
        let req = Request::post(format!("http://{addr}/mcp"))
            .header("content-type", "application/json")
            .header("accept", "text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "subscriptions/listen")
            .body(Full::new(Bytes::from(serde_json::to_vec(&body)?)))?;
        let response = match sender {
            Sender::Http1(mut s) => s.send_request(req).await?,
            Sender::Http2(mut s) => s.send_request(req).await?,
        };
        let mut body = response.into_body();
        let mut decoder = SseDecoder::new();
        let mut events = Vec::new();
        let mut ready = Some(ready);
        while let Some(frame) = body.frame().await {
            let Ok(data) = frame?.into_data() else { continue };
            let now = Instant::now();
            decoder.feed(&data, &mut events);
            for event in events.drain(..) {
                let SseEvent::Message(m) = event else { continue };
                if let Some(v) = event_version(&m) {
                    receipts.lock().map_err(|_| "poisoned")?.push((i, v, now));
                } else if let Some(tx) = ready.take() {
                    let _ = tx.send(());
                }
            }
        }
        Ok::<(), Box<dyn std::error::Error + Send + Sync>>(())
    }
    .await;
    if let Err(e) = result {
        eprintln!("stream {i}: {e}");
    }
}

/// The event version of a change notification, found without a full JSON parse so the loader
/// costs less CPU than the server it measures (the project `_meta` key ends each frame).
fn event_version(message: &str) -> Option<u64> {
    let meta = &message[message.find("\"dev.mcp-fleet/event\"")?..];
    let digits = &meta[meta.find("\"version\":")? + 10..];
    let end = digits.find(|c: char| !c.is_ascii_digit()).unwrap_or(digits.len());
    digits[..end].parse().ok()
}

/// utime + stime of a process, in clock ticks.
fn cpu_ticks(pid: u32) -> Result<u64, Box<dyn std::error::Error>> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    // Fields after the parenthesised command name; utime and stime are fields 14 and 15.
    let rest = stat.rsplit_once(')').ok_or("unexpected /proc stat format")?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    Ok(fields.get(11).ok_or("no utime")?.parse::<u64>()? + fields.get(12).ok_or("no stime")?.parse::<u64>()?)
}

async fn publish(admin: &str) -> Result<u64, Box<dyn std::error::Error>> {
    let stream = TcpStream::connect(admin).await?;
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
    tokio::spawn(conn);
    let req = Request::post(format!("http://{admin}/admin/notify"))
        .body(Full::new(Bytes::from_static(b"{\"kind\":\"tools\"}")))?;
    let body = sender.send_request(req).await?.into_body().collect().await?.to_bytes();
    let reply: Value = serde_json::from_slice(&body)?;
    reply["version"].as_u64().ok_or_else(|| format!("admin notify failed: {reply}").into())
}

fn report(args: &Args, sent: &HashMap<u64, Instant>, receipts: &[(usize, u64, Instant)]) {
    let mut latencies: Vec<Duration> = Vec::new();
    let mut last_per_event: HashMap<u64, Instant> = HashMap::new();
    for (_, version, at) in receipts {
        let Some(start) = sent.get(version) else { continue };
        latencies.push(at.saturating_duration_since(*start));
        let last = last_per_event.entry(*version).or_insert(*at);
        *last = (*last).max(*at);
    }
    latencies.sort();
    let mut fanout: Vec<Duration> =
        last_per_event.iter().map(|(v, last)| last.saturating_duration_since(sent[v])).collect();
    fanout.sort();
    let pct =
        |v: &[Duration], p: f64| v.get(((v.len() as f64 - 1.0) * p).round() as usize).copied().unwrap_or_default();
    let expected = args.streams * sent.len();
    println!(
        "deliveries {} of {expected} ({} coalesced into a newer one or lost)",
        latencies.len(),
        expected.saturating_sub(latencies.len())
    );
    let newest = sent.keys().max().copied().unwrap_or_default();
    let mut newest_per_stream: HashMap<usize, u64> = HashMap::new();
    for (stream, version, _) in receipts {
        let v = newest_per_stream.entry(*stream).or_default();
        *v = (*v).max(*version);
    }
    let up_to_date = newest_per_stream.values().filter(|v| **v >= newest).count();
    println!("streams that received the newest change: {up_to_date} of {} (must be all)", args.streams);
    println!(
        "delivery latency p50 {:?} p99 {:?} max {:?}",
        pct(&latencies, 0.5),
        pct(&latencies, 0.99),
        latencies.last().copied().unwrap_or_default()
    );
    println!(
        "fan-out to all {} streams: median {:?} max {:?}",
        args.streams,
        pct(&fanout, 0.5),
        fanout.last().copied().unwrap_or_default()
    );
}

#[cfg(test)]
mod tests {
    use mcp_fleet_protocol::sse::{NotificationFrame, SseDecoder, SseEvent};

    #[test]
    fn finds_the_event_version_in_a_real_frame_without_parsing_json() {
        let frame = NotificationFrame::new(
            "notifications/tools/list_changed",
            None,
            &serde_json::json!({"publishedAtMs": 1, "version": 4711}),
        );
        let mut wire = Vec::new();
        frame.write(&mut wire, b"\"sub-1\"");
        let mut events = Vec::new();
        SseDecoder::new().feed(&wire, &mut events);
        let [SseEvent::Message(message)] = events.as_slice() else { panic!("one message expected: {events:?}") };
        assert_eq!(super::event_version(message), Some(4711));
        assert_eq!(super::event_version(r#"{"method":"notifications/subscriptions/acknowledged"}"#), None);
    }
}
