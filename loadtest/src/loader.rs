//! [`Loader`]: one process's share of the streams — it opens them (bounded concurrency),
//! runs a [`CatalogWatcher`] per simulated client with a [`Probe`], learns of publishes,
//! reports [`LiveStats`] and, at the end, a [`LoaderResult`].
//!
//! A simulated client is a [`CatalogWatcher`]: over a 2026 listen stream or, with `--era 2025
//! --relist`, over a 2025 session and its GET stream ([`RpcClient::era_2025`]) — the same
//! state machine either way. A 2025 client that only listens (no `--relist`) is a
//! [`LegacyClient`], which resumes its GET stream with `Last-Event-ID` (the watcher's GET
//! stream does not: it re-lists after a reconnect instead, and there is nothing to re-list
//! without `--relist`). The same [`Probe`] measures all of them.
//!
//! Connections: over HTTP/1.1 every listen stream has its own connection, and re-lists go
//! through one pooled client per node, at most `--relist-concurrency` at a time (so a storm
//! cannot exhaust file descriptors); a [`LegacyClient`]'s handshake POSTs go through that
//! pool too (bounded by `--open-concurrency`: the open permit is held until the GET stream is
//! open), while a re-listing 2025 client initializes its session and subscribes on its
//! stream's connection, then re-lists in that session through the pool. Over h2c,
//! `--h2-streams-per-conn` clients share one [`SharedH2`] connection for their listen
//! streams and their re-lists, like hosts behind an HTTP/2 proxy.

use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use hdrhistogram::Histogram;
use mcp_fleet_client::{
    CatalogWatcher, Endpoint, ListKind, ReconnectPolicy, RequestTiming, RpcClient, SharedH2, SubscriptionFilter,
    Transport, VerifyPolicy, WatcherOptions,
};
use tokio::sync::{Semaphore, watch};
use tokio::task::JoinHandle;

use crate::args::{Args, Era};
use crate::clock::Clock;
use crate::convergence::ClientLists;
use crate::deliveries::{Deliveries, UNSTAMPED_HORIZON_US};
use crate::error::LoadtestError;
use crate::hist::{encode, new_histogram, record};
use crate::legacy::{LegacyClient, LegacyOptions};
use crate::plan::{Key, Plan, tenant_name, uri};
use crate::probe::Probe;
use crate::results::{EventConvergence, LiveStats, LoaderResult, PhaseRequests};
use crate::verify::{FINAL, PublishIndex, PublishRecord, StreamVerifier};

/// One simulated client's measurements.
#[derive(Debug)]
pub struct Slot {
    /// Its stream's loss verifier.
    pub verifier: StreamVerifier,
    /// Its re-listed lists.
    pub lists: ClientLists,
    /// Its tenant.
    pub tenant: Option<u32>,
}

/// Loader-wide counters (relaxed atomics: read for progress, exact at the end).
#[derive(Debug, Default)]
pub struct Counters {
    /// Clients ready.
    pub ready: AtomicU64,
    /// Listen attempts that failed before a first acknowledgement.
    pub open_failures: AtomicU64,
    /// Frames received.
    pub frames: AtomicU64,
    /// Reconnected streams.
    pub reconnects: AtomicU64,
    /// Acknowledgements that did not honour a followed list.
    pub unhonoured: AtomicU64,
}

/// Request figures of both phases, with their histograms.
#[derive(Debug)]
struct RequestFigures {
    phase: PhaseRequests,
    latency: Histogram<u64>,
    fetch_latency: Histogram<u64>,
}

impl Default for RequestFigures {
    fn default() -> Self {
        RequestFigures { phase: PhaseRequests::default(), latency: new_histogram(), fetch_latency: new_histogram() }
    }
}

impl RequestFigures {
    fn finish(&self) -> PhaseRequests {
        PhaseRequests {
            latency: encode(&self.latency),
            fetch_latency: encode(&self.fetch_latency),
            ..self.phase.clone()
        }
    }
}

/// State shared by a loader's client tasks. Every lock is held for a few field updates only,
/// never across an `.await`.
#[derive(Debug)]
pub struct LoaderShared {
    /// The run's clock.
    pub clock: Clock,
    /// Loader-wide counters.
    pub counters: Counters,
    slots: Vec<Mutex<Slot>>,
    deliveries: Mutex<Deliveries>,
    publishes: Mutex<(PublishIndex, Vec<PublishRecord>)>,
    /// `[initial, relist]`: which one a request counts in depends on `events_started`.
    requests: Mutex<[RequestFigures; 2]>,
    events_started: AtomicBool,
    open_latency: Mutex<Histogram<u64>>,
    disconnects: Mutex<BTreeMap<String, u64>>,
}

/// Lock `m`, recovering the data if a panicking thread poisoned it (every update is a few
/// plain field writes, so the data stays consistent).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl LoaderShared {
    /// Run `f` on local slot `slot`.
    pub fn with_slot<R>(&self, slot: usize, f: impl FnOnce(&mut Slot) -> R) -> R {
        f(&mut lock(&self.slots[slot]))
    }

    /// A change frame arrived on a stream of `tenant`.
    pub fn on_delivery(&self, epoch: Option<u64>, version: u64, at_us: u64, tenant: Option<u32>) {
        lock(&self.deliveries).on_frame(epoch, version, at_us, tenant);
    }

    /// A frame without the fleet's stamp arrived on local slot `slot` (of `tenant`).
    pub fn on_unstamped(&self, slot: usize, key: Key, at_us: u64, tenant: Option<u32>) {
        lock(&self.deliveries).on_unstamped(slot, key, at_us, tenant);
    }

    /// A stream's first acknowledgement took `took` after its open permit.
    pub fn record_open(&self, took: Duration) {
        record(&mut lock(&self.open_latency), took.as_micros() as u64);
    }

    /// A listen stream ended (`kind` of error, or `graceful`).
    pub fn count_disconnect(&self, kind: &str) {
        *lock(&self.disconnects).entry(kind.to_owned()).or_default() += 1;
    }

    /// A fetch ended at `at_us` after `took`, with its page requests, failed with
    /// `error_kind` or not.
    pub fn record_fetch(&self, requests: &[RequestTiming], took: Duration, error_kind: Option<&str>, at_us: u64) {
        let phase = usize::from(self.events_started.load(Ordering::Relaxed));
        let mut all = lock(&self.requests);
        let figures = &mut all[phase];
        let p = &mut figures.phase;
        let spent: u64 = requests.iter().map(|r| r.duration.as_micros() as u64).sum();
        let started = at_us.saturating_sub(took.as_micros() as u64);
        p.first_us = if p.first_us == 0 { started } else { p.first_us.min(started) };
        p.last_us = p.last_us.max(at_us);
        p.fetches += 1;
        p.requests += requests.len() as u64;
        p.errors += requests.iter().filter(|r| !r.ok).count() as u64;
        if let Some(kind) = error_kind {
            p.fetch_errors += 1;
            *p.errors_by_kind.entry(kind.to_owned()).or_default() += 1;
        }
        for r in requests {
            record(&mut figures.latency, r.duration.as_micros() as u64);
        }
        record(&mut figures.fetch_latency, took.as_micros().max(u128::from(spent)) as u64);
    }
}

/// What drives one simulated client.
enum SimulatedClient {
    /// 2026: a listen stream (and re-lists, with `--relist`); 2025 with `--relist`: a
    /// session, its GET stream and its re-lists.
    Listen(CatalogWatcher),
    /// 2025 without `--relist`: a session and its resumed GET stream.
    Session(LegacyClient),
}

/// One process's share of the streams.
#[derive(Debug)]
pub struct Loader {
    shared: Arc<LoaderShared>,
    stop: watch::Sender<bool>,
    tasks: Vec<JoinHandle<()>>,
}

/// How long `finish` waits for the client tasks to stop.
const STOP_TIMEOUT: Duration = Duration::from_secs(10);

impl Loader {
    /// Start the clients of streams `range` (global indices) of `plan`.
    pub fn start(args: &Args, plan: &Plan, range: Range<usize>, clock: Clock) -> Result<Loader, LoadtestError> {
        let lists = if args.relist { plan.lists() } else { Vec::new() };
        let slots = range
            .clone()
            .map(|i| {
                let spec = plan.stream(i);
                Mutex::new(Slot {
                    verifier: StreamVerifier::new(i, spec.tenant, &spec.keys),
                    lists: ClientLists::new(&lists),
                    tenant: spec.tenant,
                })
            })
            .collect();
        let shared = Arc::new(LoaderShared {
            clock,
            counters: Counters::default(),
            slots,
            deliveries: Mutex::new(Deliveries::new()),
            publishes: Mutex::new((PublishIndex::new(), Vec::new())),
            requests: Mutex::new([RequestFigures::default(), RequestFigures::default()]),
            events_started: AtomicBool::new(false),
            open_latency: Mutex::new(new_histogram()),
            disconnects: Mutex::new(BTreeMap::new()),
        });
        let (stop, _) = watch::channel(false);
        let mut connections = Connections::new(args, plan)?;
        let open_gate = Arc::new(Semaphore::new(args.open_concurrency.max(1)));
        let idle_timeout = (args.idle_timeout_secs > 0).then(|| Duration::from_secs(args.idle_timeout_secs));
        let mut tasks = Vec::with_capacity(range.len());
        for (slot, i) in range.enumerate() {
            let (listen, requests, endpoint) = connections.clients_for(plan, i)?;
            let spec = plan.stream(i);
            let uris: Vec<String> =
                spec.keys.iter().filter_map(|k| if let Key::Uri(n) = k { Some(uri(*n)) } else { None }).collect();
            let client = match (plan.era, args.relist) {
                (Era::V2026, _) | (Era::V2025, true) => {
                    let clients = (listen, requests, endpoint, connections.gate.clone());
                    SimulatedClient::Listen(watcher(plan, clients, uris, lists.clone(), idle_timeout))
                }
                (Era::V2025, false) => {
                    let mut options = LegacyOptions { uris, ..LegacyOptions::default() };
                    options.listener.idle_timeout = idle_timeout;
                    SimulatedClient::Session(LegacyClient::new(listen, requests, endpoint, options))
                }
            };
            let (shared, gate, mut stopped, lists) =
                (shared.clone(), open_gate.clone(), stop.subscribe(), lists.clone());
            tasks.push(tokio::spawn(async move {
                // The gate is never closed; a client still waiting for it when the run stops
                // just ends.
                let permit = tokio::select! {
                    permit = gate.acquire_owned() => permit,
                    _ = stopped.wait_for(|s| *s) => return,
                };
                let Ok(permit) = permit else { return };
                let probe = Probe::new(shared, slot, lists, permit);
                let stop = async move {
                    let _ = stopped.wait_for(|s| *s).await;
                };
                match client {
                    SimulatedClient::Listen(watcher) => drop(watcher.run(probe, stop).await),
                    SimulatedClient::Session(client) => drop(client.run(probe, stop).await),
                }
            }));
        }
        Ok(Loader { shared, stop, tasks })
    }

    /// The event phase starts: re-lists from now on count as the storm.
    pub fn events_started(&self) {
        self.shared.events_started.store(true, Ordering::Relaxed);
    }

    /// A publish was accepted.
    pub fn publish(&self, record: PublishRecord) {
        {
            let mut publishes = lock(&self.shared.publishes);
            publishes.0.insert(record);
            publishes.1.push(record);
        }
        lock(&self.shared.deliveries).on_publish(record);
    }

    /// The state right now; `settle_us` decides what counts as overdue.
    pub fn live(&self, settle_us: u64) -> LiveStats {
        let now = self.shared.clock.now_us();
        let (mut overdue, mut pending, mut unconverged) = (0, 0, 0);
        {
            let publishes = lock(&self.shared.publishes);
            for slot in &self.shared.slots {
                let slot = lock(slot);
                pending += slot.verifier.check(&publishes.0, now).lost;
                overdue += slot.verifier.check(&publishes.0, now.saturating_sub(settle_us)).lost;
                unconverged += slot.lists.stale_lists() as u64;
            }
        }
        let (deliveries, latency) = {
            let mut d = lock(&self.shared.deliveries);
            d.match_unstamped(now.saturating_sub(UNSTAMPED_HORIZON_US));
            // Unstamped frames count at once; their latency joins once they are matched.
            (d.latency().len() + d.unstamped_pending() as u64, encode(d.latency()))
        };
        let requests = lock(&self.shared.requests);
        let c = &self.shared.counters;
        LiveStats {
            streams: self.shared.slots.len() as u64,
            ready: c.ready.load(Ordering::Relaxed),
            open_failures: c.open_failures.load(Ordering::Relaxed),
            frames: c.frames.load(Ordering::Relaxed),
            deliveries,
            overdue,
            pending,
            unconverged,
            requests: requests.iter().map(|r| r.phase.requests).sum(),
            request_errors: requests.iter().map(|r| r.phase.errors).sum(),
            reconnects: c.reconnects.load(Ordering::Relaxed),
            latency,
        }
    }

    /// Stop every client and compute the final result.
    pub async fn finish(self) -> LoaderResult {
        self.stop.send_replace(true);
        let stopping = futures_util::future::join_all(self.tasks);
        if tokio::time::timeout(STOP_TIMEOUT, stopping).await.is_err() {
            eprintln!("loader: some clients did not stop within {STOP_TIMEOUT:?}");
        }
        final_result(&self.shared)
    }
}

/// A simulated client's stream transport, request transport, endpoint and re-list gate.
type ClientConnections = (Transport, Transport, Endpoint, Arc<Semaphore>);

/// The [`CatalogWatcher`] of one simulated client following `uris` and re-listing `relist`:
/// a listen stream in the 2026 era; in the 2025 era (only with `--relist`) one session — its
/// GET stream on the stream transport, its subscriptions and re-lists on the request one.
///
/// The load tester measures the stream itself, as it always has: no discover round trip, no
/// periodic re-verification, and the subscribed URIs' `resources/updated` are counted, not
/// re-read.
fn watcher(
    plan: &Plan,
    (listen, requests, endpoint, gate): ClientConnections,
    uris: Vec<String>,
    relist: Vec<ListKind>,
    idle_timeout: Option<Duration>,
) -> CatalogWatcher {
    let filter =
        SubscriptionFilter { resource_subscriptions: uris, ..mcp_fleet_client::listen::filter_for(&plan.lists()) };
    let mut options = WatcherOptions {
        filter,
        relist,
        discover: false,
        verify: VerifyPolicy::OFF,
        read_resources: false,
        ..Default::default()
    };
    options.listener.idle_timeout = idle_timeout;
    let stream = match plan.era {
        Era::V2026 => RpcClient::new(listen, endpoint),
        Era::V2025 => RpcClient::new(listen, endpoint).era_2025(),
    };
    let requests = stream.clone().with_transport(requests).with_gate(gate);
    CatalogWatcher::new(stream, requests, options)
}

/// The final verification, convergence and figures of a stopped loader.
fn final_result(shared: &LoaderShared) -> LoaderResult {
    let publishes = lock(&shared.publishes);
    let (index, records) = (&publishes.0, &publishes.1);
    let mut result = LoaderResult { streams: shared.slots.len() as u64, ..Default::default() };
    let mut convergence =
        vec![EventConvergence::default(); records.iter().map(|r| r.seq as usize + 1).max().unwrap_or(0)];
    let mut client_convergence = new_histogram();
    for slot in &shared.slots {
        let slot = lock(slot);
        result.opened += u64::from(slot.verifier.is_open());
        result.counts.add(slot.verifier.counts());
        let verdict = slot.verifier.check(index, FINAL);
        result.streams_complete += u64::from(slot.verifier.is_open() && verdict.lost == 0);
        result.verdict.add(&verdict);
        converge(&slot, records, &mut convergence, &mut client_convergence);
        for (key, revision) in slot.lists.revisions() {
            let list = format!("{key:?}").to_lowercase();
            *result.revisions.entry(list).or_default().entry(revision.unwrap_or("none").to_owned()).or_default() += 1;
        }
    }
    result.convergence = convergence;
    result.client_convergence = encode(&client_convergence);
    let mut deliveries = lock(&shared.deliveries);
    deliveries.match_unstamped(u64::MAX); // every publish is known now
    result.deliveries = deliveries.per_publish().to_vec();
    result.unmatched_frames = deliveries.unmatched() as u64;
    result.misrouted = deliveries.misrouted();
    result.delivery_latency = encode(deliveries.latency());
    result.open_latency = encode(&lock(&shared.open_latency));
    result.open_failures = shared.counters.open_failures.load(Ordering::Relaxed);
    result.unhonoured = shared.counters.unhonoured.load(Ordering::Relaxed);
    let requests = lock(&shared.requests);
    result.initial = requests[0].finish();
    result.relist = requests[1].finish();
    result.disconnects = lock(&shared.disconnects).clone();
    result
}

/// Add one client's convergence on every publish it must follow.
fn converge(slot: &Slot, records: &[PublishRecord], into: &mut [EventConvergence], hist: &mut Histogram<u64>) {
    if !slot.verifier.is_open() {
        return;
    }
    for p in records {
        let in_scope = p.scope.is_none() || p.scope == slot.tenant;
        if !in_scope || !slot.lists.follows(p.key) {
            continue;
        }
        let Some(c) = into.get_mut(p.seq as usize) else { continue };
        c.clients += 1;
        match slot.lists.converged_at(p) {
            Some(at) => {
                c.last_us = c.last_us.max(at);
                record(hist, at.saturating_sub(p.sent_us));
            }
            None => c.unconverged += 1,
        }
    }
}

/// The loader's connections: per node, the HTTP/1.1 pools, or the current h2c group.
struct Connections {
    endpoints: Vec<Endpoint>,
    h2_per_conn: usize,
    listen_pools: Vec<Transport>,
    request_pools: Vec<Transport>,
    /// Per node: (streams on the current shared connection, the connection).
    shared: Vec<Option<(usize, SharedH2)>>,
    gate: Arc<Semaphore>,
}

impl Connections {
    fn new(args: &Args, plan: &Plan) -> Result<Connections, LoadtestError> {
        let endpoints = plan.urls.iter().map(|u| Endpoint::parse(u)).collect::<Result<Vec<_>, _>>()?;
        let n = endpoints.len();
        Ok(Connections {
            endpoints,
            h2_per_conn: args.h2_streams_per_conn,
            listen_pools: (0..n).map(|_| Transport::http1()).collect(),
            request_pools: (0..n).map(|_| Transport::http1()).collect(),
            shared: vec![None; n],
            gate: Arc::new(Semaphore::new(args.relist_concurrency.max(1))),
        })
    }

    /// The stream and request transports of stream `i`, and its endpoint (with its tenant).
    fn clients_for(&mut self, plan: &Plan, i: usize) -> Result<(Transport, Transport, Endpoint), LoadtestError> {
        let spec = plan.stream(i);
        let mut endpoint = self.endpoints[spec.url].clone();
        if let Some(t) = spec.tenant {
            endpoint = endpoint.with_header("x-tenant", &tenant_name(t))?;
        }
        let (listen, requests) = if self.h2_per_conn == 0 {
            (self.listen_pools[spec.url].clone(), self.request_pools[spec.url].clone())
        } else {
            let shared = self.shared_connection(spec.url);
            (Transport::Shared(shared.clone()), Transport::Shared(shared))
        };
        Ok((listen, requests, endpoint))
    }

    /// The node's current h2c connection, or a new one once it carries `h2_per_conn` streams.
    fn shared_connection(&mut self, node: usize) -> SharedH2 {
        let authority = self.endpoints[node].authority().to_owned();
        let per = self.h2_per_conn;
        let entry =
            self.shared[node].get_or_insert_with(|| (0, SharedH2::start(&authority, ReconnectPolicy::default())));
        if entry.0 == per {
            *entry = (0, SharedH2::start(&authority, ReconnectPolicy::default()));
        }
        entry.0 += 1;
        entry.1.clone()
    }
}
