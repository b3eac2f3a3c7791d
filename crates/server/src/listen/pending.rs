//! [`PendingSet`]: what one listen stream still has to write, coalesced.
//!
//! At most one pending notification per list type and per URI: a burst of changes to the same
//! thing collapses into one write (the newest event's frame), so a slow reader costs bounded
//! memory and never loses a change — the last notification it reads is newer than every change
//! it missed. A plain sync struct; the stream body drives it.
//!
//! On a stream of a scoped principal every frame written carries the stream's own sequence
//! number (`"seq"`: 1, 2, 3… with no holes) in place of the bus's position, which would count
//! other tenants' events (see `tenant`).

use std::collections::HashMap;
use std::sync::Arc;

use mcp_fleet_protocol::ListKind;
use mcp_fleet_protocol::sse::NotificationFrame;

/// Pending notifications of one subscription, plus its keepalive and closing flags.
#[derive(Debug, Default)]
pub(crate) struct PendingSet {
    /// Indexed by [`ListKind::index`]; the templates slot stays empty (their changes are
    /// announced as resource-list changes).
    lists: [Option<Arc<NotificationFrame>>; 4],
    uris: HashMap<Arc<str>, Arc<NotificationFrame>>,
    /// Pending task notifications, the newest per task id.
    tasks: HashMap<Arc<str>, Arc<NotificationFrame>>,
    /// A keepalive comment is due (written only if nothing else is).
    pub(crate) keepalive: bool,
    /// The server is closing this stream: write the completion result and end.
    pub(crate) closing: bool,
    /// The number of the last frame written, on a stream of a scoped principal (`None` on
    /// others: their frames carry the bus's position).
    seq: Option<u64>,
}

impl PendingSet {
    /// The pending set of a stream of a scoped principal (`scoped`), whose frames are numbered,
    /// or of an unscoped one.
    pub(crate) fn new(scoped: bool) -> Self {
        PendingSet { seq: scoped.then_some(0), ..PendingSet::default() }
    }

    /// Queue a list-change frame; returns `true` if it replaced (coalesced) a pending one.
    pub(crate) fn offer_list(&mut self, list: ListKind, frame: Arc<NotificationFrame>) -> bool {
        self.lists[list.index()].replace(frame).is_some()
    }

    /// Queue a resource-updated frame; returns `true` if it coalesced a pending one.
    pub(crate) fn offer_uri(&mut self, uri: Arc<str>, frame: Arc<NotificationFrame>) -> bool {
        self.uris.insert(uri, frame).is_some()
    }

    /// Queue a task notification; returns `true` if it coalesced a pending one (each carries
    /// the whole task, so the newest says everything).
    pub(crate) fn offer_task(&mut self, task: Arc<str>, frame: Arc<NotificationFrame>) -> bool {
        self.tasks.insert(task, frame).is_some()
    }

    /// Whether nothing is pending.
    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.lists.iter().all(Option::is_none) && self.uris.is_empty() && self.tasks.is_empty()
    }

    /// Write every pending frame, stamped with the subscription id, into one buffer (one write
    /// to the socket for all of them); returns how many frames were written.
    pub(crate) fn drain_into(&mut self, buf: &mut Vec<u8>, subscription_id_json: &[u8]) -> usize {
        let mut written = 0;
        for frame in self.lists.iter_mut().filter_map(Option::take) {
            stamp(&frame, buf, subscription_id_json, &mut self.seq);
            written += 1;
        }
        for (_, frame) in self.uris.drain().chain(self.tasks.drain()) {
            stamp(&frame, buf, subscription_id_json, &mut self.seq);
            written += 1;
        }
        written
    }
}

/// Write `frame` with the subscription id and, on a numbered stream, the next number.
fn stamp(frame: &NotificationFrame, buf: &mut Vec<u8>, subscription_id_json: &[u8], seq: &mut Option<u64>) {
    match seq {
        Some(last) => *last += u64::from(frame.write_numbered(buf, subscription_id_json, *last + 1)),
        None => frame.write(buf, subscription_id_json),
    }
}

#[cfg(test)]
mod tests;
