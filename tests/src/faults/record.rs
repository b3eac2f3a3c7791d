//! What the fault suite observes: every notification each listen stream received (with the time
//! it arrived), every publish the bus accepted (with the time it was sent), and the invariant
//! that ties them together.
//!
//! **The invariant** is causal: for every accepted publish of a change, every stream following
//! that change, **after the publish was sent**, receives
//! - a notification of the same kind in the same epoch with a version at least the accepted
//!   one (coalescing may skip versions, never the newest), or
//! - a gap invalidation of the same kind, provided that between the publish and the gap the
//!   stream was delivered nothing at or past the publish's place in its epoch. A gap frame
//!   carries the last place its node delivered (`epoch`, `lastVersion`): what is missing
//!   comes after it. A stream that was delivered events past the publish before the gap had
//!   its node pass the publish — the gap is not why it lacks it.
//!
//! "After the publish was sent" matters for deliveries too: a stream rolled back within its
//! epoch reuses versions, and an old notification at a higher version covers nothing new.
//! A gap frame without a place (a node that had delivered nothing yet, or a resumed session
//! stream's first invalidation) covers what was sent before it arrived.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::time::Instant;

use crate::ListenStream;
use crate::cluster::{EVENT_META, FOLLOWED};

/// One notification as a stream received it.
#[derive(Debug, Clone)]
pub struct Received {
    /// When it arrived.
    pub at: Instant,
    /// The notification method.
    pub method: String,
    /// `(epoch, version)` of a delivered event.
    pub position: Option<(u64, u64)>,
    /// A conservative invalidation.
    pub gap: bool,
    /// A gap's `(epoch, lastVersion)`: the last event its node delivered before it.
    pub gap_after: Option<(u64, u64)>,
}

/// A publish the bus accepted.
#[derive(Debug, Clone, Copy)]
pub struct Accepted {
    /// When the (successful) publish call was made.
    pub sent: Instant,
    /// Index into [`FOLLOWED`].
    pub kind: usize,
    /// Its epoch.
    pub epoch: u64,
    /// Its version.
    pub version: u64,
}

/// The notifications of one listen stream, read by a task of its own.
pub struct StreamRecord {
    /// The node the stream is open on.
    pub node: usize,
    log: Arc<Mutex<Log>>,
    reader: tokio::task::JoinHandle<()>,
}

#[derive(Default)]
struct Log {
    received: Vec<Received>,
    ended: bool,
}

impl StreamRecord {
    /// Start recording `stream` (already past its acknowledgement), open on `node`.
    pub fn start(node: usize, mut stream: ListenStream) -> StreamRecord {
        let log: Arc<Mutex<Log>> = Arc::default();
        let reader = tokio::spawn({
            let log = log.clone();
            async move {
                loop {
                    match stream.next_message_within(Duration::from_secs(3600)).await {
                        Some(message) => log.lock().expect("log").received.push(parse(&message)),
                        None => {
                            log.lock().expect("log").ended = true;
                            return;
                        }
                    }
                }
            }
        });
        StreamRecord { node, log, reader }
    }

    /// Whether this stream has seen `accepted` (see the module docs), and whether it ended.
    fn covers(&self, accepted: &Accepted) -> Coverage {
        let log = self.log.lock().expect("log");
        let covered = is_covered(&log.received, accepted);
        match (covered, log.ended) {
            (true, _) => Coverage::Covered,
            (false, true) => Coverage::Ended,
            (false, false) => Coverage::Waiting,
        }
    }

    /// The last `n` notifications received, one per line (for a failure message).
    pub fn recent(&self, n: usize) -> String {
        let log = self.log.lock().expect("log");
        let skip = log.received.len().saturating_sub(n);
        log.received.iter().skip(skip).map(|r| format!("  {r:?}")).collect::<Vec<_>>().join("\n")
    }

    /// Gap invalidations received so far.
    pub fn gaps(&self) -> usize {
        self.log.lock().expect("log").received.iter().filter(|r| r.gap).count()
    }
}

impl Drop for StreamRecord {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

/// Whether `received` (one stream's log, in arrival order) covers `accepted` (see the module
/// docs).
fn is_covered(received: &[Received], accepted: &Accepted) -> bool {
    let method = FOLLOWED[accepted.kind];
    // Notifications that arrived once the publish was sent.
    let after = &received[received.partition_point(|r| r.at < accepted.sent)..];
    let at_or_past = |r: &Received| {
        r.position.is_some_and(|(epoch, version)| epoch == accepted.epoch && version >= accepted.version)
    };
    after.iter().enumerate().any(|(i, r)| {
        let delivered = r.method == method && at_or_past(r);
        let invalidated = r.gap && r.method == method && !after[..i].iter().any(at_or_past);
        delivered || invalidated
    })
}

enum Coverage {
    Covered,
    Waiting,
    Ended,
}

fn parse(message: &Value) -> Received {
    let meta = &message["params"]["_meta"][EVENT_META];
    let position = meta["epoch"].as_u64().zip(meta["version"].as_u64());
    Received {
        at: Instant::now(),
        method: message["method"].as_str().unwrap_or_default().to_owned(),
        position,
        gap: meta["gap"] == true,
        gap_after: meta["epoch"].as_u64().zip(meta["lastVersion"].as_u64()),
    }
}

/// Wait (up to `within`) until every stream covers every accepted publish; on failure, panic
/// with what is missing where.
pub async fn assert_all_covered(streams: &[&StreamRecord], accepted: &[Accepted], within: Duration) {
    let deadline = Instant::now() + within;
    loop {
        let missing: Vec<(usize, String)> = streams
            .iter()
            .enumerate()
            .flat_map(|(i, s)| accepted.iter().map(move |a| (i, s, a)))
            .filter_map(|(i, s, a)| match s.covers(a) {
                Coverage::Covered => None,
                Coverage::Waiting => Some((i, format!("stream {i} (node {}) lacks {a:?}", s.node))),
                Coverage::Ended => Some((i, format!("stream {i} (node {}) ENDED without {a:?}", s.node))),
            })
            .collect();
        if missing.is_empty() {
            return;
        }
        if Instant::now() >= deadline {
            let shown: Vec<&str> = missing.iter().take(12).map(|(_, line)| line.as_str()).collect();
            let first = streams[missing[0].0];
            panic!(
                "{} (stream, publish) pairs never delivered nor invalidated:\n{}\nthe last it received:\n{}",
                missing.len(),
                shown.join("\n"),
                first.recent(8)
            );
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOOLS: usize = 0;

    fn at(start: Instant, ms: u64) -> Instant {
        start + Duration::from_millis(ms)
    }

    fn event(at: Instant, kind: usize, epoch: u64, version: u64) -> Received {
        Received {
            at,
            method: FOLLOWED[kind].to_owned(),
            position: Some((epoch, version)),
            gap: false,
            gap_after: None,
        }
    }

    fn gap(at: Instant, kind: usize, after: Option<(u64, u64)>) -> Received {
        Received { at, method: FOLLOWED[kind].to_owned(), position: None, gap: true, gap_after: after }
    }

    #[test]
    fn a_gap_covers_only_what_its_node_had_not_delivered_past() {
        let t = Instant::now();
        let lost = Accepted { sent: at(t, 10), kind: TOOLS, epoch: 1, version: 5 };
        // The stream went on past version 5 (prompts 6, tools 7 coalesced away later), then
        // an unrelated gap: the node had the event, the gap is not why the stream lacks it.
        let unrelated = [event(at(t, 20), 1, 1, 6), gap(at(t, 900), TOOLS, Some((1, 40)))];
        assert!(!is_covered(&unrelated, &lost), "a later, unrelated gap covers nothing");
        // The gap came before anything past it: the event may be what the gap lost.
        let real = [gap(at(t, 30), TOOLS, Some((1, 4))), event(at(t, 40), 1, 2, 1)];
        assert!(is_covered(&real, &lost));
        assert!(!is_covered(&[gap(at(t, 5), TOOLS, Some((1, 4)))], &lost), "a gap before the publish");
        assert!(!is_covered(&[gap(at(t, 30), 1, Some((1, 4)))], &lost), "another kind's gap");
    }

    #[test]
    fn a_delivery_counts_only_after_the_publish() {
        let t = Instant::now();
        // Versions reused after a rollback within the epoch: the old notification at 9 came
        // before the publish of the new 5.
        let reused = Accepted { sent: at(t, 100), kind: TOOLS, epoch: 1, version: 5 };
        assert!(!is_covered(&[event(at(t, 50), TOOLS, 1, 9)], &reused));
        assert!(is_covered(&[event(at(t, 50), TOOLS, 1, 9), event(at(t, 150), TOOLS, 1, 6)], &reused), "coalesced");
        assert!(!is_covered(&[event(at(t, 150), TOOLS, 2, 6)], &reused), "another epoch's version");
    }
}
