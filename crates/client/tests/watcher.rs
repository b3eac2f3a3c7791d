//! The client against a real in-process node: a paginated snapshot reads every page, and a
//! watcher re-lists when the catalog changes, after a reconnect, and keeps its snapshot when
//! the node is gone.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_fleet_client::{
    CatalogWatcher, ClientError, Endpoint, FetchOptions, ListKind, Observer, RequestTiming, RevisionSource, RpcClient,
    Snapshot, Transport, WatcherOptions, fetch_snapshot,
};
use mcp_fleet_server::types::{CallToolResult, Tool};
use mcp_fleet_server::{HandlerOptions, McpHandler, McpServer, create_mcp_handler};

use mcp_fleet_bus::testing::{WAIT, eventually};

fn server_with_tools(n: usize) -> McpServer {
    let server = McpServer::builder("client-test", "0.0.1").build();
    for i in 0..n {
        add_tool(&server, &format!("tool-{i}"));
    }
    server
}

fn add_tool(server: &McpServer, name: &str) -> mcp_fleet_server::catalog::EntryHandle {
    server.tool(Tool::new(name, "A test tool"), |_call| async move { Ok(CallToolResult::text("ok")) })
}

async fn serve(server: McpServer, page_size: usize) -> (McpHandler, String) {
    let options = HandlerOptions::default().page_size(page_size);
    let handler = create_mcp_handler(server, options).await.expect("handler");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://{}/mcp", listener.local_addr().expect("addr"));
    tokio::spawn({
        let handler = handler.clone();
        async move { handler.serve(listener).await }
    });
    (handler, url)
}

fn names(snapshot: &Snapshot) -> Vec<String> {
    snapshot.items.iter().map(|t| t["name"].as_str().unwrap_or_default().to_owned()).collect()
}

#[tokio::test]
async fn a_snapshot_reads_every_page_over_http1_and_h2c() {
    let (handler, url) = serve(server_with_tools(5), 2).await;
    for transport in [Transport::http1(), Transport::h2c()] {
        let rpc = RpcClient::new(transport, Endpoint::parse(&url).unwrap());
        let report = fetch_snapshot(&rpc, ListKind::Tools, FetchOptions::default()).await;
        let snapshot = report.outcome.expect("snapshot");
        assert_eq!(names(&snapshot), ["tool-0", "tool-1", "tool-2", "tool-3", "tool-4"]);
        assert_eq!((snapshot.pages, report.requests.len()), (3, 3));
        assert!(report.requests.iter().all(|r| r.ok));
        if snapshot.revision.source == RevisionSource::Computed {
            assert_eq!(snapshot.revision.value, mcp_fleet_client::snapshot::computed_revision(&snapshot.items));
        }
    }
    handler.shutdown().await;
}

/// What the test observer saw.
#[derive(Default)]
struct Seen {
    connects: Vec<bool>,
    installs: Vec<(u64, Vec<String>)>,
    failures: usize,
}

#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<Seen>>);

impl Observer for Recorder {
    fn on_connected(&mut self, _honoured: &mcp_fleet_client::SubscriptionFilter, reconnect: bool) {
        self.0.lock().expect("recorder").connects.push(reconnect);
    }

    fn on_fetch_finished(
        &mut self,
        _kind: ListKind,
        covers: u64,
        _requests: &[RequestTiming],
        outcome: Result<&Snapshot, &ClientError>,
    ) {
        let mut seen = self.0.lock().expect("recorder");
        match outcome {
            Ok(snapshot) => seen.installs.push((covers, names(snapshot))),
            Err(_) => seen.failures += 1,
        }
    }
}

fn start_watcher(
    listen_url: &str,
    requests_url: &str,
) -> (mcp_fleet_client::SnapshotReceiver, Recorder, tokio::sync::oneshot::Sender<()>) {
    let policy = mcp_fleet_client::ReconnectPolicy { initial: Duration::from_millis(20), ..Default::default() };
    let rpc = |url: &str| {
        RpcClient::new(Transport::http1(), Endpoint::parse(url).expect("url")).with_timeout(Duration::from_secs(2))
    };
    let mut options = WatcherOptions { relist: vec![ListKind::Tools], retry: policy, ..Default::default() };
    options.listener.reconnect = policy;
    let watcher = CatalogWatcher::new(rpc(listen_url), rpc(requests_url), options);
    let tools = watcher.snapshots(ListKind::Tools).expect("tools are followed");
    let recorder = Recorder::default();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(watcher.run(recorder.clone(), async {
        let _ = stopped.await;
    }));
    (tools, recorder, stop)
}

async fn until_len(tools: &mut mcp_fleet_client::SnapshotReceiver, n: usize) {
    tokio::time::timeout(WAIT, tools.wait_for(|s| s.as_ref().is_some_and(|s| s.items.len() == n)))
        .await
        .unwrap_or_else(|_| panic!("no snapshot of {n} items"))
        .expect("watcher running");
}

#[tokio::test]
async fn the_watcher_relists_on_change_and_after_reconnecting_to_a_restarted_node() {
    let server = server_with_tools(3);
    let (handler, url) = serve(server.clone(), 2).await;
    let (mut tools, recorder, _stop) = start_watcher(&url, &url);
    until_len(&mut tools, 3).await;
    add_tool(&server, "tool-new");
    until_len(&mut tools, 4).await;
    assert_eq!(
        recorder.0.lock().unwrap().installs.last().map(|(covers, _)| *covers),
        Some(2),
        "connect = 1, change = 2"
    );

    // The node restarts on the same port with another catalog: the watcher reconnects and,
    // since notifications sent meanwhile are lost, re-lists.
    handler.shutdown().await;
    let addr = url.trim_start_matches("http://").trim_end_matches("/mcp").to_owned();
    let listener = tokio::net::TcpListener::bind(&addr).await.expect("rebind the same port");
    let restarted = create_mcp_handler(server_with_tools(6), HandlerOptions::default()).await.expect("handler");
    tokio::spawn({
        let restarted = restarted.clone();
        async move { restarted.serve(listener).await }
    });
    until_len(&mut tools, 6).await;
    assert_eq!(recorder.0.lock().unwrap().connects, [false, true]);
    restarted.shutdown().await;
}

#[tokio::test]
async fn a_failed_relist_keeps_the_previous_snapshot() {
    // Listen on one node, list through another that then goes away.
    let listen_server = server_with_tools(1);
    let (listen_node, listen_url) = serve(listen_server.clone(), 100).await;
    let (list_node, list_url) = serve(server_with_tools(2), 100).await;
    let (tools, recorder, _stop) = start_watcher(&listen_url, &list_url);
    let mut seen = tools.clone();
    until_len(&mut seen, 2).await;
    list_node.shutdown().await;
    add_tool(&listen_server, "tool-new");
    eventually("a failed re-list", WAIT, async || recorder.0.lock().unwrap().failures > 0).await;
    assert_eq!(tools.borrow().as_ref().map(|s| s.items.len()), Some(2), "the previous snapshot is kept");
    listen_node.shutdown().await;
}

#[tokio::test]
async fn a_shared_h2c_connection_carries_many_clients_and_comes_back_after_the_node_restarts() {
    let (handler, url) = serve(server_with_tools(3), 2).await;
    let endpoint = Endpoint::parse(&url).unwrap();
    let shared = mcp_fleet_client::SharedH2::start(
        endpoint.authority(),
        mcp_fleet_client::ReconnectPolicy { initial: Duration::from_millis(20), ..Default::default() },
    );
    let clients: Vec<_> = (0..5).map(|_| RpcClient::new(Transport::Shared(shared.clone()), endpoint.clone())).collect();
    for rpc in &clients {
        let snapshot = fetch_snapshot(rpc, ListKind::Tools, FetchOptions::default()).await.outcome.unwrap();
        assert_eq!(snapshot.items.len(), 3);
    }

    handler.shutdown().await;
    let listener = tokio::net::TcpListener::bind(endpoint.authority()).await.expect("rebind the same port");
    let restarted = create_mcp_handler(server_with_tools(4), HandlerOptions::default()).await.expect("handler");
    tokio::spawn({
        let restarted = restarted.clone();
        async move { restarted.serve(listener).await }
    });
    // The connection task notices the closed connection and dials again; until it has,
    // requests fail fast instead of hanging.
    let mut items = 0;
    eventually("a fetch through the shared connection succeeds again", WAIT, async || {
        let fetched = fetch_snapshot(&clients[0], ListKind::Tools, FetchOptions::default()).await.outcome;
        fetched.map(|s| items = s.items.len()).is_ok()
    })
    .await;
    assert_eq!(items, 4, "the shared connection reconnected to the restarted node");
    restarted.shutdown().await;
}
