//! [`Deliveries`]: per publish, how many streams got its frame and when the last one did,
//! plus the delivery-latency histogram (publish sent → frame arrived).
//!
//! A frame can beat its publish record to the loader (the node fans out before the publisher
//! hears back, and a worker hears of publishes through a pipe), so frames of unknown versions
//! are parked until their record arrives; any still parked at the end are reported.
//!
//! Matching a frame to its publish also checks scope: a frame of a change scoped to another
//! tenant than the stream's is **misrouted** (a scope leak) and fails verification.

use std::collections::HashMap;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use crate::hist::{new_histogram, record};
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
}

impl Default for Deliveries {
    fn default() -> Self {
        Deliveries {
            by_version: HashMap::new(),
            per_publish: Vec::new(),
            parked: HashMap::new(),
            latency: new_histogram(),
            misrouted: 0,
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

    /// Frames whose version matches no publish of this run (yet).
    pub fn unmatched(&self) -> usize {
        self.parked.values().map(Vec::len).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::Key;

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
