//! What one GET stream still has to write: at most one notification per list and per URI, the
//! newest (a slow reader costs bounded memory), each serialized once per event for every stream
//! that gets it, with the position its SSE id names.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write as _;
use std::sync::Arc;

use mcp_fleet_bus::SessionOp;
use mcp_fleet_protocol::envelope::FLEET_EVENT_KEY;
use mcp_fleet_protocol::methods::RESOURCE_UPDATED;
use mcp_fleet_protocol::{ListKind, jsonrpc::encode_notification, sse};
use serde_json::{Value, json};

use super::history::Position;
use crate::listen::FollowedUris;

/// One notification, serialized once per event for every stream that gets it: the JSON-RPC
/// message, with the fleet event metadata (epoch, version, publish time — or the gap marker)
/// under the project `_meta` key, as listen streams carry it.
pub(super) type Notification = Arc<[u8]>;

pub(super) fn notification(method: &str, uri: Option<&str>, meta: &Value) -> Notification {
    let mut params = json!({"_meta": {FLEET_EVENT_KEY: meta}});
    if let Some(uri) = uri {
        params["uri"] = json!(uri);
    }
    encode_notification(method, &params).into()
}

/// A notification and the position its SSE id names: the event it announces (or, for one
/// without a position, the newest the stream had been offered; `None` before any).
pub(super) type Stamped = (Option<Position>, Notification);

/// What one GET stream still has to write: at most one frame per list and per URI (the newest).
#[derive(Debug, Default)]
pub(super) struct Pending {
    /// URIs the session subscribed (kept current by session events).
    pub(super) subscriptions: BTreeSet<String>,
    /// Pending list changes, by [`ListKind::ANNOUNCED`] position.
    pub(super) lists: [Option<Stamped>; 3],
    /// Pending resource updates.
    pub(super) uris: BTreeMap<String, Stamped>,
    pub(super) keepalive: bool,
    pub(super) closing: bool,
    /// The newest positioned event offered to this stream (the stamp of what has none).
    pub(super) position: Option<Position>,
    /// The priming event still to be written (an id and no data, so a client that heard
    /// nothing yet can still resume), at the position *before* anything the stream writes: a
    /// client that hears only it and reconnects is replayed everything after.
    pub(super) prime: Option<Position>,
    /// While the session's record is being read (the stream's opening, a renewal): the
    /// subscription changes heard meanwhile, replayed over what the read finds (see
    /// [`SessionStreams::refresh_subscriptions`]).
    pub(super) journal: Option<Vec<(SessionOp, String)>>,
    /// The subscriptions as told to the fleet's watches, when a handler has watchers.
    pub(super) followed: Option<FollowedUris>,
}

impl Pending {
    /// Tell the fleet's watches what the subscriptions are now (after they changed).
    pub(super) fn sync_followed(&mut self) {
        if let Some(followed) = &mut self.followed {
            followed.sync(&self.subscriptions);
        }
    }

    /// Mark everything the session follows with `lists` (one frame per announced list) and a
    /// resource frame per subscribed URI carrying `meta` (the gap rule).
    pub(super) fn invalidate(&mut self, lists: &[Notification; 3], meta: &Value) {
        let at = self.position;
        self.lists = lists.clone().map(|n| Some((at, n)));
        self.uris = self
            .subscriptions
            .iter()
            .map(|u| (u.clone(), (at, notification(RESOURCE_UPDATED, Some(u), meta))))
            .collect();
    }

    /// Write everything pending as SSE events in the order of their positions, each with its
    /// own as id (written by `id_of`), after the priming event the first time; answers how many
    /// notifications. One id for all, or lists before URIs whatever their order, would let a
    /// client that drops mid-write resume past what it never read.
    pub(super) fn drain_into(&mut self, buf: &mut Vec<u8>, id_of: impl Fn(Position) -> String) -> usize {
        let mut pending: Vec<Stamped> = self
            .lists
            .iter_mut()
            .filter_map(Option::take)
            .chain(std::mem::take(&mut self.uris).into_values())
            .collect();
        pending.sort_by_key(|(at, _)| *at);
        if let Some(at) = self.prime.take() {
            // Writing into a Vec cannot fail.
            let _ = write!(buf, "id: {}\ndata: \n\n", id_of(at));
        }
        for (at, json) in &pending {
            let _ = writeln!(buf, "id: {}", id_of(at.unwrap_or((0, 0))));
            sse::write_event(buf, json);
        }
        pending.len()
    }

    /// Record that an event at `position` was offered to this stream.
    pub(super) fn advance(&mut self, position: Option<Position>) {
        self.position = self.position.max(position);
    }
}

/// Apply a subscription change to a stream's pending set.
pub(super) fn subscription(p: &mut Pending, op: SessionOp, uri: &str) {
    if op == SessionOp::Subscribe {
        p.subscriptions.insert(uri.to_owned());
    } else {
        p.subscriptions.remove(uri);
        p.uris.remove(uri);
    }
}

/// Keep in `slot` whichever of its notification and `offered` announces the newer event.
pub(super) fn keep_newer(slot: &mut Option<Stamped>, offered: Stamped) {
    if slot.as_ref().is_none_or(|(at, _)| *at <= offered.0) {
        *slot = Some(offered);
    }
}

/// The frames of a gap invalidation, one per announced list.
pub(super) fn gap_frames(meta: &Value) -> [Notification; 3] {
    ListKind::ANNOUNCED.map(|list| notification(list.list_changed(), None, meta))
}
