//! The rediscovery client against real in-process nodes, one behaviour per test: capabilities
//! first, refresh without notifications, errors by class, states a host can see, cancelled
//! reads on reconnect, re-read resources, validated lists, debounce, malformed frames, and
//! pagination across a changing catalog.

mod support;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_fleet_bus::testing::eventually;
use mcp_fleet_client::{
    CatalogWatcher, ClientError, FetchOptions, Freshness, ListKind, Observer, RefreshHandle, RequestTiming, Snapshot,
    StateReceiver, SubscriptionFilter, VerifyPolicy, WatcherOptions, fetch_snapshot,
};
use mcp_fleet_server::auth::AuthError;
use mcp_fleet_server::types::{CacheHint, CacheScope, Prompt, Resource, ResourceContents, ResourceTemplate};
use mcp_fleet_server::{HandlerOptions, McpServer, Principal, catalog::CachePolicy};
use serde_json::Value;
use support::*;

/// Counts what the watcher did.
#[derive(Clone, Default)]
struct Counter(Arc<Mutex<Seen>>);

#[derive(Default)]
struct Seen {
    connects: usize,
    started: Vec<(ListKind, u64)>,
    finished: Vec<(ListKind, u64, bool)>,
    malformed: usize,
}

impl Observer for Counter {
    fn on_connected(&mut self, _honoured: &SubscriptionFilter, _reconnect: bool) {
        self.0.lock().expect("counter").connects += 1;
    }
    fn on_malformed_frame(&mut self, _reason: &str) {
        self.0.lock().expect("counter").malformed += 1;
    }
    fn on_fetch_started(&mut self, kind: ListKind, covers: u64) {
        self.0.lock().expect("counter").started.push((kind, covers));
    }
    fn on_fetch_finished(
        &mut self,
        kind: ListKind,
        covers: u64,
        _: &[RequestTiming],
        o: Result<&Snapshot, &ClientError>,
    ) {
        self.0.lock().expect("counter").finished.push((kind, covers, o.is_ok()));
    }
}

/// A watcher of tools (and whatever else `options` re-lists) running against `url`.
struct Watching {
    tools: StateReceiver,
    counter: Counter,
    refresh: RefreshHandle,
    running: Running,
}

/// [`options`] with periodic verification every 50 ms (the bound below a `ttlMs` of 0).
fn polling(lists: &[ListKind]) -> WatcherOptions {
    WatcherOptions {
        verify: VerifyPolicy { min: Duration::from_millis(50), ..VerifyPolicy::default() },
        ..options(lists)
    }
}

/// [`options`] re-listing tools only.
fn options_for_tools() -> WatcherOptions {
    options(&[ListKind::Tools])
}

fn watch_tools(url: &str, options: WatcherOptions) -> Watching {
    let watcher = CatalogWatcher::new(rpc(url), rpc(url), options);
    let tools = watcher.states(ListKind::Tools).expect("tools are re-listed");
    let refresh = watcher.refresh_handle();
    let counter = Counter::default();
    let running = spawn(watcher, counter.clone());
    Watching { tools, counter, refresh, running }
}

impl Counter {
    fn get<T>(&self, f: impl FnOnce(&Seen) -> T) -> T {
        f(&self.0.lock().expect("counter"))
    }
}

#[tokio::test]
async fn a_node_without_list_changed_is_polled_and_never_listened_to() {
    let (server, node, front) = fronted(2).await;
    front.rewrite(without_list_changed);
    let mut w = watch_tools(&front.url, polling(&[ListKind::Tools]));
    until_fresh(&mut w.tools, 2).await;
    add_tool(&server, "tool-new");
    until_fresh(&mut w.tools, 3).await;
    assert_eq!(front.count("subscriptions/listen"), 0, "nothing announced: no listen stream to wait on");
    assert_eq!(front.count("server/discover"), 1);
    node.shutdown().await;
}

#[tokio::test]
async fn capabilities_are_read_again_and_a_newly_announced_list_is_listened_to() {
    let cache = CachePolicy { discover: CacheHint { ttl_ms: 50, scope: CacheScope::Public }, ..CachePolicy::default() };
    let (server, node, front) = fronted_with(cache).await;
    let announced = Arc::new(AtomicBool::new(false));
    front.rewrite({
        let announced = announced.clone();
        move |method, answer| {
            if !announced.load(Ordering::SeqCst) {
                without_list_changed(method, answer);
            }
        }
    });
    let mut w = watch_tools(&front.url, polling(&[ListKind::Tools]));
    until_fresh(&mut w.tools, 1).await;
    eventually("a second server/discover", WAIT, async || front.count("server/discover") >= 2).await;
    assert_eq!(front.count("subscriptions/listen"), 0);
    announced.store(true, Ordering::SeqCst);
    eventually("the listen stream for the newly announced list", WAIT, async || w.counter.get(|s| s.connects) == 1)
        .await;
    add_tool(&server, "tool-new");
    until_fresh(&mut w.tools, 2).await;
    node.shutdown().await;
}

#[tokio::test]
async fn a_server_without_subscriptions_listen_changes_the_client_to_polling() {
    let (server, node, front) = fronted(1).await;
    front.remove_method("subscriptions/listen");
    let mut w = watch_tools(&front.url, polling(&[ListKind::Tools]));
    until_fresh(&mut w.tools, 1).await;
    add_tool(&server, "tool-new");
    until_fresh(&mut w.tools, 2).await;
    assert_eq!(front.count("subscriptions/listen"), 1, "-32601 is not retried: the mode changes");
    node.shutdown().await;
}

#[tokio::test]
async fn a_list_the_ack_does_not_honour_is_polled_not_waited_for() {
    let (server, node, front) = fronted(1).await;
    front.ack_honours_nothing();
    let mut w = watch_tools(&front.url, polling(&[ListKind::Tools]));
    until_fresh(&mut w.tools, 1).await;
    eventually("the listen stream", WAIT, async || w.counter.get(|s| s.connects) == 1).await;
    add_tool(&server, "tool-new");
    until_fresh(&mut w.tools, 2).await;
    node.shutdown().await;
}

#[tokio::test]
async fn a_list_whose_method_is_gone_is_shown_unavailable_and_not_retried() {
    let (_, node, front) = fronted(1).await;
    front.remove_method("prompts/list");
    let watcher = CatalogWatcher::new(rpc(&front.url), rpc(&front.url), options(&[ListKind::Tools, ListKind::Prompts]));
    let (mut tools, mut prompts) =
        (watcher.states(ListKind::Tools).unwrap(), watcher.states(ListKind::Prompts).unwrap());
    let refresh = watcher.refresh_handle();
    let counter = Counter::default();
    let _running = spawn(watcher, counter.clone());
    until_fresh(&mut tools, 1).await;
    let gone = until(&mut prompts, "prompts unavailable", |s| {
        s.freshness == Freshness::Unavailable && s.reason.as_deref() != Some("not fetched yet")
    })
    .await;
    assert_eq!(gone.reason.as_deref(), Some("method not found: prompts/list"));
    let tools_reads = front.count("tools/list");
    assert!(refresh.refresh());
    eventually("the refresh's tools/list", WAIT, async || front.count("tools/list") > tools_reads).await;
    until_fresh(&mut tools, 1).await;
    assert_eq!(front.count("prompts/list"), 1, "a gone method is not asked again");
    node.shutdown().await;
}

#[tokio::test]
async fn refresh_rereads_without_a_notification() {
    let (server, node, front) = fronted(1).await;
    front.rewrite(without_list_changed);
    let mut w = watch_tools(&front.url, options(&[ListKind::Tools]));
    until_fresh(&mut w.tools, 1).await;
    add_tool(&server, "tool-new");
    assert_eq!(front.count("tools/list"), 1, "no notification, no verification: nothing re-reads by itself");
    assert!(w.refresh.refresh_list(ListKind::Tools));
    until_fresh(&mut w.tools, 2).await;
    node.shutdown().await;
}

#[tokio::test]
async fn periodic_verification_follows_the_servers_ttl_and_wakes_no_one_when_nothing_changed() {
    let cache = CachePolicy { lists: CacheHint { ttl_ms: 60, scope: CacheScope::Public }, ..CachePolicy::default() };
    let (server, node, front) = fronted_with(cache).await;
    front.rewrite(without_list_changed);
    let mut options = options(&[ListKind::Tools]);
    options.verify =
        VerifyPolicy { min: Duration::from_millis(10), max: Duration::from_secs(60), notified_lists: false };
    let mut w = watch_tools(&front.url, options);
    let first = until_fresh(&mut w.tools, 1).await;
    assert_eq!(first.snapshot.as_ref().and_then(|s| s.ttl_ms), Some(60));
    assert_eq!(first.snapshot.as_ref().and_then(|s| s.cache_scope), Some(CacheScope::Public));
    w.tools.mark_unchanged();
    eventually("three verifications", WAIT, async || front.count("tools/list") >= 4).await;
    assert!(!w.tools.has_changed().unwrap(), "same revision: the host is not woken");
    assert!(w.tools.borrow().fetched_at > first.fetched_at, "but the confirmation time moves");
    add_tool(&server, "tool-1");
    until_fresh(&mut w.tools, 2).await;
    node.shutdown().await;
}

#[tokio::test]
async fn a_node_killed_and_restarted_goes_unavailable_then_fresh() {
    let node = handler(server_with_tools(2), 100).await;
    let url = serve(&node).await;
    let mut w = watch_tools(&url, options(&[ListKind::Tools]));
    let fresh = until_fresh(&mut w.tools, 2).await;
    node.shutdown().await;
    let down = until(&mut w.tools, "unavailable", |s| s.freshness == Freshness::Unavailable).await;
    assert_eq!(down.revision(), fresh.revision(), "the last snapshot is kept");
    assert!(down.reason.is_some());
    let addr = url.trim_start_matches("http://").trim_end_matches("/mcp").to_owned();
    let listener = tokio::net::TcpListener::bind(&addr).await.expect("rebind the same port");
    let restarted = handler(server_with_tools(3), 100).await;
    serve_on(listener, &restarted);
    let back = until_fresh(&mut w.tools, 3).await;
    assert_eq!(back.reason, None);
    restarted.shutdown().await;
}

#[tokio::test]
async fn a_reconnect_that_finds_the_same_revision_wakes_no_host() {
    // The node ends each listen stream gracefully after 200 ms (checked at each 50 ms
    // keep-alive); the client reconnects and
    // re-verifies every time.
    let options = HandlerOptions::default()
        .max_stream_lifetime(Some(Duration::from_millis(200)))
        .keepalive(Duration::from_millis(50));
    let node = handler_with(server_with_tools(1), options).await;
    let url = serve(&node).await;
    let mut w = watch_tools(&url, options_for_tools());
    until_fresh(&mut w.tools, 1).await;
    w.tools.mark_unchanged();
    eventually("two reconnects", WAIT, async || w.counter.get(|s| s.connects) >= 3).await;
    eventually("their re-reads", WAIT, async || w.counter.get(|s| s.finished.len()) >= 3).await;
    assert!(!w.tools.has_changed().unwrap(), "same revision after each reconnect: nobody woken");
    node.shutdown().await;
}

#[tokio::test]
async fn a_token_that_expires_mid_run_stops_the_watcher_and_surfaces_unauthorized() {
    let valid = Arc::new(AtomicBool::new(true));
    let checked = Arc::new(AtomicUsize::new(0));
    let auth = {
        let (valid, checked) = (valid.clone(), checked.clone());
        move |_parts: &http::request::Parts| {
            checked.fetch_add(1, Ordering::SeqCst);
            if valid.load(Ordering::SeqCst) {
                Ok(Principal::new("alice", None))
            } else {
                Err(AuthError::unauthenticated("Bearer error=\"invalid_token\""))
            }
        }
    };
    let server = server_with_tools(1);
    let node = handler_with(server.clone(), HandlerOptions::default().authenticator(auth)).await;
    let url = serve(&node).await;
    let mut w = watch_tools(&url, options(&[ListKind::Tools]));
    until_fresh(&mut w.tools, 1).await;
    valid.store(false, Ordering::SeqCst);
    add_tool(&server, "tool-new");
    let refused = until(&mut w.tools, "unauthorized", |s| s.reason.as_deref() == Some("unauthorized")).await;
    assert_eq!(refused.freshness, Freshness::Unavailable);
    assert_eq!(refused.snapshot.map(|s| s.items.len()), Some(1), "the last snapshot stays readable");
    tokio::time::timeout(WAIT, w.running.task).await.expect("the watcher stops").expect("no panic");
    let after = checked.load(Ordering::SeqCst);
    valid.store(true, Ordering::SeqCst);
    add_tool(&server, "tool-later");
    node.notify().tools_changed().await.expect("notify");
    assert_eq!(checked.load(Ordering::SeqCst), after, "nothing is retried with refused credentials");
    node.shutdown().await;
}

#[tokio::test]
async fn a_reconnect_cancels_the_read_begun_on_the_old_connection() {
    let (server, node, front) = fronted(1).await;
    let mut w = watch_tools(&front.url, options(&[ListKind::Tools]));
    until_fresh(&mut w.tools, 1).await;
    // The next read hangs on the node; the listen stream then breaks and reconnects.
    let _held = front.hold("tools/list");
    let reads = front.count("tools/list");
    add_tool(&server, "tool-new");
    eventually("the held read", WAIT, async || front.count("tools/list") > reads).await;
    front.release_all();
    front.cut_streams();
    // Without cancelling, the watcher would wait for the held read (2 s timeout) first.
    let fresh = tokio::time::timeout(Duration::from_millis(1500), until_fresh(&mut w.tools, 2)).await;
    assert!(fresh.is_ok(), "the reconnect read ran without waiting for the held one");
    let (started, finished) = w.counter.get(|s| (s.started.clone(), s.finished.clone()));
    let held_covers = started[1].1;
    assert!(finished.iter().all(|(_, covers, _)| *covers != held_covers), "the held read never reports: {finished:?}");
    node.shutdown().await;
}

#[tokio::test]
async fn resources_updated_rereads_the_uri_one_read_at_a_time() {
    let server = McpServer::builder("client-test", "0.0.1").build();
    let version = Arc::new(AtomicUsize::new(0));
    server.resource(Resource::new("test://a", "a", "Resource a", "text/plain"), {
        let version = version.clone();
        move |read| {
            let v = version.load(Ordering::SeqCst);
            async move { Ok(vec![ResourceContents::text(read.uri, "text/plain", format!("v{v}"))]) }
        }
    });
    let node = handler(server, 100).await;
    let front = Front::start(&node).await;
    let mut options = options(&[]);
    options.filter.resource_subscriptions.push("test://a".into());
    let watcher = CatalogWatcher::new(rpc(&front.url), rpc(&front.url), options);
    let mut contents = watcher.resource("test://a").expect("subscribed");
    let counter = Counter::default();
    let _running = spawn(watcher, counter.clone());
    let text = |v: &Option<Arc<Value>>| v.as_ref().and_then(|c| c["contents"][0]["text"].as_str().map(str::to_owned));
    tokio::time::timeout(WAIT, contents.wait_for(|c| text(c).as_deref() == Some("v0"))).await.unwrap().unwrap();
    eventually("the listen stream", WAIT, async || counter.get(|s| s.connects) == 1).await;
    let reads = front.count("resources/read");
    for v in 1..=20 {
        version.store(v, Ordering::SeqCst);
        node.notify().resource_updated("test://a").await.expect("notify");
    }
    tokio::time::timeout(WAIT, contents.wait_for(|c| text(c).as_deref() == Some("v20"))).await.unwrap().unwrap();
    let rereads = front.count("resources/read") - reads;
    assert!((1..20).contains(&rereads), "20 updates coalesced into {rereads} reads");
    node.shutdown().await;
}

#[tokio::test]
async fn an_invalid_list_does_not_replace_the_snapshot() {
    let (server, node, front) = fronted(2).await;
    let mut w = watch_tools(&front.url, options(&[ListKind::Tools]));
    let good = until_fresh(&mut w.tools, 2).await;
    // From now on the node's pages repeat their first tool's name.
    front.rewrite(|method, answer| {
        if method == "tools/list"
            && let Some(tools) = answer["result"]["tools"].as_array_mut()
            && let Some(first) = tools.first().cloned()
        {
            tools.push(first);
        }
    });
    add_tool(&server, "tool-new");
    let refused = until(&mut w.tools, "stale", |s| s.freshness == Freshness::Stale).await;
    assert!(refused.reason.as_deref().is_some_and(|r| r.contains("appears twice")), "{:?}", refused.reason);
    assert_eq!(refused.revision(), good.revision(), "the valid snapshot is kept");
    node.shutdown().await;
}

#[tokio::test]
async fn debounce_collapses_a_burst_of_changes_into_one_read() {
    let server = server_with_tools(1);
    let node = handler(server.clone(), 100).await;
    let url = serve(&node).await;
    let mut options = options(&[ListKind::Tools]);
    options.debounce = Some(Duration::from_millis(300));
    let mut w = watch_tools(&url, options);
    until_fresh(&mut w.tools, 1).await;
    let before = w.counter.get(|s| s.started.len());
    for i in 0..10 {
        add_tool(&server, &format!("burst-{i}"));
    }
    until_fresh(&mut w.tools, 11).await;
    assert_eq!(w.counter.get(|s| s.started.len()) - before, 1, "ten changes, one read");
    node.shutdown().await;
}

#[tokio::test]
async fn a_malformed_frame_is_dropped_and_counted_and_the_stream_stays() {
    let (server, node, front) = fronted(1).await;
    front.garbage_after_ack();
    let mut w = watch_tools(&front.url, options(&[ListKind::Tools]));
    until_fresh(&mut w.tools, 1).await;
    eventually("the malformed frame", WAIT, async || w.counter.get(|s| s.malformed) == 1).await;
    add_tool(&server, "tool-new");
    until_fresh(&mut w.tools, 2).await;
    assert_eq!((w.counter.get(|s| s.connects), front.count("subscriptions/listen")), (1, 1), "no reconnect");
    node.shutdown().await;
}

#[tokio::test]
async fn a_catalog_of_five_pages_changed_during_paging_is_read_again_from_the_first_page() {
    let server = server_with_tools(10);
    let node = handler(server.clone(), 2).await;
    let front = Front::start(&node).await;
    let pages = Arc::new(AtomicUsize::new(0));
    front.hook({
        let (server, pages) = (server.clone(), pages.clone());
        move |method, _| {
            if method == "tools/list" && pages.fetch_add(1, Ordering::SeqCst) == 2 {
                add_tool(&server, "tool-mid-paging");
            }
        }
    });
    let report = fetch_snapshot(&rpc(&front.url), ListKind::Tools, FetchOptions::default()).await;
    let snapshot = report.outcome.expect("a consistent snapshot");
    assert_eq!(snapshot.items.len(), 11);
    assert_eq!(snapshot.pages, 6);
    assert_eq!(report.requests.len(), 3 + 6, "three pages, the stale cursor refused, then all six again");

    // A catalog that changes on every page is given up as unstable, and the watcher keeps
    // what it had.
    front.hook({
        let server = server.clone();
        let n = AtomicUsize::new(0);
        move |method, _| {
            if method == "tools/list" {
                add_tool(&server, &format!("churn-{}", n.fetch_add(1, Ordering::SeqCst)));
            }
        }
    });
    let options = FetchOptions { max_restarts: 2, ..FetchOptions::default() };
    let report = fetch_snapshot(&rpc(&front.url), ListKind::Tools, options).await;
    assert!(matches!(report.outcome, Err(ClientError::Unstable { restarts: 2, .. })), "{:?}", report.outcome);
    node.shutdown().await;
}

#[tokio::test]
async fn pages_naming_another_revision_restart_the_read() {
    let node = handler(server_with_tools(5), 2).await;
    let front = Front::start(&node).await;
    let bumped = Arc::new(AtomicBool::new(false));
    front.rewrite({
        let bumped = bumped.clone();
        move |method, answer| {
            let last_page = answer["result"]["nextCursor"].is_null();
            if method == "tools/list" && last_page && !bumped.swap(true, Ordering::SeqCst) {
                answer["result"]["_meta"]["dev.mcp-fleet/catalog"]["revision"] = "another".into();
            }
        }
    });
    let report = fetch_snapshot(&rpc(&front.url), ListKind::Tools, FetchOptions::default()).await;
    let snapshot = report.outcome.expect("a consistent snapshot");
    assert_eq!((snapshot.items.len(), snapshot.pages, report.requests.len()), (5, 3, 6), "read again from page 1");
    assert_ne!(snapshot.revision.value, "another");
    node.shutdown().await;
}

#[tokio::test]
async fn a_notification_storm_ends_fresh_at_the_last_revision_with_fewer_reads_than_changes() {
    let (server, node, front) = fronted(1).await;
    let mut w = watch_tools(&front.url, options(&[ListKind::Tools]));
    until_fresh(&mut w.tools, 1).await;
    let reads = front.count("tools/list");
    for i in 0..200 {
        add_tool(&server, &format!("storm-{i}"));
    }
    until_fresh(&mut w.tools, 201).await;
    let rereads = front.count("tools/list") - reads;
    assert!(rereads < 200, "single-flight: {rereads} reads for 200 changes");
    node.shutdown().await;
}

#[tokio::test]
async fn prompts_resources_and_templates_are_watched_like_tools() {
    let server = server_with_tools(1);
    let prompt = |name: &str| Prompt { name: name.into(), ..Prompt::default() };
    let read = |read: mcp_fleet_server::catalog::ResourceRead| async move {
        Ok(vec![ResourceContents::text(read.uri, "text/plain", "x")])
    };
    let template = |t: &str| ResourceTemplate { uri_template: t.into(), name: t.into(), ..ResourceTemplate::default() };
    server.prompt(prompt("p0"), |_g| async { Ok(mcp_fleet_server::types::GetPromptResult::default()) });
    server.resource(Resource::new("test://r0", "r0", "r0", "text/plain"), read);
    server.resource_template(template("test://t0/{id}"), read).expect("template");
    let node = handler(server.clone(), 100).await;
    let url = serve(&node).await;
    let all = [ListKind::Tools, ListKind::Prompts, ListKind::Resources, ListKind::ResourceTemplates];
    let watcher = CatalogWatcher::new(rpc(&url), rpc(&url), options(&all));
    let mut states: Vec<_> = all.iter().map(|k| watcher.states(*k).unwrap()).collect();
    let _running = spawn(watcher, Counter::default());
    for state in &mut states {
        until_fresh(state, 1).await;
    }
    server.prompt(prompt("p1"), |_g| async { Ok(mcp_fleet_server::types::GetPromptResult::default()) });
    server.resource(Resource::new("test://r1", "r1", "r1", "text/plain"), read);
    server.resource_template(template("test://t1/{id}"), read).expect("template");
    for state in &mut states[1..] {
        until_fresh(state, 2).await;
    }
    node.shutdown().await;
}

#[tokio::test]
async fn the_2025_era_runs_the_same_state_machine_over_a_session_and_its_get_stream() {
    let server = server_with_tools(3);
    let node = handler(server.clone(), 2).await;
    let front = Front::start(&node).await;
    let rpc = rpc(&front.url).era_2025();
    let watcher = CatalogWatcher::new(rpc.clone(), rpc, options_for_tools());
    let mut tools = watcher.states(ListKind::Tools).expect("tools are re-listed");
    let _running = spawn(watcher, Counter::default());
    until_fresh(&mut tools, 3).await;
    add_tool(&server, "tool-new");
    until_fresh(&mut tools, 4).await;
    assert_eq!(front.count("initialize"), 1, "one session for discovery, lists and the stream");
    assert_eq!((front.count("server/discover"), front.count("subscriptions/listen")), (0, 0), "no 2026 methods");
    assert!(front.count("") >= 1, "the GET stream (a request without a JSON-RPC body)");
    node.shutdown().await;
}

#[tokio::test]
async fn a_2025_client_moved_to_another_transport_stays_in_its_session() {
    let (_, node, front) = fronted(2).await;
    let streams = rpc(&front.url).era_2025();
    let requests = streams.clone().with_transport(mcp_fleet_client::Transport::http1());
    fetch_snapshot(&requests, ListKind::Tools, FetchOptions::default()).await.outcome.expect("snapshot");
    fetch_snapshot(&streams, ListKind::Tools, FetchOptions::default()).await.outcome.expect("snapshot");
    assert_eq!(front.count("initialize"), 1, "both transports speak in one session");
    assert_eq!(streams.session().and_then(|s| s.id()), requests.session().and_then(|s| s.id()));
    node.shutdown().await;
}

#[tokio::test]
async fn a_2025_session_the_server_ended_is_started_again() {
    let (_, node, front) = fronted(2).await;
    let rpc = rpc(&front.url).era_2025();
    let first = fetch_snapshot(&rpc, ListKind::Tools, FetchOptions::default()).await.outcome.expect("snapshot");
    let session = rpc.session().and_then(|s| s.id()).expect("a session");
    let end = http::Request::delete(&front.url)
        .header(mcp_fleet_client::session::SESSION_HEADER, &session)
        .header("mcp-protocol-version", mcp_fleet_client::session::LEGACY_VERSION)
        .body(http_body_util::Full::new(bytes::Bytes::new()))
        .expect("request");
    let ended = mcp_fleet_client::Transport::http1().send(end).await.expect("DELETE");
    assert!(ended.status().is_success(), "{}", ended.status());
    let again = fetch_snapshot(&rpc, ListKind::Tools, FetchOptions::default()).await.outcome.expect("snapshot");
    assert_eq!(again.items, first.items);
    assert_eq!(front.count("initialize"), 2, "the ended session was replaced");
    assert_ne!(rpc.session().and_then(|s| s.id()), Some(session));
    node.shutdown().await;
}
