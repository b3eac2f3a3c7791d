//! Loader processes (`--workers K`): the coordinator re-executes this binary K times with
//! hidden `--worker-index i --worker-count K` arguments; worker *i* runs streams
//! [`Plan::share`]`(i, K)` and the two sides talk in JSON lines:
//!
//! - coordinator → worker (stdin): [`ToWorker`] — the event phase started, each accepted
//!   publish, finish.
//! - worker → coordinator (stdout): [`FromWorker`] — live stats twice a second, then the
//!   final result. Histograms travel as HDR V2, so the merge is exact.
//!
//! A worker whose stdin closes (the coordinator died) finishes and exits. Worker stderr is
//! inherited, so its errors reach the operator.

use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::{mpsc, oneshot};

use crate::args::Args;
use crate::clock::Clock;
use crate::error::LoadtestError;
use crate::loader::Loader;
use crate::plan::Plan;
use crate::results::{LiveStats, LoaderResult};
use crate::verify::PublishRecord;

/// How often a worker reports [`LiveStats`].
const LIVE_EVERY: Duration = Duration::from_millis(500);

/// A message to a worker.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ToWorker {
    /// Re-lists from now on count as the storm.
    EventsStarted,
    /// A publish was accepted.
    Publish(PublishRecord),
    /// Stop and report.
    Finish,
}

/// A message from a worker.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum FromWorker {
    /// The worker's state right now.
    Live(Box<LiveStats>),
    /// The worker's final result.
    Result(Box<LoaderResult>),
}

/// How to start worker processes: the executable and the coordinator's own arguments
/// (without the program name); each worker gets them plus its hidden index arguments.
#[derive(Debug, Clone)]
pub struct Launch {
    /// This program.
    pub exe: PathBuf,
    /// The coordinator's arguments.
    pub args: Vec<OsString>,
}

impl Launch {
    /// This process's executable and arguments.
    pub fn current() -> Result<Launch, LoadtestError> {
        let exe = std::env::current_exe().map_err(LoadtestError::io("finding this executable"))?;
        Ok(Launch { exe, args: std::env::args_os().skip(1).collect() })
    }
}

/// The worker side: run share `index` of `count`, speaking the protocol on stdin/stdout.
pub async fn serve(args: &Args, plan: &Plan, index: usize, count: usize) -> Result<(), LoadtestError> {
    let loader = Arc::new(Loader::start(args, plan, plan.share(index, count), Clock::new())?);
    let settle_us = args.settle_ms * 1000;
    let live = tokio::spawn({
        let loader = loader.clone();
        async move {
            let mut tick = tokio::time::interval(LIVE_EVERY);
            loop {
                tick.tick().await;
                let stats = loader.live(settle_us);
                if send(&FromWorker::Live(Box::new(stats))).is_err() {
                    return;
                }
            }
        }
    });
    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        match serde_json::from_str::<ToWorker>(&line) {
            Ok(ToWorker::EventsStarted) => loader.events_started(),
            Ok(ToWorker::Publish(record)) => loader.publish(record),
            Ok(ToWorker::Finish) => break,
            Err(e) => eprintln!("worker {index}: ignoring a bad message ({e}): {line}"),
        }
    }
    live.abort();
    let _ = live.await; // the ticker holds a clone of the loader until it is gone
    let loader = Arc::into_inner(loader).ok_or_else(|| LoadtestError::Worker("loader still shared".into()))?;
    let result = loader.finish().await;
    send(&FromWorker::Result(Box::new(result))).map_err(LoadtestError::io("writing the result"))
}

/// Write one message as a JSON line on stdout.
fn send(message: &FromWorker) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    serde_json::to_writer(&mut out, message)?;
    out.write_all(b"\n")?;
    out.flush()
}

/// The coordinator's handle on one worker process.
struct WorkerProcess {
    child: Child,
    to_worker: mpsc::UnboundedSender<ToWorker>,
    result: oneshot::Receiver<Result<LoaderResult, LoadtestError>>,
}

/// The coordinator's side: every worker process.
pub struct Workers {
    processes: Vec<WorkerProcess>,
    live: Arc<Mutex<Vec<Option<LiveStats>>>>,
}

impl std::fmt::Debug for Workers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Workers").field("count", &self.processes.len()).finish()
    }
}

impl Workers {
    /// Start `count` worker processes.
    pub fn spawn(launch: &Launch, count: usize) -> Result<Workers, LoadtestError> {
        let live = Arc::new(Mutex::new(vec![None; count]));
        let mut processes = Vec::with_capacity(count);
        for index in 0..count {
            let mut child = Command::new(&launch.exe)
                .args(&launch.args)
                .args(["--workers", "0", "--quiet", "--worker-count", &count.to_string()])
                .args(["--worker-index", &index.to_string()])
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::inherit())
                .kill_on_drop(true)
                .spawn()
                .map_err(LoadtestError::io(format!("starting worker {index}")))?;
            let (stdin, stdout) = match (child.stdin.take(), child.stdout.take()) {
                (Some(i), Some(o)) => (i, o),
                _ => return Err(LoadtestError::Worker(format!("worker {index} has no pipes"))),
            };
            let (to_worker, outbox) = mpsc::unbounded_channel();
            tokio::spawn(write_messages(stdin, outbox));
            let (result_tx, result) = oneshot::channel();
            tokio::spawn(read_messages(index, stdout, live.clone(), result_tx));
            processes.push(WorkerProcess { child, to_worker, result });
        }
        Ok(Workers { processes, live })
    }

    /// Tell every worker.
    pub fn broadcast(&self, message: &ToWorker) {
        for p in &self.processes {
            let _ = p.to_worker.send(message.clone());
        }
    }

    /// Every worker's latest stats, merged (`None` until each has reported once).
    pub fn live(&self) -> Result<Option<LiveStats>, LoadtestError> {
        let latest = self.live.lock().unwrap_or_else(PoisonError::into_inner).clone();
        let mut total = LiveStats::default();
        for stats in latest {
            let Some(stats) = stats else { return Ok(None) };
            total.add(&stats)?;
        }
        Ok(Some(total))
    }

    /// Ask every worker to finish and merge their results.
    pub async fn finish(self) -> Result<LoaderResult, LoadtestError> {
        self.broadcast(&ToWorker::Finish);
        let mut total = LoaderResult::default();
        for (index, mut p) in self.processes.into_iter().enumerate() {
            let result =
                p.result.await.map_err(|_| LoadtestError::Worker(format!("worker {index} sent no result")))??;
            total.add(&result)?;
            let status = p.child.wait().await.map_err(LoadtestError::io(format!("waiting for worker {index}")))?;
            if !status.success() {
                return Err(LoadtestError::Worker(format!("worker {index} exited with {status}")));
            }
        }
        Ok(total)
    }
}

/// The task owning a worker's stdin.
async fn write_messages(mut stdin: ChildStdin, mut outbox: mpsc::UnboundedReceiver<ToWorker>) {
    while let Some(message) = outbox.recv().await {
        let Ok(mut line) = serde_json::to_vec(&message) else { continue };
        line.push(b'\n');
        if stdin.write_all(&line).await.is_err() {
            return;
        }
    }
}

/// The task reading a worker's stdout.
async fn read_messages(
    index: usize,
    stdout: tokio::process::ChildStdout,
    live: Arc<Mutex<Vec<Option<LiveStats>>>>,
    result: oneshot::Sender<Result<LoaderResult, LoadtestError>>,
) {
    let mut lines = BufReader::new(stdout).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        match serde_json::from_str::<FromWorker>(&line) {
            Ok(FromWorker::Live(stats)) => {
                if let Some(slot) = live.lock().unwrap_or_else(PoisonError::into_inner).get_mut(index) {
                    *slot = Some(*stats);
                }
            }
            Ok(FromWorker::Result(r)) => {
                let _ = result.send(Ok(*r));
                return;
            }
            Err(e) => {
                let _ = result.send(Err(LoadtestError::Worker(format!("worker {index} wrote {e}: {line:.200}"))));
                return;
            }
        }
    }
}
