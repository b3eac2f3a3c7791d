//! [`CatalogReloader::run`]: the loop that notices the file changed.
//!
//! A Kubernetes ConfigMap mount never writes the file in place: `dir/catalog.toml` is a
//! symlink to `..data/catalog.toml`, and an update writes a new timestamped directory and
//! atomically renames a new `..data` symlink over the old one. A watch on the file's inode
//! would keep watching the old, now deleted, file. So this watches the *directory*, treats
//! any event in it as "maybe changed", re-reads the file through its path, and lets the
//! content hash drop the no-ops. Events come in bursts (a ConfigMap update is four or more),
//! so they are debounced; and a poll timer re-reads the file anyway, for filesystems that
//! send no events. Everything that happens to the file goes through one reload path.

use std::future::Future;
use std::path::Path;

use notify::{Event, EventKind, RecommendedWatcher, RecursiveMode, Watcher};
use tokio::sync::mpsc;
use tokio::time::{Instant, Interval, MissedTickBehavior};

use super::reloader::{CatalogReloader, Trigger};

impl CatalogReloader {
    /// Reload on directory events and on the poll timer until `shutdown` resolves. Outcomes
    /// are logged and counted (see [`ReloadStats`](crate::ReloadStats)); an invalid file leaves
    /// the previous catalog serving. Starts with one reload, so a change between the first
    /// load and the start of the watch is not missed. If the directory cannot be watched (no
    /// inotify instances left, say), it says so once and relies on the poll.
    pub async fn run(self, shutdown: impl Future<Output = ()>) {
        // Capacity 1: the channel only says "something happened"; a full channel already
        // holds a pending wake-up, so the watcher thread drops extra events without blocking.
        let (wake, mut woken) = mpsc::channel::<()>(1);
        let _watcher = self.options().watch_events.then(|| watch_directory(self.path(), wake.clone())).flatten();
        let mut poll = self.poll_timer();
        let _ = self.reload(Trigger::Watch).await;
        tokio::pin!(shutdown);
        loop {
            tokio::select! {
                () = &mut shutdown => return,
                Some(()) = woken.recv() => self.debounce(&mut woken).await,
                () = tick(&mut poll) => {}
            }
            // Logged and counted inside.
            let _ = self.reload(Trigger::Watch).await;
        }
    }

    /// Wait out a burst of events: one reload for all of them.
    async fn debounce(&self, woken: &mut mpsc::Receiver<()>) {
        tokio::time::sleep(self.options().debounce).await;
        while woken.try_recv().is_ok() {}
    }

    fn poll_timer(&self) -> Option<Interval> {
        let period = self.options().poll_interval.filter(|p| !p.is_zero())?;
        let mut timer = tokio::time::interval_at(Instant::now() + period, period);
        timer.set_missed_tick_behavior(MissedTickBehavior::Delay);
        Some(timer)
    }
}

/// The poll timer's next tick; never, without one.
async fn tick(poll: &mut Option<Interval>) {
    match poll {
        Some(timer) => {
            timer.tick().await;
        }
        None => std::future::pending().await,
    }
}

/// Watch the directory holding `file` (not the file: see the module doc); every event but a
/// read — our own reads cause those — wakes the loop.
fn watch_directory(file: &Path, wake: mpsc::Sender<()>) -> Option<RecommendedWatcher> {
    let dir = match file.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let on_event = move |event: notify::Result<Event>| match event {
        Ok(event) if matches!(event.kind, EventKind::Access(_)) => {}
        Ok(_) => {
            let _ = wake.try_send(());
        }
        Err(e) => tracing::warn!(error = %e, "catalog directory watch error; the poll still runs"),
    };
    let watching = notify::recommended_watcher(on_event).and_then(|mut w| {
        w.watch(dir, RecursiveMode::NonRecursive)?;
        Ok(w)
    });
    match watching {
        Ok(watcher) => Some(watcher),
        Err(e) => {
            tracing::warn!(dir = %dir.display(), error = %e, "cannot watch the catalog directory; relying on the poll");
            None
        }
    }
}
