//! A simulated fleet of real node processes (BENCHMARKS.md, "Past one broker primary"): starts
//! `--nodes` `mcp-fleet` processes on one bus URL, opens on each one listen stream per tenant
//! it hosts (subscribed to the tenant's resource `sim://t<t>`, so its node follows that URI),
//! publishes `--events` updates of tenants' resources (tenants drawn uniformly) and `--global`
//! tools changes from a bus client of its own, and reads what each node's bus consumed
//! (`mcp_fleet_bus_received`) and the CPU it spent, against the capacity model. Then it
//! checks delivery: one more update per tenant, and every stream must hear its own.
//!
//! ```sh
//! fleet-sim --node-bin target/release/mcp-fleet \
//!     --bus 'redis+cluster://127.0.0.1:7000?stream=sim&shards=16&routing=interest' --shards 16 --routed
//! ```

use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use clap::Parser;
use futures_util::StreamExt;
use mcp_fleet_bus::{Change, EventKind, ServerEventBus};
use mcp_fleet_client::{Endpoint, ListenMessage, ListenStream, RpcClient, Target, Transport};
use mcp_fleet_loadtest::sim::{self, Layout};
use mcp_fleet_loadtest::{metrics, procfs};
use mcp_fleet_protocol::SubscriptionFilter;
use serde_json::json;
use tokio::process::{Child, Command};

#[derive(Parser)]
#[command(about = "Per-node consumed events and CPU of a fleet of real node processes, against the capacity model")]
struct Args {
    #[command(flatten)]
    layout: Layout,
    /// The node binary.
    #[arg(long, default_value = "target/release/mcp-fleet")]
    node_bin: String,
    /// The bus every node connects to (its query sets shards and routing).
    #[arg(long)]
    bus: String,
    /// Publishes in flight at once.
    #[arg(long, default_value_t = 16)]
    concurrency: usize,
    /// The first port: node `i` listens on `base + 2i`, its admin on `base + 2i + 1`.
    #[arg(long, default_value_t = 21_000)]
    base_port: u16,
}

impl Args {
    fn ports(&self, node: usize) -> (String, String) {
        let port = usize::from(self.base_port) + 2 * node;
        (format!("127.0.0.1:{port}"), format!("127.0.0.1:{}", port + 1))
    }
}

/// One stream's count of updates of its tenant's resource.
struct Heard {
    updates: AtomicU64,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    mcp_fleet_loadtest::raise_file_limit()?;
    let layout = args.layout;
    let nodes = start_nodes(&args).await?;
    let heard = open_streams(&args, &layout).await?;
    println!("{} nodes up, {} listen streams open", nodes.len(), heard.len());
    let publisher = mcp_fleet_loadtest::publish::connect_bus(&args.bus, "sim-publisher").await?;
    let before = consumed(&args).await?;
    let cpu_before = cpu(&nodes);
    let started = Instant::now();
    publish(&args, &publisher, (0..args.layout.events + args.layout.global).collect()).await?;
    let took = started.elapsed();
    sim::settle(Duration::from_secs(2), || heard.iter().map(|h| h.updates.load(Ordering::Relaxed)).sum()).await;
    let after = consumed(&args).await?;
    let cpu_spent: Vec<f64> = cpu(&nodes).iter().zip(&cpu_before).map(|(a, b)| a - b).collect();
    let got: Vec<u64> = after.iter().zip(&before).map(|(a, b)| a - b).collect();
    report(&args, &layout, &got, &cpu_spent, took);
    let missed = verify(&args, &publisher, &heard).await?;
    println!("delivery check: one update per tenant, {missed} of {} streams missed their own", heard.len());
    drop(nodes);
    if missed > 0 {
        return Err(format!("{missed} streams missed their tenant's update").into());
    }
    Ok(())
}

/// Start every node and wait until each answers `/readyz`.
async fn start_nodes(args: &Args) -> Result<Vec<Child>, Box<dyn std::error::Error>> {
    let mut nodes = Vec::new();
    for node in 0..args.layout.nodes {
        let (listen, admin) = args.ports(node);
        let child = Command::new(&args.node_bin)
            .args(["--listen", &listen, "--admin-listen", &admin, "--bus", &args.bus])
            .args(["--node-id", &format!("sim-{node}"), "--worker-threads", "1"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()?;
        nodes.push(child);
    }
    for node in 0..args.layout.nodes {
        let admin = args.ports(node).1;
        let deadline = Instant::now() + Duration::from_secs(60);
        while metrics::scrape(&admin, None).await.is_err() {
            if Instant::now() > deadline {
                return Err(format!("node {node} did not come up on {admin}").into());
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
    Ok(nodes)
}

/// On every node, one listen stream per tenant it hosts, each counting its tenant's updates.
async fn open_streams(args: &Args, layout: &Layout) -> Result<Vec<Arc<Heard>>, Box<dyn std::error::Error>> {
    let mut heard = Vec::new();
    for node in 0..args.layout.nodes {
        let endpoint = Endpoint::parse(&format!("http://{}/mcp", args.ports(node).0))?;
        let rpc = RpcClient::new(Transport::http1(), endpoint);
        for tenant in layout.hosted(node) {
            let filter =
                SubscriptionFilter { resource_subscriptions: vec![uri_of(tenant)], ..SubscriptionFilter::default() };
            let mut stream = ListenStream::open(&rpc, &json!(format!("{node}-{tenant}")), &filter).await?;
            let counter = Arc::new(Heard { updates: AtomicU64::new(0) });
            heard.push(counter.clone());
            tokio::spawn(async move {
                while let Ok(Some(message)) = stream.next().await {
                    if let ListenMessage::Changed(n) = message
                        && matches!(n.target, Target::Resource(_))
                    {
                        counter.updates.fetch_add(1, Ordering::Relaxed);
                    }
                }
            });
        }
    }
    Ok(heard)
}

fn uri_of(tenant: usize) -> String {
    format!("sim://t{tenant}")
}

/// Publish the `i`-th changes of `which`: below `--global` a tools change for everyone, above
/// it an update of a tenant's resource (drawn as `Layout::tenant_of`).
async fn publish(args: &Args, bus: &Arc<dyn ServerEventBus>, which: Vec<usize>) -> Result<(), mcp_fleet_bus::BusError> {
    let layout = args.layout;
    let changes = which.into_iter().map(|i| {
        let change = match i < args.layout.global {
            true => Change::list(EventKind::ToolsListChanged),
            false => Change::resource(uri_of(layout.tenant_of(i))),
        };
        async move { bus.publish(change).await.map(drop) }
    });
    let mut in_flight = futures_util::stream::iter(changes).buffer_unordered(args.concurrency);
    while let Some(done) = in_flight.next().await {
        done?;
    }
    Ok(())
}

/// Each node's events consumed from the bus so far.
async fn consumed(args: &Args) -> Result<Vec<u64>, String> {
    let mut all = Vec::new();
    for node in 0..args.layout.nodes {
        let counters = metrics::scrape(&args.ports(node).1, None).await?;
        all.push(counters.counters.get("busReceived").copied().unwrap_or(0.0) as u64);
    }
    Ok(all)
}

/// Each node's CPU seconds so far (0 when `/proc` cannot tell).
fn cpu(nodes: &[Child]) -> Vec<f64> {
    let ticks = |child: &Child| child.id().and_then(|pid| procfs::cpu_ticks(pid).ok()).unwrap_or(0);
    nodes.iter().map(|child| (ticks(child) * procfs::TICK_MS) as f64 / 1000.0).collect()
}

/// Publish one update per tenant; answer how many streams did not hear their tenant's.
async fn verify(
    args: &Args,
    bus: &Arc<dyn ServerEventBus>,
    heard: &[Arc<Heard>],
) -> Result<usize, Box<dyn std::error::Error>> {
    let marks: Vec<u64> = heard.iter().map(|h| h.updates.load(Ordering::Relaxed)).collect();
    for tenant in 0..args.layout.tenants {
        bus.publish(Change::resource(uri_of(tenant))).await?;
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let missed = heard.iter().zip(&marks).filter(|(h, mark)| h.updates.load(Ordering::Relaxed) == **mark).count();
        if missed == 0 || Instant::now() > deadline {
            return Ok(missed);
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn report(args: &Args, layout: &Layout, got: &[u64], cpu: &[f64], took: Duration) {
    let published = args.layout.events + args.layout.global;
    for line in layout.compare(got) {
        println!("{line}");
    }
    println!("published {published} in {:.2} s ({:.0}/s)", took.as_secs_f64(), published as f64 / took.as_secs_f64());
    let (cpu_total, consumed_total) = (cpu.iter().sum::<f64>(), got.iter().sum::<u64>());
    let mut sorted = cpu.to_vec();
    sorted.sort_by(f64::total_cmp);
    println!(
        "node CPU: median {:.2} s, all nodes {cpu_total:.2} s = {:.1} µs per consumed event (10 ms ticks; deliveries and keepalives included)",
        sorted[sorted.len() / 2],
        cpu_total * 1e6 / consumed_total.max(1) as f64
    );
}
