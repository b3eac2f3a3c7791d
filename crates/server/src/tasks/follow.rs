//! Task events, and the listen streams that follow tasks: one task of this node
//! ([`Tasks::follow`]) owns the I/O.
//!
//! - A [`EventKind::TaskChanged`](mcp_fleet_bus::EventKind::TaskChanged) event from the bus
//!   (through the intake, deduplicated) pokes the task's runner if it runs here and the change
//!   came from elsewhere, and — when listen streams here follow the task — reads the record and
//!   hands them `notifications/tasks` with the `DetailedTask` (what `tasks/get` would answer),
//!   only to streams of the principal that owns the task.
//! - A stream that starts following tasks gets their current state at once (a change made
//!   before it registered is not lost).
//! - A bus gap (or a lagging signal queue) re-reads every followed task and pokes every runner:
//!   a change may have been missed.
//! - Every tick, followed tasks whose runner's node left the fleet are failed (so streams hear
//!   it even when nobody polls), and this node renews its incarnation record.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use mcp_fleet_protocol::sse::NotificationFrame;
use mcp_fleet_protocol::tasks::TASK_NOTIFICATION;
use tokio::sync::mpsc;

use crate::shutdown::Shutdown;

use super::record::TaskRecord;
use super::shared::Tasks;

/// Bound of the signal queue (intake → this task): past it signals are dropped and one full
/// refresh replaces them (never silence).
const SIGNAL_QUEUE: usize = 4096;

/// How often the loop checks followed tasks' runners and renews its incarnation record.
const LIVENESS_TICK: Duration = Duration::from_millis(250);

/// What the intake and the listen method tell the tasks' loop.
#[derive(Debug)]
pub(crate) enum TaskSignal {
    /// Task `id` changed (published by node `origin`).
    Changed { id: String, origin: String },
    /// A stream started following these tasks.
    Followed(Vec<String>),
    /// Events may have been lost.
    RefreshAll,
}

/// The sending side (cheap clone): never blocks, never fails silently.
#[derive(Clone, Debug)]
pub(crate) struct TaskSignals {
    tx: mpsc::Sender<TaskSignal>,
    overflowed: Arc<AtomicBool>,
}

impl TaskSignals {
    pub(crate) fn new() -> (TaskSignals, mpsc::Receiver<TaskSignal>) {
        let (tx, rx) = mpsc::channel(SIGNAL_QUEUE);
        (TaskSignals { tx, overflowed: Arc::default() }, rx)
    }

    /// Queue `signal`; a full queue turns into one refresh of everything.
    pub(crate) fn send(&self, signal: TaskSignal) {
        if self.tx.try_send(signal).is_err() {
            self.overflowed.store(true, Ordering::Release);
        }
    }

    fn take_overflow(&self) -> bool {
        self.overflowed.swap(false, Ordering::AcqRel)
    }
}

/// What the loop remembers of a followed task: its runner, while it has one to watch.
type Watched = HashMap<String, TaskRecord>;

impl Tasks {
    /// The loop (see the module docs), until `stop`.
    pub(crate) async fn follow(
        self: Arc<Self>,
        signals: TaskSignals,
        mut rx: mpsc::Receiver<TaskSignal>,
        mut stop: Shutdown,
    ) {
        let mut watched = Watched::new();
        let mut tick = tokio::time::interval(self.liveness_tick());
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let renew_every = self.options.ttl / 4;
        // Renewed at the first tick (in case the write at start failed), then every quarter TTL.
        let mut renewed: Option<tokio::time::Instant> = None;
        loop {
            tokio::select! {
                signal = rx.recv() => match signal {
                    Some(signal) => self.handle(signal, &mut watched).await,
                    None => return,
                },
                _ = tick.tick() => {
                    self.check_followed(&mut watched).await;
                    if renewed.is_none_or(|at| at.elapsed() >= renew_every) {
                        renewed = Some(tokio::time::Instant::now());
                        self.renew_run(None).await;
                    }
                }
                () = stop.recv() => return,
            }
            if signals.take_overflow() {
                tracing::warn!("task signals overflowed: refreshing every followed task");
                self.handle(TaskSignal::RefreshAll, &mut watched).await;
            }
        }
    }

    /// How often followed tasks' runners are checked: often next to the membership TTL (a
    /// death shows there a TTL after it happened), cheap (reads only for tasks whose node left).
    fn liveness_tick(&self) -> Duration {
        LIVENESS_TICK
    }

    async fn handle(&self, signal: TaskSignal, watched: &mut Watched) {
        match signal {
            TaskSignal::Changed { id, origin } => {
                // A change made here already reached a runner here directly.
                if origin != self.node {
                    self.running.poke(&id);
                }
                if self.router.follows_task(&id) {
                    self.refresh(&id, watched).await;
                }
            }
            TaskSignal::Followed(ids) => {
                for id in ids {
                    self.refresh(&id, watched).await;
                }
            }
            TaskSignal::RefreshAll => {
                self.running.poke_all();
                for id in self.router.followed_tasks() {
                    self.refresh(&id, watched).await;
                }
            }
        }
    }

    /// Read task `id` and hand its current state to the streams following it.
    async fn refresh(&self, id: &str, watched: &mut Watched) {
        let record = match self.store.load(id).await {
            Ok(Some(record)) => record,
            Ok(None) => return drop(watched.remove(id)),
            Err(e) => return tracing::warn!(task = id, error = %e, "could not read a followed task"),
        };
        self.notify_followers(&record);
        if record.status.is_terminal() || record.owner.is_none() {
            watched.remove(id);
        } else {
            watched.insert(id.to_owned(), record);
        }
    }

    /// `notifications/tasks` for `record`, to the streams of its principal that follow it.
    fn notify_followers(&self, record: &TaskRecord) {
        let frame = Arc::new(NotificationFrame::with_params(TASK_NOTIFICATION, &record.detailed(), None));
        self.router.deliver_task(&record.id, &record.principal, frame);
    }

    /// Fail the followed tasks whose runner is gone (their streams then hear it).
    async fn check_followed(&self, watched: &mut Watched) {
        watched.retain(|id, _| self.router.follows_task(id));
        let candidates: Vec<TaskRecord> = watched.values().cloned().collect();
        for record in candidates {
            if let Some((why, node)) = self.orphaned(&record).await {
                let id = record.id.clone();
                let now = self.reap(record, why, &node).await;
                if now.status.is_terminal() {
                    watched.remove(&id);
                }
            }
        }
    }
}

/// Where the intake sends task events and gaps.
impl crate::listen::TaskEvents for TaskSignals {
    fn changed(&self, id: String, origin: String) {
        self.send(TaskSignal::Changed { id, origin });
    }

    fn refresh_all(&self) {
        self.send(TaskSignal::RefreshAll);
    }
}
