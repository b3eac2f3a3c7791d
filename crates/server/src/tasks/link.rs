//! [`TaskLink`]: what a handler's [`CallContext`](crate::CallContext) knows of the task its call
//! may become — whether it may become one, whether it asked to
//! ([`CallContext::run_as_task`](crate::CallContext::run_as_task)), the task once it exists,
//! and the latest status message its progress reports left for the runner to write.

use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::{Notify, watch};

use super::Tasks;

/// Where the call stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Phase {
    /// Running synchronously: the client still waits for the answer.
    Sync,
    /// The handler asked to become a task (`detached`: its work lives elsewhere).
    Asked { detached: bool },
    /// A task (`detached`: completed by a [`TaskHandle`](crate::tasks::TaskHandle), not by the
    /// handler's own answer).
    Task { id: String, detached: bool },
    /// It could not become a task (the store refused); the call ends with that error.
    Refused,
}

/// The link between one call's handler and its runner.
pub(crate) struct TaskLink {
    /// Whether the call may become a task at all (the tool supports it and the client declared
    /// the extension on this request).
    pub(crate) allowed: bool,
    pub(crate) phase: watch::Sender<Phase>,
    /// The newest status message not yet written. A std mutex: set or taken, never across
    /// `.await`.
    status: Mutex<Option<String>>,
    /// Rung when `status` is set.
    pub(crate) status_set: Notify,
    pub(crate) tasks: Arc<Tasks>,
}

impl std::fmt::Debug for TaskLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskLink").field("allowed", &self.allowed).field("phase", &*self.phase.borrow()).finish()
    }
}

impl TaskLink {
    pub(crate) fn new(allowed: bool, tasks: Arc<Tasks>) -> Self {
        TaskLink {
            allowed,
            phase: watch::channel(Phase::Sync).0,
            status: Mutex::default(),
            status_set: Notify::new(),
            tasks,
        }
    }

    /// Become a task now (see `CallContext::run_as_task`); the task's id once it exists.
    pub(crate) async fn become_task(&self, detached: bool) -> Option<String> {
        if !self.allowed {
            return None;
        }
        let mut rx = self.phase.subscribe();
        self.phase.send_if_modified(|phase| match phase {
            Phase::Sync => {
                *phase = Phase::Asked { detached };
                true
            }
            Phase::Task { detached: was, .. } if detached && !*was => {
                *was = true;
                true
            }
            _ => false,
        });
        let settled = rx.wait_for(|p| matches!(p, Phase::Task { .. } | Phase::Refused)).await.ok()?;
        match &*settled {
            Phase::Task { id, .. } => Some(id.clone()),
            _ => None,
        }
    }

    /// The task's id, once the call is one.
    pub(crate) fn task_id(&self) -> Option<String> {
        match &*self.phase.borrow() {
            Phase::Task { id, .. } => Some(id.clone()),
            _ => None,
        }
    }

    /// Whether the task's completion belongs to a handle rather than the handler's answer.
    pub(crate) fn is_detached(&self) -> bool {
        matches!(&*self.phase.borrow(), Phase::Task { detached: true, .. })
    }

    /// A progress report of the handler: once the call is a task, it becomes the task's status
    /// message (`true`); before, it is the request's own notification (`false`).
    pub(crate) fn report(&self, progress: f64, total: Option<f64>, message: Option<&str>) -> bool {
        if !matches!(&*self.phase.borrow(), Phase::Task { .. }) {
            return false;
        }
        let text = match (message, total) {
            (Some(message), _) => message.to_owned(),
            (None, Some(total)) => format!("{progress}/{total}"),
            (None, None) => format!("{progress}"),
        };
        *self.status.lock().unwrap_or_else(PoisonError::into_inner) = Some(text);
        self.status_set.notify_one();
        true
    }

    /// The newest unwritten status message, if any.
    pub(crate) fn take_status(&self) -> Option<String> {
        self.status.lock().unwrap_or_else(PoisonError::into_inner).take()
    }
}

impl crate::context::CallTask for TaskLink {
    fn allowed(&self) -> bool {
        self.allowed
    }

    fn become_task(&self, detached: bool) -> futures_util::future::BoxFuture<'_, Option<String>> {
        use futures_util::FutureExt as _;
        TaskLink::become_task(self, detached).boxed()
    }

    fn task_id(&self) -> Option<String> {
        TaskLink::task_id(self)
    }

    fn report(&self, progress: f64, total: Option<f64>, message: Option<&str>) -> bool {
        TaskLink::report(self, progress, total, message)
    }

    fn control(&self) -> Arc<dyn crate::task_handle::TaskControl> {
        self.tasks.clone()
    }
}
