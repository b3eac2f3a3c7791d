//! A fleet on a real broker: [`NODES`] nodes, each with its own handler and its own bus
//! connection, sharing one stream that no other test uses (a unique Redis stream key, or a
//! unique JetStream stream name and subject prefix).
//!
//! [`Fleet::start`] returns `None` and prints `skipped: <broker> not reachable at <url>` when
//! the broker is down, unless `MCP_FLEET_REQUIRE_BROKERS=1` (then it panics). The broker
//! processes are shared with other tests and never stopped: [`Fleet::cut_broker_connections`]
//! kills this fleet's own connections only.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use http::request::Parts;
use mcp_fleet_bus_nats::{NatsBus, NatsBusOptions};
use mcp_fleet_bus_redis::{RedisBus, RedisBusOptions};
use mcp_fleet_server::auth::AuthError;
use mcp_fleet_server::{HandlerOptions, Notifier, Principal};
use serde_json::{Value, json};

use crate::{ListenStream, McpClient, TestNode, WAIT, request, test_server};

/// Nodes per fleet.
pub const NODES: usize = 3;
/// How long reaching the broker may take before the test is skipped.
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);
/// The `_meta` key carrying `{"version": …}`, or `{"gap": true}` after a conservative invalidation.
pub const EVENT_META: &str = mcp_fleet_protocol::envelope::FLEET_EVENT_KEY;

/// A real broker the tests can run against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Broker {
    /// Redis streams (`MCP_FLEET_REDIS_URL`, default `redis://127.0.0.1:6379`).
    Redis,
    /// NATS JetStream (`MCP_FLEET_NATS_URL`, default `nats://127.0.0.1:4222`).
    Nats,
}

impl Broker {
    /// The broker's URL: the environment override, else the local default.
    pub fn url(self) -> String {
        let (var, default) = match self {
            Broker::Redis => ("MCP_FLEET_REDIS_URL", "redis://127.0.0.1:6379"),
            Broker::Nats => ("MCP_FLEET_NATS_URL", "nats://127.0.0.1:4222"),
        };
        std::env::var(var).unwrap_or_else(|_| default.to_owned())
    }

    fn name(self) -> &'static str {
        match self {
            Broker::Redis => "redis",
            Broker::Nats => "nats",
        }
    }
}

/// The broker's URL if it answers; otherwise print the skip and return `None` — or panic when
/// `MCP_FLEET_REQUIRE_BROKERS=1`.
pub async fn broker_or_skip(broker: Broker) -> Option<String> {
    let url = broker.url();
    let reachable = match broker {
        Broker::Redis => redis_admin(&url).await.is_some(),
        Broker::Nats => {
            tokio::time::timeout(PROBE_TIMEOUT, async_nats::connect(url.as_str())).await.is_ok_and(|r| r.is_ok())
        }
    };
    if reachable {
        return Some(url);
    }
    mcp_fleet_bus::testing::skip_unreachable(broker.name(), &url);
    None
}

async fn redis_admin(url: &str) -> Option<redis::aio::MultiplexedConnection> {
    let client = redis::Client::open(url).ok()?;
    tokio::time::timeout(PROBE_TIMEOUT, client.get_multiplexed_async_connection()).await.ok()?.ok()
}

/// The nodes' concrete buses, kept for fault injection and cleanup.
enum Buses {
    Redis { buses: Vec<RedisBus>, admin: redis::aio::MultiplexedConnection },
    Nats(Vec<NatsBus>),
}

/// [`NODES`] running nodes on one private stream of a real broker.
pub struct Fleet {
    /// The nodes, `node-0` … `node-2`.
    pub nodes: Vec<TestNode>,
    buses: Buses,
}

impl Fleet {
    /// Start the fleet, every node with `options()` plus its own bus connection; `None` when
    /// the broker is unreachable (see [`broker_or_skip`]).
    pub async fn start(broker: Broker, options: impl Fn() -> HandlerOptions) -> Option<Fleet> {
        Fleet::start_with(broker, options, test_server, |_, bus| bus).await
    }

    /// [`Fleet::start`] on Redis, every node's bus options passed through `tweak` first (a test
    /// splits the stream into shards, or routes by interest).
    pub async fn start_on_redis(
        tweak: impl Fn(&mut RedisBusOptions),
        options: impl Fn() -> HandlerOptions,
    ) -> Option<Fleet> {
        let url = broker_or_skip(Broker::Redis).await?;
        let unique = unique_name();
        let mut buses = Vec::new();
        for i in 0..NODES {
            let mut opts = RedisBusOptions::new(&url, &format!("node-{i}"))
                .expect("redis url")
                .with_stream_key(format!("mcp-fleet-test:{unique}"));
            tweak(&mut opts);
            buses.push(RedisBus::connect(opts).await.expect("redis bus"));
        }
        let buses = Buses::Redis { buses, admin: redis_admin(&url).await.expect("redis admin connection") };
        Some(Fleet::on(buses, options, test_server, |_, bus| bus).await)
    }

    /// [`Fleet::start`] on NATS JetStream, every node's bus options passed through `tweak`
    /// first (a test splits the bus into shards, or routes by interest).
    pub async fn start_on_nats(
        tweak: impl Fn(&mut NatsBusOptions),
        options: impl Fn() -> HandlerOptions,
    ) -> Option<Fleet> {
        let url = broker_or_skip(Broker::Nats).await?;
        let buses = nats_buses(&url, &unique_name(), tweak).await;
        Some(Fleet::on(buses, options, test_server, |_, bus| bus).await)
    }

    /// The bus counters of node `i` (events it consumed, published, …).
    pub fn bus_counters(&self, i: usize) -> Arc<mcp_fleet_bus::BusCounters> {
        use mcp_fleet_bus::ServerEventBus;
        match &self.buses {
            Buses::Redis { buses, .. } => buses[i].counters(),
            Buses::Nats(buses) => buses[i].counters(),
        }
    }

    /// [`Fleet::start`], every node serving `server()`, on its bus connection as `wrap` (given
    /// the node's index) returns it — a test wraps the bus of a node it will cut off.
    pub async fn start_with(
        broker: Broker,
        options: impl Fn() -> HandlerOptions,
        server: impl Fn() -> mcp_fleet_server::McpServer,
        wrap: impl Fn(usize, Arc<dyn mcp_fleet_bus::ServerEventBus>) -> Arc<dyn mcp_fleet_bus::ServerEventBus>,
    ) -> Option<Fleet> {
        let url = broker_or_skip(broker).await?;
        let unique = unique_name();
        let buses = match broker {
            Broker::Redis => {
                let mut buses = Vec::new();
                for i in 0..NODES {
                    let opts = RedisBusOptions::new(&url, &format!("node-{i}")).expect("redis url");
                    buses.push(
                        RedisBus::connect(opts.with_stream_key(format!("mcp-fleet-test:{unique}")))
                            .await
                            .expect("redis bus"),
                    );
                }
                Buses::Redis { buses, admin: redis_admin(&url).await.expect("redis admin connection") }
            }
            Broker::Nats => nats_buses(&url, &unique, |_| {}).await,
        };
        Some(Fleet::on(buses, options, server, wrap).await)
    }

    async fn on(
        buses: Buses,
        options: impl Fn() -> HandlerOptions,
        server: impl Fn() -> mcp_fleet_server::McpServer,
        wrap: impl Fn(usize, Arc<dyn mcp_fleet_bus::ServerEventBus>) -> Arc<dyn mcp_fleet_bus::ServerEventBus>,
    ) -> Fleet {
        let mut nodes = Vec::new();
        for (i, bus) in buses.dyn_buses().into_iter().enumerate() {
            let node_options = options().node_id(format!("node-{i}")).bus(wrap(i, bus));
            nodes.push(TestNode::start(server(), node_options).await);
        }
        Fleet { nodes, buses }
    }

    /// Open a listen stream on node `i` with `notifications` as its filter (as `tenant`, if
    /// given, for [`tenant_options`]) and read its acknowledgement.
    pub async fn listen(&self, i: usize, tenant: Option<&str>, notifications: Value) -> ListenStream {
        let client =
            if i.is_multiple_of(2) { McpClient::new(self.nodes[i].url()) } else { McpClient::h2c(self.nodes[i].url()) };
        let body = request(json!(format!("n{i}")), "subscriptions/listen", json!({"notifications": notifications}));
        let mut headers = McpClient::standard_headers(&body);
        headers.extend(tenant.map(|t| ("x-tenant".to_owned(), t.to_owned())));
        let resp = client.send_raw("POST", &headers, serde_json::to_vec(&body).expect("json")).await;
        let mut stream = ListenStream::from_response(resp);
        let ack = stream.next_message().await.expect("ack");
        assert_eq!(ack["method"], "notifications/subscriptions/acknowledged", "{ack}");
        stream
    }

    /// Every node's notifier.
    pub fn notifiers(&self) -> Vec<Notifier> {
        self.nodes.iter().map(|n| n.handler.notify()).collect()
    }

    /// Drop every node's consuming connection to the broker, as a network blip would. Redis:
    /// `CLIENT KILL ID` of the tailing connections, found by name in `CLIENT LIST`. NATS: a
    /// forced reconnect of each node's client. Returns how many connections were cut.
    pub async fn cut_broker_connections(&self) -> usize {
        match &self.buses {
            Buses::Redis { buses, admin } => {
                let mut admin = admin.clone();
                let list: String = redis::cmd("CLIENT").arg("LIST").query_async(&mut admin).await.expect("CLIENT LIST");
                let names: Vec<String> =
                    buses.iter().map(|b| format!("name={}", b.options().tail_client_name())).collect();
                let ids: Vec<&str> = list
                    .lines()
                    .filter(|line| line.split(' ').any(|field| names.iter().any(|n| n == field)))
                    .filter_map(|line| line.split(' ').find_map(|field| field.strip_prefix("id=")))
                    .collect();
                for id in &ids {
                    let _: i64 = redis::cmd("CLIENT")
                        .arg("KILL")
                        .arg("ID")
                        .arg(*id)
                        .query_async(&mut admin)
                        .await
                        .expect("CLIENT KILL");
                }
                ids.len()
            }
            Buses::Nats(buses) => {
                for bus in buses {
                    bus.client().force_reconnect().await.expect("force_reconnect");
                }
                buses.len()
            }
        }
    }

    /// Wait (bounded by [`WAIT`]) until every node reports its bus connected and reconnected at
    /// least `reconnects` times.
    pub async fn await_recovered(&self, reconnects: u64) {
        let recovered = || {
            let reconnected =
                self.buses.dyn_buses().iter().all(|b| b.counters().reconnects.load(Ordering::Relaxed) >= reconnects);
            reconnected && self.nodes.iter().all(|n| n.handler.bus_health().connected)
        };
        crate::eventually("every node's bus recovered", WAIT, || std::future::ready(recovered())).await;
    }

    /// Shut every node down and delete the fleet's stream from the broker.
    pub async fn shutdown(self) {
        for node in self.nodes {
            node.shutdown().await;
        }
        match self.buses {
            Buses::Redis { buses, mut admin } => {
                let key = &buses[0].options().stream_key;
                let _: i64 = redis::cmd("DEL")
                    .arg(key)
                    .arg(format!("{key}:version"))
                    .query_async(&mut admin)
                    .await
                    .expect("DEL");
            }
            Buses::Nats(buses) => {
                let js = async_nats::jetstream::new(buses[0].client().clone());
                let options = buses[0].options();
                for shard in 0..options.shards {
                    js.delete_stream(&options.shard(shard).stream_name).await.expect("delete stream");
                }
            }
        }
    }
}

/// [`NODES`] NATS buses on a stream and subject prefix named after `unique`, each node's options
/// passed through `tweak`.
async fn nats_buses(url: &str, unique: &str, tweak: impl Fn(&mut NatsBusOptions)) -> Buses {
    let mut buses = Vec::new();
    for i in 0..NODES {
        let mut opts = NatsBusOptions::new(url, &format!("node-{i}"));
        opts.stream_name = format!("MCP_FLEET_TEST_{}", unique.replace('-', "_"));
        opts.subject_prefix = format!("mcp-fleet-test.{unique}");
        tweak(&mut opts);
        buses.push(NatsBus::connect(opts).await.expect("nats bus"));
    }
    Buses::Nats(buses)
}

impl Buses {
    fn dyn_buses(&self) -> Vec<Arc<dyn mcp_fleet_bus::ServerEventBus>> {
        match self {
            Buses::Redis { buses, .. } => buses.iter().map(|b| Arc::new(b.clone()) as _).collect(),
            Buses::Nats(buses) => buses.iter().map(|b| Arc::new(b.clone()) as _).collect(),
        }
    }
}

/// A name no other test run uses (for stream keys, stream names, subject prefixes).
pub fn unique_name() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).expect("clock").as_nanos();
    format!("{}-{nanos}-{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed))
}

/// Handler options whose principal is `user@<t>` with scope `<t>` from the `x-tenant` header.
pub fn tenant_options() -> HandlerOptions {
    HandlerOptions::default().authenticator(tenant_from_header)
}

/// The `x-tenant` header as the principal's scope; no header is a 401.
pub fn tenant_from_header(parts: &Parts) -> Result<Principal, AuthError> {
    match parts.headers.get("x-tenant").and_then(|v| v.to_str().ok()) {
        Some(t) => Ok(Principal::new(format!("user@{t}"), Some(t.to_owned()))),
        None => Err(AuthError::unauthenticated("Bearer realm=\"test\"")),
    }
}

/// The three change methods a fault test publishes, and how to publish each.
pub const FOLLOWED: [&str; 3] =
    ["notifications/tools/list_changed", "notifications/prompts/list_changed", "notifications/resources/updated"];

/// The filter following every method of [`FOLLOWED`] (the resource is `test://a`).
pub fn follow_all() -> Value {
    json!({"toolsListChanged": true, "promptsListChanged": true, "resourceSubscriptions": ["test://a"]})
}

/// Publish one change of `FOLLOWED[k]` through `notifier`; the event as the bus accepted it.
pub async fn publish_kind(
    notifier: &Notifier,
    k: usize,
) -> Result<mcp_fleet_bus::EventEnvelope, mcp_fleet_server::ServerError> {
    match k {
        0 => notifier.tools_changed().await,
        1 => notifier.prompts_changed().await,
        _ => notifier.resource_updated("test://a").await,
    }
}

/// Publish round-robin over `notifiers` and [`FOLLOWED`] until `during` completes; failed
/// publishes are counted and retried. Returns the last successful version per method and the
/// number of failures.
pub async fn publish_during(
    notifiers: &[Notifier],
    during: impl Future<Output = ()>,
) -> (HashMap<&'static str, u64>, usize) {
    let mut last = HashMap::new();
    let mut failures = 0;
    tokio::pin!(during);
    for n in 0.. {
        let k = n % FOLLOWED.len();
        tokio::select! {
            () = &mut during => break,
            published = publish_kind(&notifiers[n % notifiers.len()], k) => match published {
                Ok(event) => _ = last.insert(FOLLOWED[k], event.version),
                Err(_) => failures += 1,
            },
        }
    }
    (last, failures)
}

/// Publish one change of every method in [`FOLLOWED`], retrying failures for up to [`WAIT`].
pub async fn publish_each(notifier: &Notifier) -> HashMap<&'static str, u64> {
    let mut out = HashMap::new();
    for (k, method) in FOLLOWED.iter().enumerate() {
        let deadline = tokio::time::Instant::now() + WAIT;
        let version = loop {
            match publish_kind(notifier, k).await {
                Ok(event) => break event.version,
                Err(err) => assert!(tokio::time::Instant::now() < deadline, "publish kept failing: {err}"),
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        out.insert(*method, version);
    }
    out
}

/// Read `stream` until, for every method in `wanted`, it has received a notification with a
/// version at least the wanted one — or, if `gaps_count`, a `{"gap": true}` one. Panics after
/// [`WAIT`].
pub async fn await_versions(stream: &mut ListenStream, wanted: &HashMap<&'static str, u64>, gaps_count: bool) {
    let mut missing: Vec<&str> = wanted.keys().copied().collect();
    let read = async {
        while !missing.is_empty() {
            let msg = stream.next_message().await.expect("stream open");
            let meta = &msg["params"]["_meta"][EVENT_META];
            let method = msg["method"].as_str().unwrap_or_default();
            let reached =
                meta["version"].as_u64().is_some_and(|v| v >= wanted.get(method).copied().unwrap_or(u64::MAX));
            if reached || (gaps_count && meta["gap"] == true) {
                missing.retain(|m| *m != method);
            }
        }
    };
    let outcome = tokio::time::timeout(WAIT, read).await;
    assert!(outcome.is_ok(), "no notification at or after {wanted:?} within {WAIT:?}");
}
