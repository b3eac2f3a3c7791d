//! [`Tasks`]: one node's part of the fleet's tasks — the store, the runners of this node, the
//! bus events that tell the fleet a task changed, and the judgement of whether a task's runner
//! is still alive.
//!
//! Every change to a record goes through [`Tasks::change`], which publishes one
//! [`EventKind::TaskChanged`](mcp_fleet_bus::EventKind::TaskChanged) event ("read it again")
//! and, on the transition to a terminal status, gives back the principal's slot and records
//! the metrics — whichever replica makes the change.
//!
//! A task's runner is alive while its node is a member of the fleet under the incarnation that
//! started it; every reader checks, so a task whose node died turns `failed` on the first read
//! after the node's membership expired (within the membership TTL of the death), wherever that
//! read happens. The node itself checks its own runners too (a runner that stopped).

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use mcp_fleet_bus::{BusError, Change, ServerEventBus};
use mcp_fleet_protocol::RpcError;
use mcp_fleet_protocol::tasks::TaskStatus;
use mcp_fleet_protocol::types::CallToolResult;
use serde_json::Value;
use tokio::time::Instant;

use super::follow::TaskSignals;
use super::options::TaskOptions;
use super::record::{NewTask, Owner, TaskRecord};
use super::running::Running;
use super::store::{RunRecord, TaskStore, Updated};
use crate::audit::{AuditTrail, TaskTransition};
use crate::fleet::FleetWatch;
use crate::listen::ListenRouter;
use crate::metrics::Metrics;

/// How long a membership snapshot or an incarnation read is reused by liveness checks.
const LIVENESS_CACHE: Duration = Duration::from_millis(250);

/// Why a task is failed without its runner's word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Orphaned {
    /// Its node left the fleet (its membership expired, or it left).
    NodeLost,
    /// Its node restarted under the same id.
    NodeRestarted,
    /// Its runner on this node stopped.
    RunnerStopped,
    /// This node drained past its shutdown deadline.
    Drained,
    /// It outlived its TTL.
    Expired,
}

impl Orphaned {
    /// The metrics label (one of the metrics' `ORPHANED_REASONS`, registered in advance).
    pub(crate) fn label(self) -> &'static str {
        let [lost, restarted, stopped, drained, expired] = crate::metrics::ORPHANED_REASONS;
        match self {
            Orphaned::NodeLost => lost,
            Orphaned::NodeRestarted => restarted,
            Orphaned::RunnerStopped => stopped,
            Orphaned::Drained => drained,
            Orphaned::Expired => expired,
        }
    }

    /// The error the task fails with: it says what happened, and where.
    pub(crate) fn error(self, node: &str) -> RpcError {
        let message = match self {
            Orphaned::NodeLost => format!("The replica running this task ({node}) left the fleet before it finished"),
            Orphaned::NodeRestarted => format!("The replica running this task ({node}) restarted before it finished"),
            Orphaned::RunnerStopped => format!("The task's runner on replica {node} stopped before it finished"),
            Orphaned::Drained => format!("The replica running this task ({node}) shut down before it finished"),
            Orphaned::Expired => "The task did not finish within its TTL".to_owned(),
        };
        RpcError::internal(message).with_data(serde_json::json!({"reason": self.label(), "node": node}))
    }
}

/// See the module docs. Shared by the handler, its methods and every runner of this node.
pub(crate) struct Tasks {
    pub(crate) options: TaskOptions,
    pub(crate) store: TaskStore,
    bus: Arc<dyn ServerEventBus>,
    /// This node's id and incarnation.
    pub(crate) node: String,
    pub(crate) run: String,
    pub(crate) running: Running,
    pub(crate) router: ListenRouter,
    /// To this node's tasks' loop (listen streams starting to follow tasks).
    pub(crate) signals: TaskSignals,
    fleet: Arc<FleetWatch>,
    pub(crate) metrics: Metrics,
    audit: AuditTrail,
    /// Until one membership TTL after start, this node's view of the fleet may still be filling
    /// in: it judges no other node dead before then.
    trusted_from: Instant,
    /// Set once the node drains: no new tasks.
    draining: AtomicBool,
    /// The live members as last read, and when (std mutexes: read or replaced, never across
    /// `.await`).
    members: Mutex<Option<(Instant, HashSet<String>)>>,
    /// Node → its recorded incarnation, and when it was read.
    runs: Mutex<HashMap<String, (Option<RunRecord>, Instant)>>,
}

/// What [`Tasks::open`] needs.
pub(crate) struct TaskParts {
    pub(crate) bus: Arc<dyn ServerEventBus>,
    pub(crate) router: ListenRouter,
    pub(crate) signals: TaskSignals,
    pub(crate) fleet: Arc<FleetWatch>,
    pub(crate) metrics: Metrics,
    pub(crate) membership_ttl: Duration,
    /// Where task transitions are recorded.
    pub(crate) audit: AuditTrail,
}

impl Tasks {
    /// Open the task store on the bus; `None` when tasks are off, or the bus keeps no state
    /// (NATS core mode: a warning, and tools answer synchronously).
    pub(crate) async fn open(options: &TaskOptions, parts: TaskParts) -> Result<Option<Arc<Tasks>>, BusError> {
        if !options.enabled {
            return Ok(None);
        }
        let records = match parts.bus.keyspace("tasks", options.kept_for()).await {
            Ok(keys) => keys,
            Err(BusError::Config(why)) => {
                tracing::warn!(%why, "the tasks extension is off: the bus has no keyspace for the task store");
                return Ok(None);
            }
            Err(e) => return Err(e),
        };
        let store = TaskStore::new(records, options.max_tasks_per_principal, options.ttl);
        let node = parts.bus.node_id().to_owned();
        let run = format!("{:016x}", rand::random::<u64>());
        // Not fatal: the tasks' loop records it again at its first tick (without it, the
        // membership alone tells whether this node runs its tasks).
        if let Err(e) = store.set_run(&node, &RunRecord { run: run.clone(), draining_until_ms: None }).await {
            tracing::warn!(error = %e, "could not record this node's task incarnation yet");
        }
        Ok(Some(Arc::new(Tasks {
            options: options.clone(),
            store,
            bus: parts.bus,
            node,
            run,
            running: Running::default(),
            router: parts.router,
            signals: parts.signals,
            fleet: parts.fleet,
            metrics: parts.metrics,
            audit: parts.audit,
            trusted_from: Instant::now() + parts.membership_ttl,
            draining: AtomicBool::new(false),
            members: Mutex::default(),
            runs: Mutex::default(),
        })))
    }

    /// Create task `id` for `principal` running `tool`, durably: once this returns, a
    /// `tasks/get` on any replica finds it ("a server MUST NOT return `CreateTaskResult` until
    /// the task is durably created"). Owned by this node, unless `detached`.
    pub(crate) async fn create(
        &self,
        id: &str,
        tool: &str,
        principal: &str,
        detached: bool,
    ) -> Result<TaskRecord, RpcError> {
        if self.draining.load(Ordering::Acquire) {
            return Err(RpcError::internal("This replica is shutting down; retry on another replica"));
        }
        let store_error = |e: BusError| RpcError::internal(format!("The task store is unavailable: {e}"));
        if let Err(limit) = self.store.admit(principal, id).await.map_err(store_error)? {
            return Err(RpcError::internal(limit.to_string()).with_status(http::StatusCode::TOO_MANY_REQUESTS));
        }
        // Made after the slot is taken, so the slot (the task's TTL from the admission) never
        // frees before the task reads as expired.
        let owner = (!detached).then(|| Owner { node: self.node.clone(), run: self.run.clone() });
        let new = NewTask {
            id: id.to_owned(),
            tool,
            principal: principal.to_owned(),
            owner,
            ttl_ms: millis(self.options.ttl),
            poll_ms: millis(self.options.poll_interval),
        };
        let record = TaskRecord::new(new, now_ms());
        let created = self.store.create(&record).await;
        if !matches!(created, Ok(true)) {
            let _ = self.store.release(principal, id).await;
            return Err(match created {
                Err(e) => store_error(e),
                // 128 random bits collided: the runner's next id will not.
                _ => RpcError::internal("A task id collided; retry"),
            });
        }
        self.metrics.tasks.created.inc();
        self.audit_transition(&record, None);
        Ok(record)
    }

    /// Change task `id` (see [`TaskStore::update`]); a change is published to the fleet, and
    /// a transition to a terminal status releases the principal's slot and is counted here.
    pub(crate) async fn change(
        &self,
        id: &str,
        change: impl FnMut(&mut TaskRecord) -> bool,
    ) -> Result<Option<Updated>, BusError> {
        let updated = self.store.update(id, change).await?;
        if let Some(u) = updated.as_ref().filter(|u| u.changed) {
            if u.previous != u.record.status {
                self.audit_transition(&u.record, Some(u.previous));
            }
            if !u.was_terminal && u.record.status.is_terminal() {
                if let Err(e) = self.store.release(&u.record.principal, id).await {
                    tracing::warn!(error = %e, "could not release a principal's task slot; it frees up at the task's expiry");
                }
                let took = u.record.updated_ms.saturating_sub(u.record.created_ms);
                self.metrics.tasks.finished(u.record.status, Duration::from_millis(took));
            }
            self.publish(id).await;
        }
        Ok(updated)
    }

    /// Record `record`'s transition (from `previous`; `None`: created) in the audit trail.
    fn audit_transition(&self, record: &TaskRecord, previous: Option<TaskStatus>) {
        self.audit.task(TaskTransition {
            task_id: &record.id,
            tool: &record.tool,
            principal: &record.principal,
            previous: previous.map(TaskStatus::as_str),
            status: record.status.as_str(),
            created_ms: record.created_ms,
            now_ms: record.updated_ms,
        });
    }

    /// A tool result as a task keeps it — what the call would have answered (`resultType:
    /// "complete"`) — or the `-32603` a result over [`TaskOptions::max_result_bytes`] fails with.
    pub(crate) fn stored_result(&self, result: CallToolResult) -> Result<Value, RpcError> {
        let mut value = match serde_json::to_value(result) {
            Ok(Value::Object(obj)) => obj,
            _ => return Err(RpcError::internal("Handler result is not a JSON object")),
        };
        value.insert("resultType".into(), serde_json::json!("complete"));
        let value = Value::Object(value);
        let size = serde_json::to_vec(&value).map_or(0, |b| b.len());
        let limit = self.options.max_result_bytes;
        if size > limit {
            return Err(RpcError::internal(format!(
                "The task's result is {size} bytes, over this server's limit of {limit}"
            )));
        }
        Ok(value)
    }

    /// Tell the fleet that task `id` changed. A lost event costs latency only: pollers read the
    /// store, runners re-read on a slow timer, followers on the next gap.
    pub(crate) async fn publish(&self, id: &str) {
        if let Err(e) = self.bus.publish(Change::task(id)).await {
            self.metrics.publish_failures.inc();
            tracing::warn!(task = id, error = %e, "could not announce a task change on the bus");
        }
    }

    /// Why `record`'s runner is gone, if it is (only unfinished tasks with an owner have one).
    pub(crate) async fn orphaned(&self, record: &TaskRecord) -> Option<(Orphaned, String)> {
        if record.status.is_terminal() {
            return None;
        }
        let owner = record.owner.as_ref()?;
        let lost = |why: Orphaned| Some((why, owner.node.clone()));
        if owner.node == self.node {
            return if owner.run != self.run {
                lost(Orphaned::NodeRestarted)
            } else if !self.running.contains(&record.id) {
                lost(Orphaned::RunnerStopped)
            } else {
                None
            };
        }
        if Instant::now() < self.trusted_from {
            return None;
        }
        if self.is_member(&owner.node) {
            let restarted = self.run_of(&owner.node).await.is_some_and(|r| r.run != owner.run);
            return if restarted { lost(Orphaned::NodeRestarted) } else { None };
        }
        // Gone from the membership: read its record afresh. A draining node left already; its
        // tasks may still finish until its deadline.
        match self.store.run_of(&owner.node).await.ok().flatten() {
            Some(r) if r.run != owner.run => lost(Orphaned::NodeRestarted),
            Some(r) if r.draining_until_ms.is_some_and(|until| now_ms() < until) => None,
            _ => lost(Orphaned::NodeLost),
        }
    }

    /// Fail `record` because its runner is gone; the record as it is now.
    pub(crate) async fn reap(&self, record: TaskRecord, why: Orphaned, node: &str) -> TaskRecord {
        let error = why.error(node);
        match self.change(&record.id, |t| t.fail(&error, now_ms())).await {
            Ok(Some(updated)) => {
                if updated.changed {
                    self.metrics.tasks.orphaned(why.label());
                    tracing::warn!(task = %record.id, reason = why.label(), node, "failed an orphaned task");
                }
                updated.record
            }
            Ok(None) => record,
            Err(e) => {
                tracing::warn!(task = %record.id, error = %e, "could not fail an orphaned task; the next read retries");
                let mut shown = record;
                shown.fail(&error, now_ms());
                shown
            }
        }
    }

    /// `record` as a reader should see it: failed if its runner is gone.
    pub(crate) async fn settle(&self, record: TaskRecord) -> TaskRecord {
        match self.orphaned(&record).await {
            Some((why, node)) => self.reap(record, why, &node).await,
            None => record,
        }
    }

    /// The drain begins (before this node leaves the membership): no new tasks, and the fleet
    /// is told that this node's tasks may still finish until `deadline` from now.
    pub(crate) async fn begin_drain(&self, deadline: Duration) {
        self.draining.store(true, Ordering::Release);
        if self.running.len() > 0 {
            self.renew_run(Some(now_ms() + millis(deadline))).await;
        }
    }

    /// Wait up to `deadline` for this node's runners to finish, then fail the rest (saying this
    /// replica shut down) and stop their runners.
    pub(crate) async fn drain(&self, deadline: Duration) {
        if tokio::time::timeout(deadline, self.running.idle()).await.is_ok() {
            return;
        }
        let left = self.running.stop_all();
        tracing::warn!(tasks = left.len(), "shutting down with running tasks: failing them");
        for id in left {
            let error = Orphaned::Drained.error(&self.node);
            if let Ok(Some(u)) = self.change(&id, |t| t.fail(&error, now_ms())).await
                && u.changed
            {
                self.metrics.tasks.orphaned(Orphaned::Drained.label());
            }
        }
    }

    /// Whether `node` is a live member of the fleet as this node sees it.
    fn is_member(&self, node: &str) -> bool {
        let mut members = self.members.lock().unwrap_or_else(PoisonError::into_inner);
        if members.as_ref().is_none_or(|(at, _)| at.elapsed() > LIVENESS_CACHE) {
            let live = self.fleet.status().members.into_iter().map(|m| m.node_id).collect();
            *members = Some((Instant::now(), live));
        }
        members.as_ref().is_some_and(|(_, live)| live.contains(node))
    }

    /// What `node` recorded last (cached briefly); `None` when unknown or unreadable (then the
    /// membership alone decides).
    async fn run_of(&self, node: &str) -> Option<RunRecord> {
        let cached = self.runs.lock().unwrap_or_else(PoisonError::into_inner).get(node).cloned();
        if let Some((run, _)) = cached.filter(|(_, at)| at.elapsed() <= LIVENESS_CACHE) {
            return run;
        }
        let run = self.store.run_of(node).await.ok().flatten();
        self.runs.lock().unwrap_or_else(PoisonError::into_inner).insert(node.to_owned(), (run.clone(), Instant::now()));
        run
    }

    /// Renew this node's incarnation record (it expires with the tasks' TTL), saying until
    /// when it drains, if it does.
    pub(crate) async fn renew_run(&self, draining_until_ms: Option<u64>) {
        if draining_until_ms.is_none() && self.draining.load(Ordering::Acquire) {
            return; // the drain's record says until when; keep it
        }
        let record = RunRecord { run: self.run.clone(), draining_until_ms };
        if let Err(e) = self.store.set_run(&self.node, &record).await {
            tracing::warn!(error = %e, "could not renew this node's task incarnation record");
        }
    }
}

/// Milliseconds since the Unix epoch.
pub(crate) fn now_ms() -> u64 {
    mcp_fleet_bus::now_ms()
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}
