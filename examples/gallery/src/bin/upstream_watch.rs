//! Watch an upstream source only while someone listens: the resource `clock://now` mirrors an
//! "upstream" (here the clock, polled every `POLL_MS`, default 1000). Its watcher runs on one
//! node of the fleet while any stream anywhere subscribes to the URI, and announces each poll
//! as `notifications/resources/updated`; with nobody listening, nothing is polled.
//!
//! `cargo run -p mcp-fleet-examples --bin upstream_watch`, then listen with
//! `{"resourceSubscriptions": ["clock://now"]}`: the example prints `watching clock://now`,
//! and `stopped watching clock://now` when the stream closes.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use mcp_fleet_server::bus::Subject;
use mcp_fleet_server::types::{Resource, ResourceContents};
use mcp_fleet_server::watch::{Watch, Watchers};
use mcp_fleet_server::{HandlerOptions, McpServer};

const NOW: &str = "clock://now";

/// What the upstream says now.
fn upstream() -> String {
    let since = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
    format!("{} ms since the epoch", since.as_millis())
}

/// Runs while anyone listens to a URI: polls the upstream and announces every change.
async fn poll_upstream(watch: Watch, every: Duration) {
    let Subject::Uri(uri) = watch.subject().clone() else { return };
    if uri != NOW {
        return; // a URI this server does not mirror
    }
    println!("watching {uri}");
    let mut poll = tokio::time::interval(every);
    loop {
        tokio::select! {
            () = watch.ended() => break,
            _ = poll.tick() => {
                if let Err(err) = watch.notify().resource_updated(uri.clone()).await {
                    eprintln!("could not announce the upstream's change: {err}");
                }
            }
        }
    }
    println!("stopped watching {uri}");
}

#[tokio::main]
async fn main() -> mcp_fleet_examples::Result {
    let every = Duration::from_millis(std::env::var("POLL_MS").ok().and_then(|v| v.parse().ok()).unwrap_or(1000));
    let server = McpServer::builder("upstream-watch", "1.0.0").build();
    server.resource(Resource::new(NOW, "now", "The upstream's current value", "text/plain"), |read| async move {
        Ok(vec![ResourceContents::text(read.uri, "text/plain", upstream())])
    });
    let watchers = Watchers::new(move |watch| poll_upstream(watch, every));
    mcp_fleet_examples::run(server, HandlerOptions::default().watchers(watchers)).await
}
