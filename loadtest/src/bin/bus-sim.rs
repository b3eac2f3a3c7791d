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
use mcp_fleet_loadtest::procfs;
use mcp_fleet_loadtest::sim::{self, Layout};

#[derive(Parser)]
#[command(about = "Per-node consumed events of a simulated fleet, against the capacity model")]
struct Args {
    #[command(flatten)]
    layout: Layout,
    /// The bus every simulated node connects to (its query sets shards and routing).
    #[arg(long)]
    bus: String,
    /// Publishes in flight at once.
    #[arg(long, default_value_t = 32)]
    concurrency: usize,
}

/// This process's CPU seconds so far (0 when `/proc` cannot tell).
fn cpu_seconds() -> f64 {
    let ticks = procfs::cpu_ticks(std::process::id()).unwrap_or(0);
    (ticks * procfs::TICK_MS) as f64 / 1000.0
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    let mut buses: Vec<Arc<dyn ServerEventBus>> = Vec::new();
    let consumed: Arc<Vec<AtomicU64>> = Arc::new((0..args.layout.nodes).map(|_| AtomicU64::new(0)).collect());
    let gaps = Arc::new(AtomicU64::new(0));
    for node in 0..args.layout.nodes {
        let bus = mcp_fleet_bus_connect::connect(&args.bus, &format!("sim-{node}")).await?;
        let mut events = bus.subscribe().await?;
        let tenants: Vec<Subject> =
            args.layout.hosted(node).into_iter().map(|t| Subject::Scope(format!("t{t}"))).collect();
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
    sim::settle(Duration::from_secs(1), || consumed.iter().map(|c| c.load(Ordering::Relaxed)).sum()).await;
    report(&args, &consumed, published_in, cpu_seconds() - cpu0, gaps.load(Ordering::Relaxed));
    Ok(())
}

/// Publish the scoped and fleet-wide changes, `concurrency` at a time, from every node in turn.
async fn publish(args: &Args, buses: &[Arc<dyn ServerEventBus>]) -> Result<(), mcp_fleet_bus::BusError> {
    let total = args.layout.events + args.layout.global;
    let changes = (0..total).map(|i| {
        let bus = buses[i % buses.len()].clone();
        let change = match i < args.layout.global {
            true => Change::list(EventKind::ToolsListChanged),
            false => Change::list(EventKind::ToolsListChanged).in_scope(format!("t{}", args.layout.tenant_of(i))),
        };
        async move { bus.publish(change).await.map(drop) }
    });
    let mut in_flight = futures_util::stream::iter(changes).buffer_unordered(args.concurrency);
    while let Some(done) = in_flight.next().await {
        done?;
    }
    Ok(())
}

fn report(args: &Args, consumed: &[AtomicU64], took: Duration, cpu: f64, gaps: u64) {
    let got: Vec<u64> = consumed.iter().map(|c| c.load(Ordering::Relaxed)).collect();
    let published = args.layout.events + args.layout.global;
    let lines = args.layout.compare(&got);
    println!("{}", lines[0]);
    println!("published {published} in {:.2} s ({:.0}/s)", took.as_secs_f64(), published as f64 / took.as_secs_f64());
    for line in &lines[1..] {
        println!("{line}");
    }
    let total: u64 = got.iter().sum();
    println!(
        "process CPU {cpu:.2} s: {:.1} µs per consumed event (decode and count; publishing included)",
        cpu * 1e6 / total as f64
    );
    println!("gaps {gaps}");
}
