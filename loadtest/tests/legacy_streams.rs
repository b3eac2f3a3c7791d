//! `--era 2025` end to end: an in-process node on the in-memory bus (its 2025-era sessions in
//! the bus's keyspace), a minimal `POST /admin/notify` and `GET /metrics` beside it (what the
//! `mcp-fleet` binary's admin endpoint does), and the tester's 2025-era clients — each one
//! `initialize`s, sends `notifications/initialized`, subscribes to its URIs and opens its
//! session's GET stream. Every stream must hear every change it follows, over HTTP/1.1 and
//! over h2c with two loader processes; changes the node never sees must be reported lost.

use std::convert::Infallible;

use bytes::Bytes;
use clap::Parser;
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use mcp_fleet_bus::{Change, EventKind};
use mcp_fleet_loadtest::args::Args;
use mcp_fleet_loadtest::report::Report;
use mcp_fleet_loadtest::worker::Launch;
use mcp_fleet_server::types::{CallToolResult, Tool};
use mcp_fleet_server::{HandlerOptions, McpHandler, McpServer, create_mcp_handler};
use serde_json::{Value, json};

fn catalog() -> McpServer {
    let server = McpServer::builder("loadtest-legacy-fixture", "0.0.1").build();
    server.tool(Tool::new("echo", "A fixture tool"), |_call| async move { Ok(CallToolResult::text("ok")) });
    server
}

/// A node serving `/mcp` on a port of its own; answers its URL.
async fn start_node() -> (McpHandler, String) {
    let handler = create_mcp_handler(catalog(), HandlerOptions::default()).await.expect("handler");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://{}/mcp", listener.local_addr().expect("addr"));
    tokio::spawn({
        let handler = handler.clone();
        async move { handler.serve(listener).await }
    });
    (handler, url)
}

/// `POST /admin/notify` publishing through `handler` (answering the event's epoch and
/// version, as the node's admin endpoint does) and `GET /metrics`; answers `host:port`.
async fn start_admin(handler: McpHandler) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr").to_string();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let handler = handler.clone();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |req| {
                    let handler = handler.clone();
                    async move { Ok::<_, Infallible>(admin(&handler, req).await) }
                });
                let _ =
                    hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(stream), service).await;
            });
        }
    });
    addr
}

async fn admin(handler: &McpHandler, req: Request<Incoming>) -> Response<Full<Bytes>> {
    if req.uri().path() == "/metrics" {
        return Response::new(Full::new(Bytes::from(handler.metrics_text())));
    }
    let body = req.into_body().collect().await.expect("body").to_bytes();
    let request: Value = serde_json::from_slice(&body).expect("JSON");
    let mut change = match (request["kind"].as_str(), request["uri"].as_str()) {
        (Some("resource"), Some(uri)) => Change::resource(uri),
        (Some("tools"), None) => Change::list(EventKind::ToolsListChanged),
        (Some("prompts"), None) => Change::list(EventKind::PromptsListChanged),
        (Some("resources"), None) => Change::list(EventKind::ResourcesListChanged),
        _ => {
            let mut bad = Response::new(Full::new(Bytes::from_static(b"{\"error\":\"bad kind\"}")));
            *bad.status_mut() = StatusCode::BAD_REQUEST;
            return bad;
        }
    };
    if let Some(scope) = request["scope"].as_str() {
        change = change.in_scope(scope);
    }
    let event = handler.notify().publish(change).await.expect("publish");
    Response::new(Full::new(Bytes::from(json!({"epoch": event.epoch, "version": event.version}).to_string())))
}

fn args(url: &str, admin: &str, extra: &[&str]) -> Vec<String> {
    let mut argv: Vec<String> =
        ["--era", "2025", "--url", url, "--admin", admin, "--verify", "--quiet", "--settle-ms", "5000"]
            .map(String::from)
            .to_vec();
    argv.extend(extra.iter().map(|s| (*s).to_owned()));
    argv
}

fn parse(argv: &[String]) -> Args {
    Args::parse_from(std::iter::once("mcp-fleet-loadtest".to_owned()).chain(argv.iter().cloned()))
}

/// The node's own count of 2025-era frames written during the event phase.
fn legacy_frames(report: &Report) -> f64 {
    let delta = report.nodes.first().and_then(|n| n.delta.as_ref()).expect("metrics scraped");
    delta.counters.get("legacyFramesWritten").copied().unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_get_streams_each_hear_every_change() {
    let (handler, url) = start_node().await;
    let admin = start_admin(handler.clone()).await;
    let argv = args(&url, &admin, &["--streams", "50", "--events", "8", "--interval-ms", "30"]);
    let report = mcp_fleet_loadtest::run(&parse(&argv), None).await.expect("run");
    println!("{}", report.table());
    assert!(report.verify.passed, "{}", report.table());
    assert_eq!(report.inputs.era, "2025");
    assert_eq!(report.phases.open.opened, 50);
    assert_eq!((report.verify.checked, report.verify.lost), (50 * 8, 0));
    let events = &report.phases.events;
    assert_eq!(events.published, 8);
    assert_eq!(events.deliveries, 50 * 8, "every stream matched every change: {}", report.table());
    assert_eq!((events.streams_complete, events.unmatched_frames), (50, 0));
    assert_eq!(events.fanout_us.count, 8, "a fan-out time per change");
    assert!(events.delivery_latency_us.p50 > 0);
    let counts = &report.verify.counts;
    assert_eq!(counts.frames, 50 * 8);
    assert!(counts.unstamped == 0 || counts.unstamped == counts.frames, "a node stamps all or none: {counts:?}");
    assert_eq!(legacy_frames(&report), 400.0);
    // The tester closed its streams; the node notices each closed connection on its own time.
    for _ in 0..100 {
        if handler.open_session_streams() == 0 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(handler.open_session_streams(), 0, "the tester closed its streams");
    let json: Value = serde_json::to_value(&report).expect("serializes");
    assert_eq!(json["inputs"]["era"], "2025");
    handler.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subscribed_resources_over_h2c_with_two_worker_processes() {
    let (handler, url) = start_node().await;
    let admin = start_admin(handler.clone()).await;
    let argv = args(
        &url,
        &admin,
        &[
            "--streams",
            "40",
            "--h2-streams-per-conn",
            "10",
            "--workers",
            "2",
            "--mix",
            "tools=0.5,resource=0.5",
            "--uris",
            "4",
            "--uris-per-stream",
            "1",
            "--burst",
            "12",
            "--publish-concurrency",
            "1",
        ],
    );
    let launch =
        Launch { exe: env!("CARGO_BIN_EXE_mcp-fleet-loadtest").into(), args: argv.iter().map(Into::into).collect() };
    let report = mcp_fleet_loadtest::run(&parse(&argv), Some(&launch)).await.expect("run");
    println!("{}", report.table());
    assert!(report.verify.passed, "{}", report.table());
    assert_eq!(report.inputs.workers, 2);
    assert_eq!(report.phases.open.opened, 40);
    assert_eq!(report.verify.lost, 0);
    assert!(report.verify.checked > 0);
    assert_eq!(report.verify.counts.unexpected, 0, "a stream hears only the URIs it subscribed");
    assert!(report.phases.events.deliveries > 0);
    handler.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn changes_the_node_never_sees_are_reported_lost() {
    let (handler, url) = start_node().await;
    // The admin endpoint publishes on another node's bus: nothing reaches the streams.
    let (elsewhere, _) = start_node().await;
    let admin = start_admin(elsewhere.clone()).await;
    let mut argv = args(&url, &admin, &["--streams", "10", "--events", "3", "--interval-ms", "10"]);
    let settle = argv.iter().position(|a| a == "--settle-ms").expect("settle flag") + 1;
    argv[settle] = "300".into();
    let report = mcp_fleet_loadtest::run(&parse(&argv), None).await.expect("run");
    assert!(!report.verify.passed);
    assert_eq!(report.verify.lost, 30, "{}", report.table());
    assert_eq!(report.exit_code(), 1);
    assert_eq!(report.phases.events.deliveries, 0);
    handler.shutdown().await;
    elsewhere.shutdown().await;
}
