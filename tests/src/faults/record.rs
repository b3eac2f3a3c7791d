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
//!
//! **Unpositioned events** (a bus split into shards: version 0) have no place in one order.
//! One kind's events share a shard and keep their order there, so an event is covered by a
//! notification of its kind published no earlier (`publishedAtMs`, one clock on this machine),
//! or by a gap of its kind after it was sent. This is weaker by one millisecond: an event
//! published in the same millisecond just before it covers it too.
//! A gap frame without a place (a node that had delivered nothing yet, or a resumed session
//! stream's first invalidation) covers what was sent before it arrived.
//!
//! **A listen stream its node ends** is followed as a real client follows it. A node deaf past
//! its `bus_down_grace` (a broker failover that outlasts it, a long partition) ends its listen
//! streams with their completion result and refuses new ones until it hears again: that is the
//! product's promise, and a client reconnects and lists again. A [`StreamRecord`] with a
//! [`Reopen`] does the same: after the completion result it opens the same listen on the same
//! node (retrying while refused), and the list it would read once acknowledged is recorded as a
//! gap of every followed kind without a place — it covers every change sent before it, none
//! sent after, which the new stream must deliver. A stream that ends **without** its completion
//! result (a dropped connection), or cannot be reopened, has ended: what it lacks is reported.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::time::Instant;

use crate::cluster::{EVENT_META, FOLLOWED};
use crate::{ListenStream, McpClient};

/// How long a [`Reopen`] keeps retrying a node that refuses listens (one that has not heard
/// the bus again yet).
const REOPEN_WAIT: Duration = Duration::from_secs(90);
/// Pause between two refused attempts.
const REOPEN_EVERY: Duration = Duration::from_millis(200);

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
    /// When the event was published (`publishedAtMs`).
    pub published_at_ms: Option<u64>,
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
    /// Its version (0: unpositioned, see the module docs).
    pub version: u64,
    /// When its node published it (ms since the Unix epoch).
    pub published_at_ms: u64,
}

impl Accepted {
    /// The publish of `FOLLOWED[kind]` sent at `sent`, as the bus accepted it.
    pub fn of(sent: Instant, kind: usize, event: &mcp_fleet_bus::EventEnvelope) -> Accepted {
        Accepted { sent, kind, epoch: event.epoch, version: event.version, published_at_ms: event.published_at_ms }
    }
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
    completed: usize,
    reopened: usize,
}

/// The listen request a client sends again when its node ends the stream with its completion
/// result (see the module docs). The filter must follow every kind of [`FOLLOWED`].
#[derive(Clone)]
pub struct Reopen {
    /// The client of the node the stream is open on.
    pub client: McpClient,
    /// The listen request's id (the completion result answers it).
    pub id: Value,
    /// The listen filter.
    pub filter: Value,
}

impl Reopen {
    /// Whether `message` is this listen's completion result.
    fn completes(&self, message: &Value) -> bool {
        message["id"] == self.id && message.get("result").is_some()
    }

    /// The same listen, acknowledged; `None` when the node refused it for [`REOPEN_WAIT`].
    async fn open(&self) -> Option<ListenStream> {
        let deadline = Instant::now() + REOPEN_WAIT;
        while Instant::now() < deadline {
            // A refusal, or a request lost with a connection the node closed, is tried again.
            let opened = self.client.try_listen(self.id.clone(), self.filter.clone()).await;
            if let Some(mut stream) = opened.filter(|s| s.status == http::StatusCode::OK) {
                let ack = stream.next_message_within(REOPEN_WAIT).await;
                if ack.is_some_and(|m| m["method"] == "notifications/subscriptions/acknowledged") {
                    return Some(stream);
                }
            }
            tokio::time::sleep(REOPEN_EVERY).await;
        }
        None
    }
}

/// What a client that lists again at `at` knows: every followed kind, as a gap without a place.
fn relisted(at: Instant) -> impl Iterator<Item = Received> {
    FOLLOWED.iter().map(move |method| Received {
        at,
        method: (*method).to_owned(),
        position: None,
        gap: true,
        gap_after: None,
        published_at_ms: None,
    })
}

/// Read `stream` into `log` until it ends; a stream `reopen` can open again is followed there.
async fn read(mut stream: ListenStream, log: Arc<Mutex<Log>>, reopen: Option<Reopen>) {
    let mut completed = false;
    loop {
        if let Some(message) = stream.next_message_within(Duration::from_secs(3600)).await {
            completed = reopen.as_ref().is_some_and(|r| r.completes(&message));
            let mut log = log.lock().expect("log");
            log.completed += usize::from(completed);
            log.received.push(parse(&message));
            continue;
        }
        let again = match &reopen {
            Some(reopen) if completed => reopen.open().await,
            _ => None,
        };
        let Some(again) = again else {
            log.lock().expect("log").ended = true;
            return;
        };
        let mut log = log.lock().expect("log");
        log.reopened += 1;
        log.received.extend(relisted(Instant::now()));
        (stream, completed) = (again, false);
    }
}

impl StreamRecord {
    /// Start recording `stream` (already past its acknowledgement), open on `node`; a stream
    /// ended without a completion result has ended.
    pub fn start(node: usize, stream: ListenStream) -> StreamRecord {
        Self::spawn(node, stream, None)
    }

    /// The same, for a listen stream a client follows: ended with its completion result, it is
    /// opened again as `reopen` says (see the module docs).
    pub fn reopening(node: usize, stream: ListenStream, reopen: Reopen) -> StreamRecord {
        Self::spawn(node, stream, Some(reopen))
    }

    fn spawn(node: usize, stream: ListenStream, reopen: Option<Reopen>) -> StreamRecord {
        let log: Arc<Mutex<Log>> = Arc::default();
        let reader = tokio::spawn(read(stream, log.clone(), reopen));
        StreamRecord { node, log, reader }
    }

    /// How many times the node ended the stream with its completion result.
    pub fn completed(&self) -> usize {
        self.log.lock().expect("log").completed
    }

    /// How many times the stream was ended with its completion result and opened again.
    pub fn reopened(&self) -> usize {
        self.log.lock().expect("log").reopened
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
    if accepted.version == 0 {
        let published_no_earlier = |r: &Received| r.published_at_ms.is_some_and(|ms| ms >= accepted.published_at_ms);
        return after.iter().any(|r| r.method == method && (r.gap || published_no_earlier(r)));
    }
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
        published_at_ms: meta["publishedAtMs"].as_u64(),
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
            published_at_ms: Some(version),
        }
    }

    fn gap(at: Instant, kind: usize, after: Option<(u64, u64)>) -> Received {
        Received {
            at,
            method: FOLLOWED[kind].to_owned(),
            position: None,
            gap: true,
            gap_after: after,
            published_at_ms: None,
        }
    }

    #[test]
    fn a_gap_covers_only_what_its_node_had_not_delivered_past() {
        let t = Instant::now();
        let lost = Accepted { sent: at(t, 10), kind: TOOLS, epoch: 1, version: 5, published_at_ms: 5 };
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
        let reused = Accepted { sent: at(t, 100), kind: TOOLS, epoch: 1, version: 5, published_at_ms: 5 };
        assert!(!is_covered(&[event(at(t, 50), TOOLS, 1, 9)], &reused));
        assert!(is_covered(&[event(at(t, 50), TOOLS, 1, 9), event(at(t, 150), TOOLS, 1, 6)], &reused), "coalesced");
        assert!(!is_covered(&[event(at(t, 150), TOOLS, 2, 6)], &reused), "another epoch's version");
    }

    #[test]
    fn listing_again_covers_every_kind_sent_before_it_and_nothing_after() {
        let t = Instant::now();
        let before: Vec<Accepted> = (0..FOLLOWED.len())
            .map(|kind| Accepted { sent: at(t, 10), kind, epoch: 1, version: 5, published_at_ms: 5 })
            .collect();
        let after = Accepted { sent: at(t, 200), kind: TOOLS, epoch: 1, version: 6, published_at_ms: 6 };
        // The stream heard version 4, ended with its completion result, and was opened again
        // at 100 ms: the client's new list has every change sent before.
        let mut log = vec![event(at(t, 5), TOOLS, 1, 4)];
        log.extend(relisted(at(t, 100)));
        assert!(before.iter().all(|a| is_covered(&log, a)));
        assert!(!is_covered(&log, &after), "a change sent after the list must arrive on the new stream");
        log.push(event(at(t, 210), TOOLS, 1, 6));
        assert!(is_covered(&log, &after));
    }

    #[test]
    fn an_unpositioned_publish_is_covered_by_its_kind_published_no_earlier_or_a_gap() {
        let t = Instant::now();
        let sent = Accepted { sent: at(t, 10), kind: TOOLS, epoch: 3, version: 0, published_at_ms: 1000 };
        let heard =
            |ms: u64| Received { published_at_ms: Some(ms), position: Some((3, 0)), ..event(at(t, 50), TOOLS, 3, 0) };
        assert!(is_covered(&[heard(1000)], &sent), "its own notification");
        assert!(is_covered(&[heard(1200)], &sent), "a later one of its kind, coalesced");
        assert!(!is_covered(&[heard(999)], &sent), "an earlier publish covers nothing new");
        assert!(!is_covered(&[Received { method: FOLLOWED[1].to_owned(), ..heard(1200) }], &sent), "another kind");
        assert!(is_covered(&[gap(at(t, 50), TOOLS, None)], &sent), "a gap of its kind after it was sent");
        assert!(!is_covered(&[gap(at(t, 5), TOOLS, None)], &sent), "a gap before it was sent");
    }
}
