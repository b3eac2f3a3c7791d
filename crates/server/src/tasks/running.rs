//! [`Running`]: the tasks this node runs, by id — so a `tasks/update` or `tasks/cancel` served
//! here, or a task event from the bus, reaches the runner (a poke: "read your record again"),
//! and a drain can wait for them and stop the rest.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::Notify;

/// What a runner listens to.
#[derive(Debug, Default)]
pub(crate) struct Bells {
    /// Its record changed: read it again (an answer, a cancel).
    pub(crate) poke: Notify,
    /// Stop now without writing anything (the drain fails the task itself).
    pub(crate) stop: Notify,
}

/// The running tasks of this node. Cheap to clone.
#[derive(Clone, Default)]
pub(crate) struct Running {
    /// A std mutex held only to insert, look up or remove one entry.
    inner: Arc<Mutex<HashMap<String, Arc<Bells>>>>,
    /// Rung whenever a runner ends (the drain waits on it).
    ended: Arc<Notify>,
}

/// Keeps a runner registered while it runs; dropping it unregisters it.
pub(crate) struct Registered {
    running: Running,
    id: String,
}

impl Running {
    /// Register task `id`'s runner; its bells and the guard.
    pub(crate) fn register(&self, id: &str) -> (Arc<Bells>, Registered) {
        let bells = Arc::new(Bells::default());
        self.lock().insert(id.to_owned(), bells.clone());
        (bells, Registered { running: self.clone(), id: id.to_owned() })
    }

    /// Whether task `id` runs here.
    pub(crate) fn contains(&self, id: &str) -> bool {
        self.lock().contains_key(id)
    }

    /// Tell task `id`'s runner to read its record again; whether it runs here.
    pub(crate) fn poke(&self, id: &str) -> bool {
        let bells = self.lock().get(id).cloned();
        bells.map(|b| b.poke.notify_one()).is_some()
    }

    /// Poke every runner (after a bus gap: a change may have been missed).
    pub(crate) fn poke_all(&self) {
        for bells in self.lock().values() {
            bells.poke.notify_one();
        }
    }

    /// Stop every runner; answers the ids they ran.
    pub(crate) fn stop_all(&self) -> Vec<String> {
        let running = self.lock();
        for bells in running.values() {
            bells.stop.notify_one();
        }
        running.keys().cloned().collect()
    }

    /// How many run here.
    pub(crate) fn len(&self) -> usize {
        self.lock().len()
    }

    /// Resolve once no runner is left.
    pub(crate) async fn idle(&self) {
        loop {
            let ended = self.ended.notified();
            if self.len() == 0 {
                return;
            }
            ended.await;
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Bells>>> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Drop for Registered {
    fn drop(&mut self) {
        self.running.lock().remove(&self.id);
        self.running.ended.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn runners_are_poked_stopped_and_waited_for() {
        let running = Running::default();
        let (bells, registered) = running.register("t1");
        assert!(running.contains("t1") && !running.contains("t2"));
        assert!(running.poke("t1") && !running.poke("t2"));
        tokio::time::timeout(Duration::from_secs(1), bells.poke.notified()).await.unwrap();
        assert_eq!(running.stop_all(), ["t1"]);
        tokio::time::timeout(Duration::from_secs(1), bells.stop.notified()).await.unwrap();
        let idle = tokio::spawn({
            let running = running.clone();
            async move { running.idle().await }
        });
        tokio::task::yield_now().await;
        assert!(!idle.is_finished());
        drop(registered);
        tokio::time::timeout(Duration::from_secs(1), idle).await.unwrap().unwrap();
        assert_eq!(running.len(), 0);
    }
}
