//! The coordinator: [`run`] carries out one fan-out run — start the loaders (in this process
//! or as worker processes), wait until every stream is ready, scrape the nodes, publish the
//! load shape, wait for every stream to be covered (and every client converged), scrape
//! again, and merge everything into a [`Report`].

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tokio::sync::mpsc;

use crate::args::Args;
use crate::clock::Clock;
use crate::error::LoadtestError;
use crate::loader::Loader;
use crate::metrics::{NodeCounters, scrape};
use crate::plan::Plan;
use crate::procfs::{TICK_MS, cpu_ticks, rss_kb};
use crate::progress::Progress;
use crate::publish::{Publisher, Shape, run_shape};
use crate::report::{Gathered, NodeReport, Report, ServerReport};
use crate::results::{LiveStats, LoaderResult};
use crate::verify::PublishRecord;
use crate::worker::{Launch, ToWorker, Workers};

/// How often the coordinator looks at the loaders' live stats while streams open (cheap:
/// nothing is published yet).
const POLL: Duration = Duration::from_millis(100);
/// How often it looks during the event phase and settling: an in-process check scans every
/// stream, so look no more often than workers report (twice a second).
const LIVE_POLL: Duration = Duration::from_millis(500);

/// The loaders of a run: this process, or worker processes.
#[derive(Debug)]
enum Loaders {
    Local(Loader),
    Workers(Workers),
}

impl Loaders {
    fn live(&self, settle_us: u64) -> Result<Option<LiveStats>, LoadtestError> {
        match self {
            Loaders::Local(loader) => Ok(Some(loader.live(settle_us))),
            Loaders::Workers(workers) => workers.live(),
        }
    }

    fn events_started(&self) {
        match self {
            Loaders::Local(loader) => loader.events_started(),
            Loaders::Workers(workers) => workers.broadcast(&ToWorker::EventsStarted),
        }
    }

    fn publish(&self, record: PublishRecord) {
        match self {
            Loaders::Local(loader) => loader.publish(record),
            Loaders::Workers(workers) => workers.broadcast(&ToWorker::Publish(record)),
        }
    }

    async fn finish(self) -> Result<LoaderResult, LoadtestError> {
        match self {
            Loaders::Local(loader) => Ok(loader.finish().await),
            Loaders::Workers(workers) => workers.finish().await,
        }
    }
}

/// Carry out a fan-out run. `launch` says how to start `--workers` processes (required when
/// `args.workers > 0`).
pub async fn run(args: &Args, launch: Option<&Launch>) -> Result<Report, LoadtestError> {
    let plan = Plan::from_args(args)?;
    let shape = Shape::from_args(args)?;
    if plan.streams == 0 {
        return Err(LoadtestError::Usage("--streams must be > 0".into()));
    }
    let clock = Clock::new();
    let started_us = clock.now_us();
    let rss_before = sum_over(&args.server_pids, rss_kb)?;
    let publisher = Arc::new(Publisher::connect(args).await?);
    let loaders = Arc::new(start_loaders(args, &plan, clock, launch)?);
    let progress = Progress::new(args.quiet);
    let settle_us = args.settle_ms * 1000;

    let opened_at = Instant::now();
    wait_ready(args, &loaders, &progress, settle_us).await?;
    let open_us = opened_at.elapsed().as_micros() as u64;
    let rss_open = sum_over(&args.server_pids, rss_kb)?;
    let scrape_targets =
        if args.metrics.is_empty() && args.bus.is_none() { publisher.describe().1 } else { args.metrics.clone() };
    let before = scrape_all(&scrape_targets, args.admin_token.as_deref()).await;
    let cpu_before = sum_over(&args.server_pids, cpu_ticks)?;

    loaders.events_started();
    let (accepted, mut inbox) = mpsc::unbounded_channel::<PublishRecord>();
    let forwarded = Arc::new(AtomicU64::new(0));
    let forward = tokio::spawn({
        let (loaders, forwarded) = (loaders.clone(), forwarded.clone());
        async move {
            while let Some(record) = inbox.recv().await {
                loaders.publish(record);
                forwarded.fetch_add(1, Ordering::Relaxed);
            }
        }
    });
    let publishing = run_shape(shape, publisher.clone(), &plan, clock, args.publish_concurrency, accepted);
    let published = with_progress(publishing, &loaders, &progress, settle_us, &forwarded).await;
    let _ = forward.await;
    if published.records.is_empty() && published.failed > 0 {
        progress.finish();
        return Err(LoadtestError::Publish(format!("every publish failed: {:?}", published.errors)));
    }
    let settle_started = Instant::now();
    wait_settled(args, &loaders, &progress, settle_us, published.records.len() as u64).await?;
    let settle_us_taken = settle_started.elapsed().as_micros() as u64;

    let cpu_after = sum_over(&args.server_pids, cpu_ticks)?;
    let after = scrape_all(&scrape_targets, args.admin_token.as_deref()).await;
    progress.finish();
    let loaders = Arc::into_inner(loaders).ok_or_else(|| LoadtestError::Worker("loaders still shared".into()))?;
    let result = loaders.finish().await?;
    let server = (!args.server_pids.is_empty()).then(|| {
        let cpu_ms = cpu_after.saturating_sub(cpu_before) * TICK_MS;
        ServerReport {
            pids: args.server_pids.clone(),
            cpu_ms,
            cpu_per_delivery_us: cpu_ms as f64 * 1000.0 / result.counts.frames.max(1) as f64,
            rss_kb_before: rss_before,
            rss_kb_open: rss_open,
            rss_per_stream_bytes: rss_open.saturating_sub(rss_before) as f64 * 1024.0 / plan.streams as f64,
        }
    });
    let nodes = node_reports(&scrape_targets, before, after);
    let gathered = Gathered {
        started_us,
        open_us,
        settle_us: settle_us_taken,
        published,
        result,
        server,
        nodes,
        publisher: publisher.describe(),
    };
    Ok(Report::build(args, &plan, shape, gathered))
}

fn start_loaders(args: &Args, plan: &Plan, clock: Clock, launch: Option<&Launch>) -> Result<Loaders, LoadtestError> {
    if args.workers == 0 {
        return Ok(Loaders::Local(Loader::start(args, plan, 0..plan.streams, clock)?));
    }
    let launch = launch.ok_or_else(|| LoadtestError::Usage("--workers needs the executable to re-run".into()))?;
    Ok(Loaders::Workers(Workers::spawn(launch, args.workers)?))
}

/// Wait until every stream is ready (acknowledged, first snapshots held).
async fn wait_ready(args: &Args, loaders: &Loaders, progress: &Progress, settle_us: u64) -> Result<(), LoadtestError> {
    let deadline = Instant::now() + Duration::from_secs(args.open_timeout_secs);
    loop {
        let live = loaders.live(settle_us)?;
        if let Some(live) = &live {
            progress.update("opening", live, 0);
            if live.ready >= args.streams as u64 {
                return Ok(());
            }
        }
        if Instant::now() >= deadline {
            let ready = live.map_or(0, |l| l.ready as usize);
            return Err(LoadtestError::OpenTimeout { ready, wanted: args.streams, secs: args.open_timeout_secs });
        }
        tokio::time::sleep(POLL).await;
    }
}

/// Drive the event phase while updating the progress line with `published` events.
async fn with_progress<T>(
    work: impl std::future::Future<Output = T>,
    loaders: &Loaders,
    progress: &Progress,
    settle_us: u64,
    published: &AtomicU64,
) -> T {
    tokio::pin!(work);
    loop {
        tokio::select! {
            done = &mut work => return done,
            () = tokio::time::sleep(LIVE_POLL) => {
                if let Ok(Some(live)) = loaders.live(settle_us) {
                    progress.update("events", &live, published.load(Ordering::Relaxed));
                }
            }
        }
    }
}

/// Wait until nothing is pending (and, re-listing, every client converged), or the settle
/// limit.
async fn wait_settled(
    args: &Args,
    loaders: &Loaders,
    progress: &Progress,
    settle_us: u64,
    published: u64,
) -> Result<(), LoadtestError> {
    let deadline = Instant::now() + Duration::from_micros(settle_us);
    // Worker stats are up to half a second old: require two quiet reports in a row.
    let mut quiet = 0;
    while Instant::now() < deadline {
        tokio::time::sleep(LIVE_POLL).await;
        let Some(live) = loaders.live(settle_us)? else { continue };
        progress.update("settling", &live, published);
        let done = live.pending == 0 && (!args.relist || live.unconverged == 0);
        quiet = if done { quiet + 1 } else { 0 };
        if quiet >= 2 {
            break;
        }
    }
    Ok(())
}

fn sum_over(pids: &[u32], f: fn(u32) -> Result<u64, LoadtestError>) -> Result<u64, LoadtestError> {
    pids.iter().map(|p| f(*p)).sum()
}

async fn scrape_all(targets: &[String], token: Option<&str>) -> Vec<Result<NodeCounters, String>> {
    let mut out = Vec::with_capacity(targets.len());
    for t in targets {
        out.push(scrape(t, token).await);
    }
    out
}

fn node_reports(
    targets: &[String],
    before: Vec<Result<NodeCounters, String>>,
    after: Vec<Result<NodeCounters, String>>,
) -> Vec<NodeReport> {
    targets
        .iter()
        .zip(before.into_iter().zip(after))
        .map(|(address, (b, a))| {
            let error = b.as_ref().err().or(a.as_ref().err()).cloned();
            let (before, after) = (b.ok(), a.ok());
            let delta = match (&before, &after) {
                (Some(b), Some(a)) => Some(a.delta(b)),
                _ => None,
            };
            NodeReport { address: address.clone(), before, after, delta, error }
        })
        .collect()
}
