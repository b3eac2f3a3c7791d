//! The shipped Grafana dashboard cannot rot: every metric name one of its queries (panels and
//! template variables) uses must be one a running node exports on its admin `/metrics`, and
//! the copy in `deploy/grafana/` must be the chart's (`helm/mcp-fleet/dashboards/`).
//!
//! A family exports the sample names of its type, as Prometheus stores them: a counter
//! `NAME_total`, a histogram `NAME_bucket`, `NAME_sum` and `NAME_count`, anything else
//! `NAME`. A family with labels prints nothing before its first series: the node creates the
//! series whose labels it knows in advance (reasons, task statuses) at start, and the test
//! sends one request for those only traffic labels (method, status, protocol version). The
//! node is started with a catalog file so the reload metrics exist too.

mod common;

use std::collections::BTreeSet;
use std::path::Path;

use common::Node;
use mcp_fleet_tests::McpClient;
use serde_json::Value;

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");

/// Every sample name `/metrics` can hold, from its `# TYPE NAME TYPE` lines.
fn exported(metrics: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for line in metrics.lines() {
        let Some(rest) = line.strip_prefix("# TYPE ") else { continue };
        let mut words = rest.split_whitespace();
        let (Some(name), Some(kind)) = (words.next(), words.next()) else { continue };
        let suffixes: &[&str] = match kind {
            "counter" => &["_total"],
            "histogram" => &["_bucket", "_sum", "_count"],
            _ => &[""],
        };
        names.extend(suffixes.iter().map(|s| format!("{name}{s}")));
    }
    names
}

/// Every PromQL text of the dashboard: panel targets (rows' panels included) and variables.
fn queries(dashboard: &Value) -> Vec<String> {
    let mut out = Vec::new();
    let mut panels: Vec<&Value> = dashboard["panels"].as_array().expect("panels").iter().collect();
    while let Some(panel) = panels.pop() {
        panels.extend(panel["panels"].as_array().into_iter().flatten());
        for target in panel["targets"].as_array().into_iter().flatten() {
            out.push(target["expr"].as_str().expect("every target has an expr").to_owned());
        }
    }
    for variable in dashboard["templating"]["list"].as_array().expect("variables") {
        if let Some(query) = variable["query"]["query"].as_str() {
            out.push(query.to_owned());
        }
    }
    out
}

/// The `mcp_fleet_…` names a query uses.
fn metric_names(query: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = query;
    while let Some(at) = rest.find("mcp_fleet_") {
        let tail = &rest[at..];
        let end = tail.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(tail.len());
        names.push(tail[..end].to_owned());
        rest = &tail[end..];
    }
    names
}

fn read(path: &str) -> String {
    let path = Path::new(ROOT).join(path);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[tokio::test]
async fn every_metric_the_dashboard_queries_is_one_a_node_exports() {
    let chart_copy = read("helm/mcp-fleet/dashboards/mcp-fleet.json");
    assert_eq!(read("deploy/grafana/mcp-fleet.json"), chart_copy, "deploy/grafana/ must be the chart's dashboard");
    let dashboard: Value = serde_json::from_str(&chart_copy).expect("the dashboard is JSON");

    let catalog = Path::new(ROOT).join("deploy/local/catalog.toml");
    let node = Node::start(&["--catalog", catalog.to_str().expect("utf-8 path")], None);
    node.ready().await;
    let tools = McpClient::new(node.url()).result("tools/list", serde_json::json!({})).await;
    assert!(tools["tools"].is_array(), "{tools}");
    let (status, metrics) = node.admin_get("/metrics").await.expect("/metrics answers");
    assert_eq!(status, 200);
    let exported = exported(&metrics);

    let queries = queries(&dashboard);
    let used: BTreeSet<String> = queries.iter().flat_map(|q| metric_names(q)).collect();
    let missing: Vec<&String> = used.difference(&exported).collect();
    assert!(missing.is_empty(), "the dashboard queries metrics no node exports: {missing:?}\nexported: {exported:?}");
    // What the issue asks the dashboard to show, by the metric that shows it.
    for needed in [
        "mcp_fleet_listen_streams_open",
        "mcp_fleet_listen_frames_written_total",
        "mcp_fleet_listen_coalesced_total",
        "mcp_fleet_bus_gaps_total",
        "mcp_fleet_bus_connected",
        "mcp_fleet_bus_reconnects_total",
        "mcp_fleet_bus_publish_failures_total",
        "mcp_fleet_catalog_revision_info",
        "mcp_fleet_fleet_convergence_timeouts_total",
        "mcp_fleet_catalog_reload_failures_total",
        "mcp_fleet_http_requests_total",
        "mcp_fleet_http_requests_rate_limited_total",
        "mcp_fleet_legacy_sessions_created_total",
        "mcp_fleet_tasks",
    ] {
        assert!(used.contains(needed), "no panel shows {needed}");
    }
    assert!(queries.iter().all(|q| !metric_names(q).is_empty()), "every query reads a fleet metric");
}

#[test]
fn metric_names_are_read_out_of_promql() {
    let q = r#"sum by (le) (rate(mcp_fleet_bus_event_age_seconds_bucket{pod=~"$pod"}[5m])) / mcp_fleet_tasks"#;
    assert_eq!(metric_names(q), ["mcp_fleet_bus_event_age_seconds_bucket", "mcp_fleet_tasks"]);
    let text = "# TYPE mcp_fleet_a counter\n# TYPE mcp_fleet_b histogram\n# TYPE mcp_fleet_c gauge\n";
    let names: Vec<String> = exported(text).into_iter().collect();
    assert_eq!(
        names,
        ["mcp_fleet_a_total", "mcp_fleet_b_bucket", "mcp_fleet_b_count", "mcp_fleet_b_sum", "mcp_fleet_c"]
    );
}
