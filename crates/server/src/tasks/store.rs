//! [`TaskStore`]: the fleet's task records on the bus's [`Keyspace`] contract — the same on
//! memory, Redis and NATS JetStream, so any replica reads any task.
//!
//! One keyspace, `tasks`, with the tasks' TTL (a written key lives a TTL from its last write; a
//! record past its own TTL counted from creation is reported expired by the reader):
//! - `t.<id>` → the [`TaskRecord`], changed only by compare-and-set (two replicas changing one
//!   task at once never lose either change).
//! - the slot set `p.<sha256>` → a principal's unfinished tasks: one slot per task id, taken
//!   at creation with the task's TTL, given back at the terminal transition (whichever replica
//!   makes it); a task that never gets there (its node died, it was detached and never read
//!   again, a terminal write's reply was lost) frees its slot when it expires.
//! - `n.<sha256>` → the incarnation a node currently runs as (and while it drains, until when),
//!   so a task whose node restarted under the same id is known orphaned, and one whose node
//!   drains is not, until the drain's deadline.

use std::sync::Arc;
use std::time::Duration;

use mcp_fleet_bus::{BusError, Keyspace};
use mcp_fleet_protocol::tasks::TaskStatus;

use super::record::{TaskRecord, is_task_id};

/// Most attempts of one compare-and-set change before it reports contention.
const UPDATE_ATTEMPTS: usize = 16;

/// The outcome of [`TaskStore::update`].
#[derive(Debug, Clone)]
pub(crate) struct Updated {
    /// The record now.
    pub(crate) record: TaskRecord,
    /// Whether this update wrote it.
    pub(crate) changed: bool,
    /// Whether it was already terminal before (so the change, if any, made it terminal only
    /// when this is `false`).
    pub(crate) was_terminal: bool,
    /// Its status before (the audit trail records transitions).
    pub(crate) previous: TaskStatus,
}

/// What a node runs as: its incarnation, and while it drains, until when its tasks may still
/// finish (its membership is gone by then; its tasks are not orphaned before that).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct RunRecord {
    pub(crate) run: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) draining_until_ms: Option<u64>,
}

/// A principal at its limit of unfinished tasks.
#[derive(Debug, thiserror::Error)]
#[error("Too many unfinished tasks for this principal (limit {0}); wait for one to finish or cancel one")]
pub(crate) struct TaskLimit(pub(crate) usize);

/// The fleet's task records (a cheap clone).
#[derive(Clone)]
pub(crate) struct TaskStore {
    keys: Arc<dyn Keyspace>,
    max_per_principal: usize,
    /// A task's TTL from its creation: how long its slot lives unless given back.
    task_ttl: Duration,
}

impl TaskStore {
    pub(crate) fn new(keys: Arc<dyn Keyspace>, max_per_principal: usize, task_ttl: Duration) -> Self {
        TaskStore { keys, max_per_principal, task_ttl }
    }

    /// Store a new task; `false` when its id is taken (draw another).
    pub(crate) async fn create(&self, record: &TaskRecord) -> Result<bool, BusError> {
        Ok(self.keys.create(&key(&record.id), encode(record)).await?.is_some())
    }

    /// The task `id`, if the store holds it (expired or not: the caller decides).
    pub(crate) async fn load(&self, id: &str) -> Result<Option<TaskRecord>, BusError> {
        if !is_task_id(id) {
            return Ok(None);
        }
        let Some(found) = self.keys.get(&key(id)).await? else { return Ok(None) };
        Ok(decode(id, &found.value))
    }

    /// Change task `id` with `change`, which answers whether it changed anything
    /// (compare-and-set, retried on contention); `None` when the task is gone.
    pub(crate) async fn update(
        &self,
        id: &str,
        mut change: impl FnMut(&mut TaskRecord) -> bool,
    ) -> Result<Option<Updated>, BusError> {
        if !is_task_id(id) {
            return Ok(None);
        }
        for _ in 0..UPDATE_ATTEMPTS {
            let Some(found) = self.keys.get(&key(id)).await? else { return Ok(None) };
            let Some(mut record) = decode(id, &found.value) else { return Ok(None) };
            let (was_terminal, previous) = (record.status.is_terminal(), record.status);
            if !change(&mut record) {
                return Ok(Some(Updated { record, changed: false, was_terminal, previous }));
            }
            if self.keys.compare_and_set(&key(id), found.revision, encode(&record)).await?.is_some() {
                return Ok(Some(Updated { record, changed: true, was_terminal, previous }));
            }
        }
        Err(BusError::Backend(format!("task {id} kept changing under {UPDATE_ATTEMPTS} updates")))
    }

    /// Take a slot for task `id` among `principal`'s (fleet-wide), for the task's TTL;
    /// `Ok(Err(_))` at the limit. A server without authentication (`principal` empty) has no
    /// per-principal limit.
    pub(crate) async fn admit(&self, principal: &str, id: &str) -> Result<Result<(), TaskLimit>, BusError> {
        if principal.is_empty() {
            return Ok(Ok(()));
        }
        let held = self.keys.hold_slot(&hashed("p", principal), id, self.task_ttl, self.max_per_principal).await?;
        Ok(if held { Ok(()) } else { Err(TaskLimit(self.max_per_principal)) })
    }

    /// Give back task `id`'s slot among `principal`'s (the task finished).
    pub(crate) async fn release(&self, principal: &str, id: &str) -> Result<(), BusError> {
        if principal.is_empty() {
            return Ok(());
        }
        self.keys.release_slot(&hashed("p", principal), id).await.map(drop)
    }

    /// Record what `node` runs as now.
    pub(crate) async fn set_run(&self, node: &str, run: &RunRecord) -> Result<(), BusError> {
        // A struct of a string and a number always serializes.
        self.keys.put(&hashed("n", node), serde_json::to_vec(run).unwrap_or_default()).await.map(drop)
    }

    /// What `node` last recorded, if anything readable.
    pub(crate) async fn run_of(&self, node: &str) -> Result<Option<RunRecord>, BusError> {
        let found = self.keys.get(&hashed("n", node)).await?;
        Ok(found.and_then(|r| serde_json::from_slice(&r.value).ok()))
    }
}

fn key(id: &str) -> String {
    format!("t.{id}")
}

/// A keyspace key for any string: `<prefix>.` and its hex SHA-256.
fn hashed(prefix: &str, value: &str) -> String {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(value.as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("{prefix}.{hex}")
}

fn encode(record: &TaskRecord) -> Vec<u8> {
    // A plain struct of strings, numbers, maps and JSON values always serializes.
    serde_json::to_vec(record).unwrap_or_default()
}

fn decode(id: &str, bytes: &[u8]) -> Option<TaskRecord> {
    let record = serde_json::from_slice(bytes).ok();
    if record.is_none() {
        tracing::warn!(task = id, "undecodable task record: treated as unknown");
    }
    record
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tasks::record::{NewTask, new_task_id};
    use mcp_fleet_bus::{MemoryBus, ServerEventBus};

    async fn store(limit: usize) -> TaskStore {
        let keys = MemoryBus::new().keyspace("tasks", Duration::from_secs(60)).await.unwrap();
        TaskStore::new(keys, limit, Duration::from_secs(30))
    }

    fn record() -> TaskRecord {
        let new =
            NewTask { id: new_task_id(), tool: "t", principal: "p".into(), owner: None, ttl_ms: 1000, poll_ms: 100 };
        TaskRecord::new(new, 1)
    }

    #[tokio::test]
    async fn records_are_created_once_and_changed_by_compare_and_set() {
        let store = store(10).await;
        let r = record();
        assert!(store.create(&r).await.unwrap());
        assert!(!store.create(&r).await.unwrap(), "the id is taken");
        assert_eq!(store.load(&r.id).await.unwrap(), Some(r.clone()));
        let done = store.update(&r.id, |t| t.cancel(2)).await.unwrap().unwrap();
        assert!(done.changed && !done.was_terminal);
        let again = store.update(&r.id, |t| t.cancel(3)).await.unwrap().unwrap();
        assert!(!again.changed && again.was_terminal);
        assert!(store.load("not-a-task-id").await.unwrap().is_none());
        assert!(store.update(&new_task_id(), |_| true).await.unwrap().is_none());
    }

    #[tokio::test]
    async fn principals_hold_at_most_their_limit_of_tasks() {
        let store = store(2).await;
        let ids: Vec<String> = (0..3).map(|_| new_task_id()).collect();
        assert!(store.admit("p", &ids[0]).await.unwrap().is_ok());
        assert!(store.admit("p", &ids[1]).await.unwrap().is_ok());
        assert!(store.admit("p", &ids[2]).await.unwrap().is_err());
        assert!(store.admit("q", &ids[2]).await.unwrap().is_ok(), "another principal has its own");
        store.release("p", &ids[0]).await.unwrap();
        store.release("p", &ids[0]).await.unwrap();
        assert!(store.admit("p", &ids[2]).await.unwrap().is_ok());
        assert!(store.admit("p", &new_task_id()).await.unwrap().is_err(), "released once, freed one");
        for id in &ids {
            assert!(store.admit("", id).await.unwrap().is_ok(), "no authentication, no per-principal limit");
        }
        let run = RunRecord { run: "r1".into(), draining_until_ms: Some(9) };
        store.set_run("node a", &run).await.unwrap();
        assert_eq!(store.run_of("node a").await.unwrap(), Some(run));
        assert_eq!(store.run_of("node b").await.unwrap(), None);
    }
}
