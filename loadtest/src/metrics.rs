//! Node counters scraped from each node's `GET /metrics` (OpenMetrics text) before and after
//! the event phase: what the fleet itself says it delivered (to listen streams and to 2025-era
//! GET streams), coalesced, lost to gaps, and how many list requests it answered (and with
//! which status).

use std::collections::BTreeMap;
use std::time::Duration;

use bytes::Bytes;
use http::{Request, header};
use http_body_util::{BodyExt, Empty};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde::{Deserialize, Serialize};

/// The counters the report keeps, by their short name.
const COUNTERS: [(&str, &str); 12] = [
    ("framesWritten", "mcp_fleet_listen_frames_written"),
    ("legacyFramesWritten", "mcp_fleet_legacy_frames_written"),
    ("legacySessionsCreated", "mcp_fleet_legacy_sessions_created"),
    ("legacyStreamResumes", "mcp_fleet_legacy_stream_resumes"),
    ("legacyStreamsRefused", "mcp_fleet_legacy_streams_refused"),
    ("coalesced", "mcp_fleet_listen_coalesced"),
    ("eventsDelivered", "mcp_fleet_bus_events_delivered"),
    ("duplicatesDropped", "mcp_fleet_bus_duplicates_dropped"),
    ("gaps", "mcp_fleet_bus_gaps"),
    ("busReceived", "mcp_fleet_bus_received"),
    ("listenOpened", "mcp_fleet_listen_streams_opened"),
    ("listenRefused", "mcp_fleet_listen_streams_refused"),
];

/// The list methods whose requests are counted.
const LIST_METHODS: [&str; 4] = ["tools/list", "prompts/list", "resources/list", "resources/templates/list"];

/// Selected counters of one node at one moment.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeCounters {
    /// Counters by short name (see the JSON schema in `loadtest/README.md`).
    pub counters: BTreeMap<String, f64>,
    /// List requests answered.
    pub list_requests: f64,
    /// List requests answered with a status other than 200.
    pub list_errors: f64,
    /// Open listen streams (a gauge).
    pub listen_open: f64,
}

impl NodeCounters {
    /// `self − before`, counter by counter (the gauge keeps its later value).
    pub fn delta(&self, before: &NodeCounters) -> NodeCounters {
        let counters = self
            .counters
            .iter()
            .map(|(k, v)| (k.clone(), v - before.counters.get(k).copied().unwrap_or(0.0)))
            .collect();
        NodeCounters {
            counters,
            list_requests: self.list_requests - before.list_requests,
            list_errors: self.list_errors - before.list_errors,
            listen_open: self.listen_open,
        }
    }
}

/// Parse OpenMetrics text.
///
/// ```
/// let text = "# TYPE mcp_fleet_listen_coalesced counter\nmcp_fleet_listen_coalesced_total 7\n\
///             mcp_fleet_http_requests_total{method=\"tools/list\",status=\"200\"} 5\n\
///             mcp_fleet_http_requests_total{method=\"tools/list\",status=\"503\"} 1\n";
/// let c = mcp_fleet_loadtest::metrics::parse(text);
/// assert_eq!(c.counters["coalesced"], 7.0);
/// assert_eq!((c.list_requests, c.list_errors), (6.0, 1.0));
/// ```
pub fn parse(text: &str) -> NodeCounters {
    let mut out = NodeCounters::default();
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let Some((series, value)) = line.rsplit_once(' ') else { continue };
        let Ok(value) = value.trim().parse::<f64>() else { continue };
        let (name, labels) = series.split_once('{').unwrap_or((series, ""));
        let base = name.strip_suffix("_total").unwrap_or(name);
        if let Some((short, _)) = COUNTERS.iter().find(|(_, full)| *full == base) {
            *out.counters.entry((*short).to_owned()).or_default() += value;
        } else if base == "mcp_fleet_http_requests"
            && LIST_METHODS.iter().any(|m| labels.contains(&format!("method=\"{m}\"")))
        {
            out.list_requests += value;
            if !labels.contains("status=\"200\"") {
                out.list_errors += value;
            }
        } else if base == "mcp_fleet_listen_streams_open" {
            out.listen_open += value;
        }
    }
    out
}

/// Scrape `http://<addr>/metrics`.
pub async fn scrape(addr: &str, token: Option<&str>) -> Result<NodeCounters, String> {
    let client = Client::builder(TokioExecutor::new()).build_http::<Empty<Bytes>>();
    let mut request = Request::get(format!("http://{addr}/metrics"));
    if let Some(token) = token {
        request = request.header(header::AUTHORIZATION, format!("Bearer {token}"));
    }
    let request = request.body(Empty::new()).map_err(|e| e.to_string())?;
    let fetch = async {
        let response = client.request(request).await.map_err(|e| format!("{addr}: {e}"))?;
        if !response.status().is_success() {
            return Err(format!("{addr}/metrics answered {}", response.status()));
        }
        let body = response.into_body().collect().await.map_err(|e| format!("{addr}: {e}"))?.to_bytes();
        Ok(parse(&String::from_utf8_lossy(&body)))
    };
    tokio::time::timeout(Duration::from_secs(10), fetch).await.map_err(|_| format!("{addr}/metrics timed out"))?
}
