//! What a host holds of a running watcher: the `watch` channels of its lists and resources,
//! and the [`RefreshHandle`] that asks for a re-read.

use std::sync::Arc;

use serde_json::Value;
use tokio::sync::{mpsc, watch};

use crate::list::ListKind;
use crate::snapshot::Snapshot;
use crate::state::CatalogState;

/// The snapshot channel of one list: `None` until the first fetch succeeds; it changes only
/// when the revision does.
pub type SnapshotReceiver = watch::Receiver<Option<Arc<Snapshot>>>;

/// The state channel of one list (see [`CatalogState`]).
pub type StateReceiver = watch::Receiver<CatalogState>;

/// The contents channel of one subscribed resource: the last `resources/read` result.
pub type ResourceReceiver = watch::Receiver<Option<Arc<Value>>>;

/// Asks a running [`CatalogWatcher`](super::CatalogWatcher) to re-read its lists now. Cheap to clone.
#[derive(Debug, Clone)]
pub struct RefreshHandle {
    // Unbounded: a request is a few bytes and the watcher drains them at once; a bounded
    // channel would make a host's refresh wait on the watcher's task.
    pub(super) tx: mpsc::UnboundedSender<Option<ListKind>>,
}

impl RefreshHandle {
    /// Re-read every list; `false` once the watcher has ended.
    pub fn refresh(&self) -> bool {
        self.tx.send(None).is_ok()
    }

    /// Re-read one list; `false` once the watcher has ended.
    pub fn refresh_list(&self, kind: ListKind) -> bool {
        self.tx.send(Some(kind)).is_ok()
    }
}
