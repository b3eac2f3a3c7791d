//! A simulated fleet at the bus level (BENCHMARKS.md, "Past one broker primary"): `--nodes`
//! bus clients in this process — each with its own connections, as a node has — share one bus
//! URL; tenants are spread over them (`--per-tenant` nodes host each), every node gains the
//! scopes of the tenants it hosts as its streams would, and `--events` scoped changes (tenants
//! drawn uniformly) plus `--global` fleet-wide ones are published from every node in turn.
//! It reports what each node consumed against the capacity model's prediction (see
//! `docs/capacity.md`), the publish rate, and the process's CPU per consumed event.
//!
//! ```sh
//! bus-sim --bus 'redis+cluster://127.0.0.1:7000?stream=sim&shards=16&routing=interest' --nodes 50
//! ```

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use clap::Parser;
use futures_util::StreamExt;
use mcp_fleet_bus::{BusItem, Change, EventKind, ServerEventBus, Subject};

#[derive(Parser)]
#[command(about = "Per-node consumed events of a simulated fleet, against the capacity model")]
struct Args {
    /// The bus every simulated node connects to (its query sets shards and routing).
    #[arg(long)]
    bus: String,
    /// Simulated nodes.
    #[arg(long, default_value_t = 50)]
    nodes: usize,
    /// Tenants.
    #[arg(long, default_value_t = 200)]
    tenants: usize,
    /// Nodes hosting each tenant.
    #[arg(long, default_value_t = 3)]
    per_tenant: usize,
    /// Scoped changes published.
    #[arg(long, default_value_t = 10_000)]
    events: usize,
    /// Fleet-wide changes published.
    #[arg(long, default_value_t = 100)]
    global: usize,
    /// Shards of the bus, for the model (the URL's `shards`; 1 when the bus is not split).
    #[arg(long, default_value_t = 1)]
    shards: usize,
    /// Whether the nodes route by interest, for the model (the URL's `routing=interest`).
    #[arg(long)]
    routed: bool,
    /// Publishes in flight at once.
    #[arg(long, default_value_t = 32)]
    concurrency: usize,
}

/// The tenants node `node` hosts: tenant `t` lives on nodes `t, t+1, …` (mod the fleet).
fn hosted(args: &Args, node: usize) -> Vec<usize> {
    (0..args.tenants).filter(|t| (0..args.per_tenant).any(|j| (t + j) % args.nodes == node)).collect()
}

/// The capacity model's consumed events for a node hosting `h` tenants (see docs/capacity.md):
/// every fleet-wide event, and the scoped events of the shards it reads — all of them without
/// routing; with it, shard 0 and each shard one of its tenants hashes to.
fn predicted(args: &Args, h: usize) -> f64 {
    let (e, g, m) = (args.events as f64, args.global as f64, args.shards as f64);
    if !args.routed {
        return e + g;
    }
    if m <= 1.0 {
        return e + g;
    }
    let covered = 1.0 / m + (m - 1.0) / m * (1.0 - (1.0 - 1.0 / m).powi(h as i32));
    g + e * covered
}

fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let fields: Vec<&str> = stat.rsplit(')').next().unwrap_or_default().split_whitespace().collect();
    let ticks = |i: usize| fields.get(i).and_then(|f| f.parse::<f64>().ok()).unwrap_or(0.0);
    (ticks(11) + ticks(12)) / 100.0
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    let mut buses: Vec<Arc<dyn ServerEventBus>> = Vec::new();
    let consumed: Arc<Vec<AtomicU64>> = Arc::new((0..args.nodes).map(|_| AtomicU64::new(0)).collect());
    let gaps = Arc::new(AtomicU64::new(0));
    for node in 0..args.nodes {
        let bus = mcp_fleet_bus_connect::connect(&args.bus, &format!("sim-{node}")).await?;
        let mut events = bus.subscribe().await?;
        let tenants: Vec<Subject> = hosted(&args, node).into_iter().map(|t| Subject::Scope(format!("t{t}"))).collect();
        bus.gain(&tenants).await?;
        let (consumed, gaps) = (consumed.clone(), gaps.clone());
        tokio::spawn(async move {
            while let Some(item) = events.next().await {
                match item {
                    BusItem::Event(_) => _ = consumed[node].fetch_add(1, Ordering::Relaxed),
                    BusItem::Gap(_) => _ = gaps.fetch_add(1, Ordering::Relaxed),
                }
            }
        });
        buses.push(bus);
    }
    let (cpu0, started) = (cpu_seconds(), Instant::now());
    publish(&args, &buses).await?;
    let published_in = started.elapsed();
    let expected: Vec<f64> = (0..args.nodes).map(|n| predicted(&args, hosted(&args, n).len())).collect();
    settle(&consumed).await;
    report(&args, &consumed, &expected, published_in, cpu_seconds() - cpu0, gaps.load(Ordering::Relaxed));
    Ok(())
}

/// Publish the scoped and fleet-wide changes, `concurrency` at a time, from every node in turn.
async fn publish(args: &Args, buses: &[Arc<dyn ServerEventBus>]) -> Result<(), mcp_fleet_bus::BusError> {
    let total = args.events + args.global;
    let changes = (0..total).map(|i| {
        let bus = buses[i % buses.len()].clone();
        let change = match i < args.global {
            true => Change::list(EventKind::ToolsListChanged),
            false => Change::list(EventKind::ToolsListChanged).in_scope(format!("t{}", fastrand(i) % args.tenants)),
        };
        async move { bus.publish(change).await.map(drop) }
    });
    let mut in_flight = futures_util::stream::iter(changes).buffer_unordered(args.concurrency);
    while let Some(done) = in_flight.next().await {
        done?;
    }
    Ok(())
}

/// A cheap, fixed pseudo-random draw (splitmix64), so runs are comparable.
fn fastrand(i: usize) -> usize {
    let mut z = (i as u64).wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    (z ^ (z >> 31)) as usize
}

/// Wait until no node consumed anything for a second.
async fn settle(consumed: &[AtomicU64]) {
    let total = || consumed.iter().map(|c| c.load(Ordering::Relaxed)).sum::<u64>();
    let mut last = total();
    loop {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let now = total();
        if now == last {
            return;
        }
        last = now;
    }
}

fn report(args: &Args, consumed: &[AtomicU64], expected: &[f64], took: Duration, cpu: f64, gaps: u64) {
    let got: Vec<u64> = consumed.iter().map(|c| c.load(Ordering::Relaxed)).collect();
    let total: u64 = got.iter().sum();
    let mut sorted = got.clone();
    sorted.sort_unstable();
    let (min, median, max) = (sorted[0], sorted[sorted.len() / 2], sorted[sorted.len() - 1]);
    let model_total: f64 = expected.iter().sum();
    let mut model_sorted = expected.to_vec();
    model_sorted.sort_by(f64::total_cmp);
    let model_median = model_sorted[model_sorted.len() / 2];
    let off = |measured: f64, model: f64| (measured - model) / model * 100.0;
    let published = args.events + args.global;
    println!(
        "nodes {}  tenants {} (each on {})  shards {}  routed {}",
        args.nodes, args.tenants, args.per_tenant, args.shards, args.routed
    );
    println!("published {published} in {:.2} s ({:.0}/s)", took.as_secs_f64(), published as f64 / took.as_secs_f64());
    println!(
        "consumed per node: min {min}  median {median}  max {max}  (every node would consume {published} without routing)"
    );
    println!("consumed in all: {total} = {:.2} × published", total as f64 / published as f64);
    println!(
        "model: median node {model_median:.0} (measured {:+.1} %), all nodes {model_total:.0} (measured {:+.1} %)",
        off(median as f64, model_median),
        off(total as f64, model_total)
    );
    println!(
        "process CPU {cpu:.2} s: {:.1} µs per consumed event (decode and count; publishing included)",
        cpu * 1e6 / total as f64
    );
    println!("gaps {gaps}");
}
