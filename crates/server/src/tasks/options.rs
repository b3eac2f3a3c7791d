//! [`TaskOptions`] (per handler: the tasks' lifetime, polling hint, bounds and timing), with
//! their defaults. Per tool, whether calls may become tasks is the catalog's
//! [`TaskSupport`](crate::catalog::TaskSupport).

use std::time::Duration;

/// Options of the tasks extension (set with
/// [`HandlerOptions::tasks`](crate::HandlerOptions::tasks)). Every node of a fleet must use the
/// same: they shape the task store's keyspace and what clients are told.
///
/// ```
/// use std::time::Duration;
/// use mcp_fleet_server::{HandlerOptions, tasks::TaskOptions};
/// let options = HandlerOptions::default().tasks(TaskOptions::default().ttl(Duration::from_secs(600)).max_tasks_per_principal(20));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskOptions {
    pub(crate) enabled: bool,
    pub(crate) ttl: Duration,
    pub(crate) poll_interval: Duration,
    pub(crate) create_after: Duration,
    pub(crate) status_interval: Duration,
    pub(crate) max_result_bytes: usize,
    pub(crate) max_tasks_per_principal: usize,
}

/// How long an expired task stays readable as expired (at most; a TTL's worth when shorter).
pub(crate) const EXPIRED_GRACE: Duration = Duration::from_secs(60);

impl Default for TaskOptions {
    fn default() -> Self {
        TaskOptions {
            enabled: true,
            ttl: Duration::from_secs(60 * 60),
            poll_interval: Duration::from_secs(1),
            create_after: Duration::from_millis(100),
            status_interval: Duration::from_millis(500),
            max_result_bytes: 512 * 1024,
            max_tasks_per_principal: 100,
        }
    }
}

impl TaskOptions {
    /// The extension off: not advertised, no task store, task-supporting tools answer
    /// synchronously (and `Required` ones `-32021`). Default: on (when the bus has keyspaces;
    /// NATS core mode has none, and serves without tasks, with a warning).
    pub fn disabled() -> Self {
        TaskOptions { enabled: false, ..TaskOptions::default() }
    }

    /// A task's time to live from its creation (`ttlMs`): the store forgets it after this, and
    /// a task still running then fails. At most a year minus a minute (the store keeps an
    /// expired task a minute more, and nothing past a year). Default 1 h.
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = ttl;
        self
    }

    /// The `pollIntervalMs` clients are asked to keep between two `tasks/get`. Default 1 s.
    pub fn poll_interval(mut self, every: Duration) -> Self {
        self.poll_interval = every;
        self
    }

    /// How long a task-supporting call may run before it becomes a task; one that answers
    /// sooner is answered synchronously (the spec's immediate-result shortcut). Default 100 ms.
    pub fn create_after(mut self, after: Duration) -> Self {
        self.create_after = after;
        self
    }

    /// The shortest time between two writes of a running task's status message (each
    /// `progress` with a message, coalesced), so a chatty handler does not flood the store and
    /// the bus. Default 500 ms.
    pub fn status_interval(mut self, every: Duration) -> Self {
        self.status_interval = every;
        self
    }

    /// The largest result (or error) a task keeps, encoded; a task whose result is larger
    /// fails with `-32603` saying so. The whole record must fit the broker's message limit
    /// (NATS: 1 MB by default). Default 512 KiB.
    pub fn max_result_bytes(mut self, bytes: usize) -> Self {
        self.max_result_bytes = bytes;
        self
    }

    /// Unfinished tasks one authenticated principal may hold across the fleet; past it a call
    /// that would become a task gets 429 with `-32603`. A task's slot is given back when it
    /// finishes, or, if it never does (its replica died, nobody read it again), at its TTL.
    /// Default 100.
    pub fn max_tasks_per_principal(mut self, tasks: usize) -> Self {
        self.max_tasks_per_principal = tasks;
        self
    }

    /// How long the store keeps a task's record: its TTL, then a grace period in which readers
    /// are told the task expired rather than that it never existed.
    pub(crate) fn kept_for(&self) -> Duration {
        self.ttl + self.ttl.min(EXPIRED_GRACE)
    }

    /// Refuse settings no handler can run with.
    pub(crate) fn validate(&self) -> Result<(), &'static str> {
        // The store must be able to keep a record that long: a keyspace refuses a TTL past
        // `MAX_TTL`, which opening the store would take for a bus without keyspaces and so
        // turn the extension off without a word.
        if self.ttl < Duration::from_secs(1) || self.kept_for() > mcp_fleet_bus::MAX_TTL {
            return Err(
                "tasks.ttl must be from 1 s to a year minus a minute (an expired task stays readable a minute more)",
            );
        }
        if self.poll_interval.is_zero() || self.status_interval.is_zero() {
            return Err("tasks.poll_interval and tasks.status_interval must be positive");
        }
        if self.max_result_bytes == 0 || self.max_tasks_per_principal == 0 {
            return Err("tasks.max_result_bytes and tasks.max_tasks_per_principal must be positive");
        }
        Ok(())
    }
}
