//! Watchers across a fleet of three nodes, on the real Redis and NATS JetStream: one watch per
//! subject for the whole fleet while any stream anywhere follows it — started on the node of
//! the first stream, kept while streams on other nodes remain, ended once when the last one
//! closes — and moved to a node still listening when the node running it leaves.
//!
//! Skipped (with `skipped: … not reachable at …`) when a broker is down, unless
//! `MCP_FLEET_REQUIRE_BROKERS=1`.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_fleet_server::HandlerOptions;
use mcp_fleet_server::bus::Subject;
use mcp_fleet_server::watch::{Watch, Watchers};
use mcp_fleet_tests::cluster::{Broker, Fleet, tenant_options};
use mcp_fleet_tests::legacy::LegacySession;
use mcp_fleet_tests::{ListenStream, McpClient};
use serde_json::json;

const URI: &str = "test://upstream/feed";
/// Long enough that a loaded machine renews in time (a lease not renewed for a whole lease
/// ends its watch), short enough that takeovers and remote ends come within a test's wait.
const LEASE: Duration = Duration::from_secs(2);

/// What the watchers did: `(node, subject, started)` in order.
#[derive(Clone, Default)]
struct Log(Arc<Mutex<Vec<(usize, Subject, bool)>>>);

impl Log {
    fn of(&self, subject: &Subject) -> Vec<(usize, bool)> {
        let log = self.0.lock().expect("log");
        log.iter().filter(|(_, s, _)| s == subject).map(|(n, _, started)| (*n, *started)).collect()
    }

    async fn until(&self, what: &str, subject: &Subject, done: impl Fn(&[(usize, bool)]) -> bool) {
        let seen = || std::future::ready(done(&self.of(subject)));
        mcp_fleet_tests::eventually(what, Duration::from_secs(10), seen).await;
    }
}

/// Options (`base()`, with) a watcher that logs its start and end on node `i` (the options are made
/// once per node, in order) and, while it runs, polls its "upstream": an update of the URI
/// every 100 ms.
fn watching(log: &Log, base: fn() -> HandlerOptions) -> impl Fn() -> HandlerOptions {
    let (log, next) = (log.clone(), Arc::new(AtomicUsize::new(0)));
    move || {
        let (log, node) = (log.clone(), next.fetch_add(1, Ordering::Relaxed));
        let watcher = move |watch: Watch| {
            let log = log.clone();
            async move {
                log.0.lock().expect("log").push((node, watch.subject().clone(), true));
                let mut poll = tokio::time::interval(Duration::from_millis(100));
                while !watch.is_ended() {
                    tokio::select! {
                        () = watch.ended() => {}
                        _ = poll.tick() => if let Subject::Uri(uri) = watch.subject() {
                            let _ = watch.notify().resource_updated(uri.clone()).await;
                        }
                    }
                }
                log.0.lock().expect("log").push((node, watch.subject().clone(), false));
            }
        };
        base().watchers(Watchers::new(watcher).lease(LEASE))
    }
}

async fn hears_update(stream: &mut ListenStream) {
    loop {
        let message = stream.next_message().await.expect("a notification");
        if message["method"] == "notifications/resources/updated" {
            assert_eq!(message["params"]["uri"], URI, "{message}");
            return;
        }
    }
}

async fn one_watch_while_anyone_listens(broker: Broker) {
    let log = Log::default();
    let Some(fleet) = Fleet::start(broker, watching(&log, tenant_options)).await else { return };
    let (uri, scope) = (Subject::Uri(URI.into()), Subject::Scope("acme".into()));
    let follow = json!({"resourceSubscriptions": [URI]});
    let mut first = fleet.listen(0, Some("acme"), follow.clone()).await;
    hears_update(&mut first).await;
    let mut others =
        vec![fleet.listen(1, Some("beta"), follow.clone()).await, fleet.listen(2, Some("beta"), follow).await];
    for stream in &mut others {
        hears_update(stream).await; // from the one watch, wherever it runs
    }
    assert_eq!(log.of(&uri), [(0, true)], "the first stream's node watches the URI, once for the fleet");
    assert_eq!(log.of(&scope), [(0, true)], "and its tenant");

    drop(first);
    tokio::time::sleep(LEASE * 2).await;
    assert_eq!(log.of(&uri), [(0, true)], "kept while streams on other nodes follow it");
    log.until("the tenant's watch ends with its last stream", &scope, |l| l == [(0, true), (0, false)]).await;
    hears_update(&mut others[1]).await;

    drop(others);
    log.until("the URI's watch ends with the fleet's last stream", &uri, |l| l == [(0, true), (0, false)]).await;
    tokio::time::sleep(LEASE).await;
    assert_eq!(log.of(&uri).len(), 2, "started once, ended once");
    fleet.shutdown().await;
}

#[tokio::test]
async fn one_watch_while_anyone_listens_on_redis() {
    one_watch_while_anyone_listens(Broker::Redis).await;
}

#[tokio::test]
async fn one_watch_while_anyone_listens_on_nats() {
    one_watch_while_anyone_listens(Broker::Nats).await;
}

/// The node running a watch shuts down while a stream on another node still follows the
/// subject: the watch ends there and starts again on that node, and that stream hears it.
#[tokio::test]
async fn a_watch_moves_to_a_node_still_listening_when_its_node_leaves() {
    let log = Log::default();
    let Some(fleet) = Fleet::start(Broker::Redis, watching(&log, tenant_options)).await else { return };
    let uri = Subject::Uri(URI.into());
    let follow = json!({"resourceSubscriptions": [URI]});
    let first = fleet.listen(0, Some("acme"), follow.clone()).await;
    log.until("the watch starts on node 0", &uri, |l| l == [(0, true)]).await;
    let mut staying = fleet.listen(1, Some("acme"), follow).await;
    fleet.nodes[0].handler.shutdown().await;
    drop(first);
    log.until("the watch moves to node 1", &uri, |l| l == [(0, true), (0, false), (1, true)]).await;
    hears_update(&mut staying).await;
    drop(staying);
    log.until("and ends there with the last stream", &uri, |l| l.len() == 4 && l[3] == (1, false)).await;
    fleet.shutdown().await;
}

/// A 2025 session's `resources/subscribe`, made through another node than its GET stream's,
/// is watched while the stream is open and subscribed, and unwatched when it unsubscribes.
#[tokio::test]
async fn a_2025_session_subscription_is_watched_while_it_lasts() {
    let log = Log::default();
    let Some(fleet) = Fleet::start(Broker::Redis, watching(&log, HandlerOptions::default)).await else { return };
    let uri = Subject::Uri(URI.into());
    let c: Vec<McpClient> = fleet.nodes.iter().map(|n| McpClient::new(n.url())).collect();
    let session = LegacySession::open(&c[0], json!({})).await;
    let mut stream = session.stream(&c[1], None).await;
    session.result(&c[2], "resources/subscribe", json!({"uri": URI})).await;
    log.until("the stream's node watches the subscribed URI", &uri, |l| l == [(1, true)]).await;
    hears_update(&mut stream).await;
    session.result(&c[0], "resources/unsubscribe", json!({"uri": URI})).await;
    log.until("nobody watches it once unsubscribed", &uri, |l| l == [(1, true), (1, false)]).await;
    fleet.shutdown().await;
}
