//! What the fault suite observes: every notification each listen stream received (with the time
//! it arrived), every publish the bus accepted (with the time it was sent), and the invariant
//! that ties them together.
//!
//! **The invariant**: for every accepted publish of a change, every stream following that
//! change receives it — a notification of the same kind in the same epoch with a version at
//! least the accepted one (coalescing may skip versions, never the newest) — or a gap
//! invalidation that arrived after the publish was sent.

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
        let method = FOLLOWED[accepted.kind];
        let covered = log.received.iter().any(|r| {
            let delivered = r.method == method
                && r.position.is_some_and(|(epoch, version)| epoch == accepted.epoch && version >= accepted.version);
            let invalidated = r.gap && r.method == method && r.at >= accepted.sent;
            delivered || invalidated
        });
        match (covered, log.ended) {
            (true, _) => Coverage::Covered,
            (false, true) => Coverage::Ended,
            (false, false) => Coverage::Waiting,
        }
    }

    /// The last `n` notifications received, one per line (for a failure message).
    fn recent(&self, n: usize) -> String {
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
    }
}

/// Wait (up to `within`) until every stream covers every accepted publish; on failure, panic
/// with what is missing where.
pub async fn assert_all_covered(streams: &[StreamRecord], accepted: &[Accepted], within: Duration) {
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
            let first = &streams[missing[0].0];
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
