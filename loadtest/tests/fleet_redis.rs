//! A short load against two in-process nodes sharing a real Redis stream: changes published
//! straight onto the bus (`--bus`), scoped to two tenants, a mix of list and resource
//! changes, re-listing clients and verification — nothing may be lost, every client must
//! converge, and the JSON report must parse. Once in this process, once with two worker
//! processes (the real binary), whose histograms the coordinator merges, and once with
//! 2025-era clients (sessions and their GET streams) running the same watcher.
//!
//! Skipped (printing `skipped: redis not reachable`) when Redis does not answer, unless
//! `MCP_FLEET_REQUIRE_BROKERS=1`.

use std::sync::Arc;
use std::time::Duration;

use clap::Parser;
use mcp_fleet_bus_redis::{RedisBus, RedisBusOptions};
use mcp_fleet_loadtest::args::Args;
use mcp_fleet_loadtest::report::Report;
use mcp_fleet_loadtest::worker::Launch;
use mcp_fleet_server::types::{CallToolResult, GetPromptResult, Prompt, Tool};
use mcp_fleet_server::{HandlerOptions, McpHandler, McpServer, Principal, create_mcp_handler};
use serde_json::Value;

/// The same catalog on every node: five tools (three pages of two) and a prompt.
fn catalog() -> McpServer {
    let server = McpServer::builder("loadtest-fixture", "0.0.1").build();
    for i in 0..5 {
        server.tool(
            Tool::new(format!("tool-{i}"), "A fixture tool"),
            |_call| async move { Ok(CallToolResult::text("ok")) },
        );
    }
    let prompt = Prompt::new("greet", "A fixture prompt", Vec::new());
    server.prompt(prompt, |_get| async move { Ok(GetPromptResult::default()) });
    server
}

/// The tester's `x-tenant` header is the principal's scope (what a real authenticator
/// would derive from a token).
fn tenant_options() -> HandlerOptions {
    HandlerOptions::default().page_size(2).authenticator(|parts: &http::request::Parts| {
        let tenant = parts.headers.get("x-tenant").and_then(|v| v.to_str().ok()).map(str::to_owned);
        Ok(Principal::new(tenant.clone().unwrap_or_else(|| "anonymous".into()), tenant))
    })
}

struct Node {
    handler: McpHandler,
    url: String,
}

async fn start_node(redis_url: &str, stream_key: &str, id: &str) -> Node {
    let options = RedisBusOptions::new(redis_url, id).expect("redis url").with_stream_key(stream_key);
    let bus = RedisBus::connect(options).await.expect("redis bus");
    let handler = create_mcp_handler(catalog(), tenant_options().bus(Arc::new(bus))).await.expect("handler");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://{}/mcp", listener.local_addr().expect("addr"));
    tokio::spawn({
        let handler = handler.clone();
        async move { handler.serve(listener).await }
    });
    Node { handler, url }
}

/// The Redis URL if Redis answers; else print the skip (or fail when brokers are required).
async fn redis_or_skip() -> Option<String> {
    let url = std::env::var("MCP_FLEET_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into());
    let client = redis::Client::open(url.as_str()).ok()?;
    let probe = tokio::time::timeout(Duration::from_secs(2), client.get_multiplexed_async_connection()).await;
    if matches!(probe, Ok(Ok(_))) {
        return Some(url);
    }
    mcp_fleet_bus::testing::skip_unreachable("redis", &url);
    None
}

/// A fleet of two nodes on a private stream, removed from Redis afterwards.
struct Fleet {
    nodes: Vec<Node>,
    redis_url: String,
    stream_key: String,
}

impl Fleet {
    async fn start(name: &str) -> Option<Fleet> {
        let redis_url = redis_or_skip().await?;
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).expect("after 1970").as_nanos();
        let stream_key = format!("mcp-fleet-loadtest:{name}:{}-{nanos}", std::process::id());
        let nodes = vec![
            start_node(&redis_url, &stream_key, "node-a").await,
            start_node(&redis_url, &stream_key, "node-b").await,
        ];
        Some(Fleet { nodes, redis_url, stream_key })
    }

    /// The bus URL the tester publishes to (the same stream as the nodes).
    fn bus_url(&self) -> String {
        let sep = if self.redis_url.contains('?') { '&' } else { '?' };
        format!("{}{sep}stream={}", self.redis_url, self.stream_key)
    }

    fn args(&self, json: &std::path::Path, extra: &[&str]) -> Vec<String> {
        let mut argv: Vec<String> = Vec::new();
        for node in &self.nodes {
            argv.extend(["--url".into(), node.url.clone()]);
        }
        let bus = self.bus_url();
        let json = json.display().to_string();
        argv.extend(
            [
                "--bus",
                &bus,
                "--relist",
                "--verify",
                "--tenants",
                "2",
                "--mix",
                "tools=0.5,prompts=0.2,resource=0.3",
                "--uris",
                "6",
                "--uris-per-stream",
                "2",
                "--settle-ms",
                "8000",
                "--quiet",
                "--json",
                &json,
            ]
            .map(String::from),
        );
        argv.extend(extra.iter().map(|s| (*s).to_owned()));
        argv
    }

    async fn stop(self) {
        for node in self.nodes {
            node.handler.shutdown().await;
        }
        if let Ok(client) = redis::Client::open(self.redis_url.as_str())
            && let Ok(mut conn) = client.get_multiplexed_async_connection().await
        {
            let keys = [self.stream_key.clone(), format!("{}:version", self.stream_key)];
            let _: Result<(), _> = redis::cmd("DEL").arg(&keys).query_async(&mut conn).await;
        }
    }
}

fn json_path(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("mcp-fleet-loadtest-{name}-{}.json", std::process::id()))
}

/// What every run must show, checked on the report and on its JSON file.
fn assert_clean_run(report: &Report, json: &std::path::Path, streams: u64, events: u64) {
    println!("{}", report.table());
    assert!(report.verify.passed, "verification failed:\n{}", report.table());
    assert_eq!(report.verify.lost, 0);
    assert!(report.verify.checked > 0);
    assert_eq!(report.phases.open.opened, streams, "{}", report.table());
    assert_eq!(report.phases.events.published, events);
    let relist = report.phases.relist.as_ref().expect("relist figures");
    assert_eq!(relist.unconverged, 0, "{}", report.table());
    assert!(relist.storm.requests > 0 && relist.initial.fetches >= streams);
    assert!(report.phases.events.deliveries > 0);

    report.write_json(json).expect("write json");
    let parsed: Value = serde_json::from_slice(&std::fs::read(json).expect("read json")).expect("the report is JSON");
    assert_eq!(parsed["schema"], "mcp-fleet-loadtest/1");
    assert_eq!(parsed["verify"]["lost"], 0);
    assert_eq!(parsed["inputs"]["tenants"], 2);
    assert!(parsed["phases"]["relist"]["convergenceUs"]["p99"].as_u64().is_some());
    assert!(parsed["phases"]["events"]["deliveryLatencyUs"]["count"].as_u64().is_some_and(|n| n > 0));
    let _ = std::fs::remove_file(json);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_short_load_over_redis_loses_nothing_and_every_client_converges() {
    let Some(fleet) = Fleet::start("inproc").await else { return };
    let json = json_path("inproc");
    let argv = fleet.args(&json, &["--streams", "60", "--events", "12", "--interval-ms", "20"]);
    let args = Args::parse_from(std::iter::once("mcp-fleet-loadtest".to_owned()).chain(argv));
    let report = mcp_fleet_loadtest::run(&args, None).await.expect("run");
    assert_clean_run(&report, &json, 60, 12);
    fleet.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_worker_processes_over_h2c_merge_into_one_clean_report() {
    let Some(fleet) = Fleet::start("workers").await else { return };
    let json = json_path("workers");
    let argv =
        fleet.args(&json, &["--streams", "80", "--burst", "10", "--workers", "2", "--h2-streams-per-conn", "10"]);
    let args = Args::parse_from(std::iter::once("mcp-fleet-loadtest".to_owned()).chain(argv.clone()));
    let launch = Launch {
        exe: env!("CARGO_BIN_EXE_mcp-fleet-loadtest").into(),
        args: argv.into_iter().map(Into::into).collect(),
    };
    let report = mcp_fleet_loadtest::run(&args, Some(&launch)).await.expect("run");
    assert_clean_run(&report, &json, 80, 10);
    assert_eq!(report.inputs.workers, 2);
    fleet.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn re_listing_2025_era_clients_lose_nothing_and_every_client_converges() {
    // Each client is the same CatalogWatcher as a 2026 one, over a 2025 session: its lists
    // and subscriptions in the session, its changes on the session's GET stream.
    let Some(fleet) = Fleet::start("era2025").await else { return };
    let json = json_path("era2025");
    let argv = fleet.args(&json, &["--era", "2025", "--streams", "40", "--events", "10", "--interval-ms", "20"]);
    let args = Args::parse_from(std::iter::once("mcp-fleet-loadtest".to_owned()).chain(argv));
    let report = mcp_fleet_loadtest::run(&args, None).await.expect("run");
    assert_eq!(report.inputs.era, "2025");
    assert_clean_run(&report, &json, 40, 10);
    assert_eq!(report.verify.counts.unexpected, 0, "a stream hears only the URIs it subscribed: {}", report.table());
    fleet.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn changes_the_nodes_never_see_are_reported_lost() {
    // The tester publishes onto a stream no node reads: every accepted change is lost.
    let Some(mut fleet) = Fleet::start("lost").await else { return };
    let real_stream = fleet.stream_key.clone();
    fleet.stream_key = format!("{real_stream}:elsewhere");
    let json = json_path("lost");
    let mut argv = fleet.args(&json, &["--streams", "10", "--events", "3", "--interval-ms", "10"]);
    let settle = argv.iter().position(|a| a == "--settle-ms").expect("settle flag") + 1;
    argv[settle] = "300".into();
    let args = Args::parse_from(std::iter::once("mcp-fleet-loadtest".to_owned()).chain(argv));
    let report = mcp_fleet_loadtest::run(&args, None).await.expect("run");
    assert!(!report.verify.passed);
    assert!(report.verify.lost > 0 && !report.verify.examples.is_empty(), "{}", report.table());
    assert_eq!(report.exit_code(), 1);
    fleet.stop().await; // removes the stream the tester wrote to
    fleet_cleanup(&real_stream).await;
}

/// Remove a stream this test created besides the fleet's own.
async fn fleet_cleanup(stream_key: &str) {
    let url = std::env::var("MCP_FLEET_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into());
    if let Ok(client) = redis::Client::open(url.as_str())
        && let Ok(mut conn) = client.get_multiplexed_async_connection().await
    {
        let keys = [stream_key.to_owned(), format!("{stream_key}:version")];
        let _: Result<(), _> = redis::cmd("DEL").arg(&keys).query_async(&mut conn).await;
    }
}

/// Where the HTML pages of [`the_html_report_of_real_runs_draws_every_chart`] are kept, for
/// the headless browser check in `.ci/run` (`loadtest/scripts/check-report.py`).
fn html_out(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(name)
}

/// The `<svg>` element with `id`, if the page has it.
fn svg<'p>(page: &'p str, id: &str) -> Option<&'p str> {
    let start = page.find(&format!("<svg class=\"chart\" id=\"{id}\""))?;
    let end = page[start..].find("</svg>")? + start;
    Some(&page[start..end])
}

/// How many points each series of a chart draws.
fn series_points(svg: &str) -> Vec<usize> {
    svg.split("data-points=\"").skip(1).filter_map(|s| s.split('"').next()?.parse().ok()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_html_report_of_real_runs_draws_every_chart() {
    let (paced, burst) = (json_path("html-paced"), json_path("html-burst"));
    let mut reports = Vec::new();
    // Each run on a fleet of its own, as a before/after comparison would be.
    for (json, shape) in
        [(&paced, ["--events", "12", "--interval-ms", "20"]), (&burst, ["--burst", "12", "--publish-concurrency", "4"])]
    {
        let Some(fleet) = Fleet::start("html").await else { return };
        let mut argv = fleet.args(json, &["--streams", "60"]);
        argv.extend(shape.map(String::from));
        let args = Args::parse_from(std::iter::once("mcp-fleet-loadtest".to_owned()).chain(argv));
        let report = mcp_fleet_loadtest::run(&args, None).await.expect("run");
        assert_clean_run(&report, json, 60, 12);
        report.write_json(json).expect("write json");
        reports.push(report);
        fleet.stop().await;
    }

    // One run: the page a `--html` run writes.
    let single = html_out("loadtest-report.html");
    reports[0].write_html(&single).expect("write html");
    let page = std::fs::read_to_string(&single).expect("read html");
    assert!(page.starts_with("<!DOCTYPE html>") && page.trim_end().ends_with("</html>"));
    assert!(page.contains("default-src 'none'"), "the page forbids itself any fetch");
    for outside in ["<script", "<link", "<img", "src=", "url("] {
        assert!(!page.contains(outside), "a self-contained page has no {outside}");
    }
    assert!(page.contains("class=\"verdict pass\""), "verification is shown as passed");
    assert!(page.find("Verification") < page.find("Inputs"), "verification comes first");
    let events = reports[0].timeline.len();
    assert_eq!(events, 12);
    for id in [
        "delivery-percentiles",
        "fanout-over-time",
        "fanout-percentiles",
        "convergence-over-time",
        "client-convergence-percentiles",
        "storm-request-percentiles",
    ] {
        let chart = svg(&page, id).unwrap_or_else(|| panic!("chart {id} is drawn"));
        let points = series_points(chart);
        assert_eq!(points.len(), 1, "{id}: one run, one series");
        assert!(points[0] > 1, "{id}: {points:?}");
    }
    // A point per publish some stream got (one coalesced into a later one everywhere has none).
    let delivered = reports[0].timeline.iter().filter(|p| p.last_stream_us.is_some()).count();
    assert!(delivered > 1);
    assert_eq!(series_points(svg(&page, "fanout-over-time").expect("fanout chart")), [delivered]);
    assert!(page.contains(&format!("{} of 60", reports[0].phases.open.opened)));

    // Two runs side by side, from their JSON files: what `report a.json b.json --html` writes.
    let compared = html_out("loadtest-comparison.html");
    mcp_fleet_loadtest::html::write_comparison(&[paced.clone(), burst.clone()], &compared).expect("compare");
    let page = std::fs::read_to_string(&compared).expect("read comparison");
    assert!(page.contains("2 runs compared"));
    assert_eq!(page.matches("class=\"verdict pass\"").count(), 2);
    let label = |p: &std::path::Path| p.file_stem().expect("stem").to_string_lossy().into_owned();
    assert!(page.contains(&format!("<th>{}</th><th>{}</th>", label(&paced), label(&burst))));
    for id in ["delivery-percentiles", "fanout-over-time", "convergence-over-time"] {
        assert_eq!(series_points(svg(&page, id).expect("chart")).len(), 2, "{id}: a line per run");
    }
    for json in [paced, burst] {
        let _ = std::fs::remove_file(json);
    }
}
