//! [`Deliveries`]: per publish, how many streams got its frame and when the last one did,
//! plus the delivery-latency histogram (publish sent → frame arrived).
//!
//! A frame can beat its publish record to the loader (the node fans out before the publisher
//! hears back, and a worker hears of publishes through a pipe), so frames of unknown versions
//! are parked until their record arrives; any still parked at the end are reported.
//!
//! Matching a frame to its publish also checks scope: a frame of a change scoped to another
//! tenant than the stream's is **misrouted** (a scope leak) and fails verification.
//!
//! A frame without the fleet's stamp (a 2025-era GET stream of a node that does not stamp its
//! notifications) names no version, so it is matched by time instead: it belongs to the
//! newest publish of its key in the stream's scope (global or its tenant's) *sent* before the
//! frame arrived, if that publish is newer than the one the stream's previous frame of that
//! key was matched to; otherwise (a resumed stream's invalidation, a repeat) it matches
//! nothing. That is exact while each change reaches every stream before the next one is sent
//! (the benchmarks' spaced events); in a burst a late frame of one change is credited to the
//! next one, which understates latency. Such frames are matched only once every publish sent
//! before them is known: after the run, or [`UNSTAMPED_HORIZON_US`] after they arrived.

use std::collections::{HashMap, VecDeque};

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use crate::hist::{new_histogram, record};
use crate::plan::Key;
use crate::verify::{PublishRecord, epochs_match};

/// One publish's deliveries as one loader saw them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EventDeliveries {
    /// Frames carrying exactly this publish's version.
    pub count: u64,
    /// Arrival of the last of them (µs since the Unix epoch; 0: none).
    pub last_us: u64,
}

impl EventDeliveries {
    /// Merge another loader's view of the same publish.
    pub fn merge(&mut self, other: &EventDeliveries) {
        self.count += other.count;
        self.last_us = self.last_us.max(other.last_us);
    }
}

/// A frame that arrived before its publish record: (epoch, arrival in µs, the stream's tenant).
type ParkedFrame = (Option<u64>, u64, Option<u32>);

/// How long after its arrival an unstamped frame is matched by a live check: by then every
/// publish sent before it has been accepted or has failed (a publish gives up after
/// [`PUBLISH_TIMEOUT`](crate::publish::PUBLISH_TIMEOUT)) and its record reached the loader.
pub const UNSTAMPED_HORIZON_US: u64 = crate::publish::PUBLISH_TIMEOUT.as_micros() as u64 + 5_000_000;

/// An unstamped frame waiting to be matched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct UnstampedFrame {
    /// The loader's slot of the stream.
    stream: usize,
    key: Key,
    tenant: Option<u32>,
    at_us: u64,
}

/// The publishes of one (key, scope) in sending order, with the newest (highest version) of
/// every prefix, to match unstamped frames in O(log publishes).
#[derive(Debug, Default)]
struct SentOrder {
    /// Sorted by `sent_us`.
    records: Vec<PublishRecord>,
    /// `newest[i]`: the index of the highest version among `records[..=i]`.
    newest: Vec<usize>,
}

impl SentOrder {
    fn insert(&mut self, record: PublishRecord) {
        let at = self.records.partition_point(|p| p.sent_us <= record.sent_us);
        self.records.insert(at, record);
        self.newest.truncate(at);
        for i in at..self.records.len() {
            let best = match self.newest.last() {
                Some(&b) if self.records[b].version >= self.records[i].version => b,
                _ => i,
            };
            self.newest.push(best);
        }
    }

    /// The newest publish sent at or before `at_us`.
    fn newest_sent_by(&self, at_us: u64) -> Option<&PublishRecord> {
        let n = self.records.partition_point(|p| p.sent_us <= at_us);
        let i = *self.newest.get(n.checked_sub(1)?)?;
        self.records.get(i)
    }
}

/// Delivery bookkeeping of one loader.
#[derive(Debug)]
pub struct Deliveries {
    by_version: HashMap<u64, Vec<PublishRecord>>,
    per_publish: Vec<EventDeliveries>,
    /// Frames waiting for their publish, by version. Keyed so a publish settles only its own
    /// frames: frames that never match (another publisher on the bus) cost nothing per publish.
    parked: HashMap<u64, Vec<ParkedFrame>>,
    latency: Histogram<u64>,
    misrouted: u64,
    /// Publishes by (key, scope) in sending order, for unstamped frames.
    sent: HashMap<(Key, Option<u32>), SentOrder>,
    /// Unstamped frames not matched yet, in arrival order (per stream, strictly).
    unstamped: VecDeque<UnstampedFrame>,
    /// Per (stream, key): the version its last unstamped frame was matched to.
    matched: HashMap<(usize, Key), u64>,
    /// Unstamped frames that matched no newer publish.
    unmatched_unstamped: u64,
}

impl Default for Deliveries {
    fn default() -> Self {
        Deliveries {
            by_version: HashMap::new(),
            per_publish: Vec::new(),
            parked: HashMap::new(),
            latency: new_histogram(),
            misrouted: 0,
            sent: HashMap::new(),
            unstamped: VecDeque::new(),
            matched: HashMap::new(),
            unmatched_unstamped: 0,
        }
    }
}

impl Deliveries {
    /// Empty bookkeeping.
    pub fn new() -> Self {
        Self::default()
    }

    /// A publish was accepted: index it and settle frames that were waiting for it.
    pub fn on_publish(&mut self, publish: PublishRecord) {
        self.by_version.entry(publish.version).or_default().push(publish);
        self.sent.entry((publish.key, publish.scope)).or_default().insert(publish);
        let seq = publish.seq as usize;
        if self.per_publish.len() <= seq {
            self.per_publish.resize(seq + 1, EventDeliveries::default());
        }
        for (epoch, at_us, tenant) in self.parked.remove(&publish.version).unwrap_or_default() {
            self.on_frame(epoch, publish.version, at_us, tenant);
        }
    }

    /// A change frame of `version` (in `epoch`) arrived at `at_us` on a stream of `tenant`.
    pub fn on_frame(&mut self, epoch: Option<u64>, version: u64, at_us: u64, tenant: Option<u32>) {
        let publish = self.by_version.get(&version).and_then(|all| all.iter().find(|p| epochs_match(p.epoch, epoch)));
        let Some(publish) = publish else {
            self.parked.entry(version).or_default().push((epoch, at_us, tenant));
            return;
        };
        if publish.scope.is_some() && publish.scope != tenant {
            self.misrouted += 1;
        }
        record(&mut self.latency, at_us.saturating_sub(publish.sent_us));
        if let Some(slot) = self.per_publish.get_mut(publish.seq as usize) {
            slot.count += 1;
            slot.last_us = slot.last_us.max(at_us);
        }
    }

    /// An unstamped frame for `key` arrived at `at_us` on the loader's stream `stream` (of
    /// `tenant`); it is matched by [`Deliveries::match_unstamped`].
    pub fn on_unstamped(&mut self, stream: usize, key: Key, at_us: u64, tenant: Option<u32>) {
        self.unstamped.push_back(UnstampedFrame { stream, key, tenant, at_us });
    }

    /// Match the unstamped frames that arrived before `until_us` (every one with
    /// [`u64::MAX`], once every publish is known), in arrival order.
    pub fn match_unstamped(&mut self, until_us: u64) {
        // Frames of one stream are queued in arrival order; stopping at the first one that is
        // too young keeps that order for the next call.
        while let Some(frame) = self.unstamped.front().copied().filter(|f| f.at_us < until_us) {
            self.unstamped.pop_front();
            let global = self.sent.get(&(frame.key, None)).and_then(|s| s.newest_sent_by(frame.at_us));
            let own = frame
                .tenant
                .and_then(|t| self.sent.get(&(frame.key, Some(t))))
                .and_then(|s| s.newest_sent_by(frame.at_us));
            let newest = match (global, own) {
                (Some(g), Some(o)) => Some(if o.version > g.version { *o } else { *g }),
                (g, o) => g.or(o).copied(),
            };
            let previous = self.matched.get(&(frame.stream, frame.key)).copied();
            let Some(publish) = newest.filter(|p| previous.is_none_or(|v| p.version > v)) else {
                self.unmatched_unstamped += 1;
                continue;
            };
            self.matched.insert((frame.stream, frame.key), publish.version);
            record(&mut self.latency, frame.at_us.saturating_sub(publish.sent_us));
            if let Some(slot) = self.per_publish.get_mut(publish.seq as usize) {
                slot.count += 1;
                slot.last_us = slot.last_us.max(frame.at_us);
            }
        }
    }

    /// Unstamped frames received but not matched yet.
    pub fn unstamped_pending(&self) -> usize {
        self.unstamped.len()
    }

    /// Per publish, by sequence number.
    pub fn per_publish(&self) -> &[EventDeliveries] {
        &self.per_publish
    }

    /// Publish sent → frame arrived, in µs.
    pub fn latency(&self) -> &Histogram<u64> {
        &self.latency
    }

    /// Frames of a change scoped to another tenant than their stream's.
    pub fn misrouted(&self) -> u64 {
        self.misrouted
    }

    /// Frames whose version matches no publish of this run (yet), and unstamped frames that
    /// matched no newer publish.
    pub fn unmatched(&self) -> usize {
        self.parked.values().map(Vec::len).sum::<usize>() + self.unmatched_unstamped as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn publish(seq: u64, version: u64, sent_us: u64) -> PublishRecord {
        PublishRecord { seq, key: Key::Tools, scope: None, epoch: None, version, sent_us, accepted_us: sent_us + 1 }
    }

    #[test]
    fn a_frame_that_beats_its_publish_record_is_counted_when_the_record_arrives() {
        let mut d = Deliveries::new();
        d.on_frame(Some(3), 7, 1_500, None);
        assert_eq!(d.unmatched(), 1);
        d.on_publish(publish(0, 7, 1_000));
        d.on_frame(None, 7, 1_800, None);
        assert_eq!(d.unmatched(), 0);
        assert_eq!(d.per_publish(), [EventDeliveries { count: 2, last_us: 1_800 }]);
        assert_eq!((d.latency().len(), d.latency().max()), (2, 800));
        assert_eq!(d.misrouted(), 0);
    }

    #[test]
    fn unstamped_frames_match_the_newest_publish_sent_before_them_once() {
        let mut d = Deliveries::new();
        d.on_publish(publish(0, 11, 1_000));
        d.on_unstamped(0, Key::Tools, 1_400, None); // stream 0 hears change 0
        d.on_unstamped(1, Key::Tools, 1_900, None); // stream 1 hears change 0 later
        d.on_unstamped(0, Key::Tools, 1_950, None); // a repeat on stream 0 (a resume's invalidation)
        d.on_unstamped(1, Key::Tools, 2_300, None); // stream 1 hears change 1, whose record comes late
        d.on_unstamped(0, Key::Prompts, 2_400, None); // nothing of prompts was published
        d.match_unstamped(2_000);
        assert_eq!(d.unstamped_pending(), 2, "frames at or after the horizon wait");
        d.on_publish(publish(1, 12, 2_000));
        d.match_unstamped(u64::MAX);
        assert_eq!(d.unstamped_pending(), 0);
        assert_eq!(
            d.per_publish(),
            [EventDeliveries { count: 2, last_us: 1_900 }, EventDeliveries { count: 1, last_us: 2_300 }]
        );
        assert_eq!((d.latency().len(), d.latency().min(), d.latency().max()), (3, 300, 900));
        assert_eq!(d.unmatched(), 2);
    }

    #[test]
    fn an_unstamped_frame_sees_global_and_its_own_tenants_publishes_only() {
        let mut d = Deliveries::new();
        let mut other = publish(0, 5, 100);
        other.scope = Some(1);
        let mut own = publish(1, 6, 200);
        own.scope = Some(0);
        // Records may arrive out of sending order (concurrent publishes).
        d.on_publish(publish(2, 7, 300));
        d.on_publish(own);
        d.on_publish(other);
        d.on_unstamped(0, Key::Tools, 250, Some(0));
        d.on_unstamped(1, Key::Tools, 250, Some(2));
        d.on_unstamped(0, Key::Tools, 350, Some(0));
        d.match_unstamped(u64::MAX);
        assert_eq!(d.per_publish().iter().map(|e| e.count).collect::<Vec<_>>(), [0, 1, 1]);
        assert_eq!(d.unmatched(), 1, "tenant 2 had nothing before 250");
    }

    #[test]
    fn the_newest_sent_is_by_version_when_sending_and_acceptance_orders_differ() {
        let mut order = SentOrder::default();
        order.insert(publish(1, 9, 200));
        order.insert(publish(0, 10, 150)); // sent first, accepted (versioned) second
        order.insert(publish(2, 11, 400));
        assert_eq!(order.newest_sent_by(100), None);
        assert_eq!(order.newest_sent_by(150).map(|p| p.version), Some(10));
        assert_eq!(order.newest_sent_by(399).map(|p| p.version), Some(10));
        assert_eq!(order.newest_sent_by(400).map(|p| p.version), Some(11));
    }

    #[test]
    fn a_frame_of_another_tenants_change_is_misrouted() {
        let mut d = Deliveries::new();
        let mut scoped = publish(0, 3, 100);
        scoped.scope = Some(1);
        d.on_publish(scoped);
        d.on_frame(None, 3, 200, Some(1));
        assert_eq!(d.misrouted(), 0);
        d.on_frame(None, 3, 210, Some(0));
        d.on_frame(None, 3, 220, None);
        assert_eq!(d.misrouted(), 2);
    }
}
