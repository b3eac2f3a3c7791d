//! What a loader reports: [`LiveStats`] while running (the progress line, the settle
//! decision) and [`LoaderResult`] at the end. Both cross the worker's stdout as JSON lines,
//! histograms as HDR V2 in base64, so the coordinator merges them exactly.

use std::collections::BTreeMap;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use crate::deliveries::EventDeliveries;
use crate::error::LoadtestError;
use crate::hist::{decode, encode, merge, new_histogram};
use crate::verify::{FrameCounts, Verdict};

/// A loader's state right now.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LiveStats {
    /// Streams this loader runs.
    pub streams: u64,
    /// Streams acknowledged (and, when re-listing, holding their first snapshots).
    pub ready: u64,
    /// Listen attempts that failed before their stream's first acknowledgement.
    pub open_failures: u64,
    /// Change and gap frames received.
    pub frames: u64,
    /// Frames matched to a publish of this run.
    pub deliveries: u64,
    /// (stream, publish) pairs not covered although accepted more than the settle time ago.
    pub overdue: u64,
    /// (stream, publish) pairs not covered yet.
    pub pending: u64,
    /// (client, list) pairs whose snapshot does not cover a notification they heard.
    pub unconverged: u64,
    /// Re-list page requests made, and how many failed.
    pub requests: u64,
    /// Failed re-list page requests.
    pub request_errors: u64,
    /// Listen streams that ended and reconnected.
    pub reconnects: u64,
    /// Delivery latency so far (HDR V2, base64).
    pub latency: String,
}

impl LiveStats {
    /// Sum `other` into `self`, merging the histogram exactly.
    pub fn add(&mut self, other: &LiveStats) -> Result<(), LoadtestError> {
        self.streams += other.streams;
        self.ready += other.ready;
        self.open_failures += other.open_failures;
        self.frames += other.frames;
        self.deliveries += other.deliveries;
        self.overdue += other.overdue;
        self.pending += other.pending;
        self.unconverged += other.unconverged;
        self.requests += other.requests;
        self.request_errors += other.request_errors;
        self.reconnects += other.reconnects;
        self.latency = merged(&self.latency, &other.latency)?;
        Ok(())
    }
}

/// Merge two encoded histograms (an empty string is an empty histogram).
pub fn merged(a: &str, b: &str) -> Result<String, LoadtestError> {
    let mut h = histogram(a)?;
    merge(&mut h, &histogram(b)?);
    Ok(encode(&h))
}

/// Decode a histogram, treating an empty string as empty.
pub fn histogram(text: &str) -> Result<Histogram<u64>, LoadtestError> {
    if text.is_empty() { Ok(new_histogram()) } else { decode(text) }
}

/// Re-list traffic of one phase (the initial listing, or the storm after changes).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PhaseRequests {
    /// Page requests.
    pub requests: u64,
    /// Failed page requests.
    pub errors: u64,
    /// Whole-list fetches.
    pub fetches: u64,
    /// Failed fetches (the previous snapshot was kept).
    pub fetch_errors: u64,
    /// Failed fetches by error kind.
    pub errors_by_kind: BTreeMap<String, u64>,
    /// Start of the first request (µs since the Unix epoch; 0: none).
    pub first_us: u64,
    /// End of the last request.
    pub last_us: u64,
    /// Page request latency (HDR V2, base64).
    pub latency: String,
    /// Whole-fetch latency (HDR V2, base64).
    pub fetch_latency: String,
}

impl PhaseRequests {
    /// Merge another loader's figures.
    pub fn add(&mut self, other: &PhaseRequests) -> Result<(), LoadtestError> {
        self.requests += other.requests;
        self.errors += other.errors;
        self.fetches += other.fetches;
        self.fetch_errors += other.fetch_errors;
        for (kind, n) in &other.errors_by_kind {
            *self.errors_by_kind.entry(kind.clone()).or_default() += n;
        }
        self.first_us = match (self.first_us, other.first_us) {
            (0, b) => b,
            (a, 0) => a,
            (a, b) => a.min(b),
        };
        self.last_us = self.last_us.max(other.last_us);
        self.latency = merged(&self.latency, &other.latency)?;
        self.fetch_latency = merged(&self.fetch_latency, &other.fetch_latency)?;
        Ok(())
    }
}

/// One publish's convergence as one loader's clients saw it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EventConvergence {
    /// Clients that had to converge (they re-list the key, in its scope).
    pub clients: u64,
    /// Clients that never held a snapshot covering it.
    pub unconverged: u64,
    /// The latest convergence (µs since the Unix epoch; 0: none).
    pub last_us: u64,
}

impl EventConvergence {
    /// Merge another loader's view of the same publish.
    pub fn merge(&mut self, other: &EventConvergence) {
        self.clients += other.clients;
        self.unconverged += other.unconverged;
        self.last_us = self.last_us.max(other.last_us);
    }
}

/// Everything one loader measured.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LoaderResult {
    /// Streams run.
    pub streams: u64,
    /// Streams ever acknowledged.
    pub opened: u64,
    /// Listen attempts that failed before the first acknowledgement.
    pub open_failures: u64,
    /// Open (permit → acknowledgement) latency (HDR V2, base64).
    pub open_latency: String,
    /// Frame counters over every stream.
    pub counts: FrameCounts,
    /// The loss check.
    pub verdict: Verdict,
    /// Streams with nothing lost.
    pub streams_complete: u64,
    /// Per publish (by sequence number).
    pub deliveries: Vec<EventDeliveries>,
    /// Frames matching no publish of the run.
    pub unmatched_frames: u64,
    /// Frames of a change scoped to another tenant than their stream's.
    pub misrouted: u64,
    /// Publish sent → frame arrived (HDR V2, base64).
    pub delivery_latency: String,
    /// Per publish (by sequence number), when re-listing.
    pub convergence: Vec<EventConvergence>,
    /// Publish sent → a client holds a covering snapshot, per (client, publish).
    pub client_convergence: String,
    /// The first listing of each client.
    pub initial: PhaseRequests,
    /// Re-lists after the event phase started.
    pub relist: PhaseRequests,
    /// Final snapshot revisions per list: revision → clients.
    pub revisions: BTreeMap<String, BTreeMap<String, u64>>,
    /// Listen disconnects by error kind (`graceful` for the server's completion result).
    pub disconnects: BTreeMap<String, u64>,
    /// Streams whose acknowledgement did not honour a list they asked for.
    pub unhonoured: u64,
}

impl LoaderResult {
    /// Merge another loader's result (per-publish vectors elementwise).
    pub fn add(&mut self, other: &LoaderResult) -> Result<(), LoadtestError> {
        self.streams += other.streams;
        self.opened += other.opened;
        self.open_failures += other.open_failures;
        self.open_latency = merged(&self.open_latency, &other.open_latency)?;
        self.counts.add(&other.counts);
        self.verdict.add(&other.verdict);
        self.streams_complete += other.streams_complete;
        merge_by_index(&mut self.deliveries, &other.deliveries, EventDeliveries::merge);
        self.unmatched_frames += other.unmatched_frames;
        self.misrouted += other.misrouted;
        self.delivery_latency = merged(&self.delivery_latency, &other.delivery_latency)?;
        merge_by_index(&mut self.convergence, &other.convergence, EventConvergence::merge);
        self.client_convergence = merged(&self.client_convergence, &other.client_convergence)?;
        self.initial.add(&other.initial)?;
        self.relist.add(&other.relist)?;
        for (list, revisions) in &other.revisions {
            let into = self.revisions.entry(list.clone()).or_default();
            for (revision, n) in revisions {
                *into.entry(revision.clone()).or_default() += n;
            }
        }
        for (kind, n) in &other.disconnects {
            *self.disconnects.entry(kind.clone()).or_default() += n;
        }
        self.unhonoured += other.unhonoured;
        Ok(())
    }
}

fn merge_by_index<T: Default + Clone>(into: &mut Vec<T>, from: &[T], merge: fn(&mut T, &T)) {
    if into.len() < from.len() {
        into.resize(from.len(), T::default());
    }
    for (a, b) in into.iter_mut().zip(from) {
        merge(a, b);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hist::record;

    #[test]
    fn results_merge_elementwise_and_exactly() {
        let mut h = new_histogram();
        record(&mut h, 500);
        let a = LoaderResult {
            streams: 2,
            deliveries: vec![EventDeliveries { count: 2, last_us: 10 }],
            delivery_latency: encode(&h),
            ..Default::default()
        };
        let b = LoaderResult {
            streams: 3,
            deliveries: vec![EventDeliveries { count: 3, last_us: 7 }, EventDeliveries { count: 1, last_us: 9 }],
            ..Default::default()
        };
        let mut total = LoaderResult::default();
        total.add(&a).unwrap();
        total.add(&b).unwrap();
        assert_eq!(total.streams, 5);
        assert_eq!(
            total.deliveries,
            [EventDeliveries { count: 5, last_us: 10 }, EventDeliveries { count: 1, last_us: 9 }]
        );
        assert_eq!(histogram(&total.delivery_latency).unwrap().len(), 1);
    }
}
