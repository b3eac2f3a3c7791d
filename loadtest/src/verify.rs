//! Loss verification: per listen stream and per key (list kind or URI), was every change
//! accepted while the stream was open delivered — or covered by a newer version, a gap
//! invalidation, or a reconnect?
//!
//! Rules (epoch-aware):
//! - Versions are compared only within one epoch (an absent epoch, from nodes that predate
//!   epochs, matches any).
//! - A publish is covered by a frame of the same epoch with version ≥ its version; by a gap
//!   frame for that key that arrived after the publish was accepted (a gap covers every
//!   change before it); or by the stream reconnecting after it was accepted (the client
//!   re-lists after a reconnect, since notifications sent meanwhile are lost).
//! - A frame with a different epoch than the stream's must be preceded by a gap frame on that
//!   stream (a new history); otherwise it is counted as an epoch change without gap.
//! - A frame without the fleet's stamp (a 2025-era GET stream of a node that does not stamp,
//!   or another server) names no version: it covers every change of its key that was *sent*
//!   before it arrived (a notification says "this changed since you last heard"), so a stream
//!   that stops hearing is caught, though one change lost between two delivered ones is not.
//! - Anything else accepted is **lost**. Equal versions are duplicates; lower ones are out of
//!   order (neither is a loss).
//!
//! [`StreamVerifier`] holds one stream's state (O(keys), not O(events)); [`PublishIndex`]
//! holds the accepted publishes grouped by key, scope and epoch, sorted by version, so a check
//! is a binary search plus the (normally empty) tail of uncovered versions.

use std::collections::HashMap;

use mcp_fleet_client::EventStamp;
use serde::{Deserialize, Serialize};

use crate::plan::Key;

/// A publish the bus accepted, as every loader learns it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PublishRecord {
    /// Its number in the run (0-based, in sending order).
    pub seq: u64,
    /// What changed.
    pub key: Key,
    /// The tenant it was scoped to.
    pub scope: Option<u32>,
    /// The bus epoch, when the publisher reported one.
    pub epoch: Option<u64>,
    /// The version the bus assigned.
    pub version: u64,
    /// When the publish request was sent (µs since the Unix epoch).
    pub sent_us: u64,
    /// When the publisher's acceptance arrived.
    pub accepted_us: u64,
}

/// Whether two epochs may be compared (an unknown epoch matches any).
pub fn epochs_match(a: Option<u64>, b: Option<u64>) -> bool {
    a.is_none() || b.is_none() || a == b
}

#[derive(Debug, Clone)]
struct EpochGroup {
    epoch: Option<u64>,
    /// Sorted by version.
    publishes: Vec<PublishRecord>,
}

/// Accepted publishes by (key, scope), then epoch, sorted by version.
#[derive(Debug, Clone, Default)]
pub struct PublishIndex {
    groups: HashMap<(Key, Option<u32>), Vec<EpochGroup>>,
    len: usize,
}

impl PublishIndex {
    /// An empty index.
    pub fn new() -> Self {
        Self::default()
    }

    /// Add an accepted publish (any order).
    pub fn insert(&mut self, record: PublishRecord) {
        let groups = self.groups.entry((record.key, record.scope)).or_default();
        let group = match groups.iter_mut().position(|g| g.epoch == record.epoch) {
            Some(i) => &mut groups[i],
            None => {
                groups.push(EpochGroup { epoch: record.epoch, publishes: Vec::new() });
                let last = groups.len() - 1;
                &mut groups[last]
            }
        };
        let at = group.publishes.partition_point(|p| p.version <= record.version);
        group.publishes.insert(at, record);
        self.len += 1;
    }

    /// Publishes indexed.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether nothing was published.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The groups a stream of `tenant` following `key` must receive: global ones and its own.
    fn relevant(&self, key: Key, tenant: Option<u32>) -> impl Iterator<Item = &EpochGroup> {
        let own = tenant.and_then(|t| self.groups.get(&(key, Some(t))));
        self.groups.get(&(key, None)).into_iter().chain(own).flatten()
    }
}

/// One stream's verification counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FrameCounts {
    /// Change and gap frames received.
    pub frames: u64,
    /// Frames repeating the newest version of their key.
    pub duplicated: u64,
    /// Frames older than the newest version of their key.
    pub out_of_order: u64,
    /// Gap (conservative invalidation) frames.
    pub gap_frames: u64,
    /// Epoch changes not preceded by a gap frame on the stream.
    pub epoch_changes_without_gap: u64,
    /// Frames for keys the stream does not follow (a routing bug).
    pub unexpected: u64,
    /// Frames without the fleet's event stamp.
    pub unstamped: u64,
    /// Reconnects of the stream.
    pub reconnects: u64,
}

impl FrameCounts {
    /// Add `other` into `self`.
    pub fn add(&mut self, other: &FrameCounts) {
        self.frames += other.frames;
        self.duplicated += other.duplicated;
        self.out_of_order += other.out_of_order;
        self.gap_frames += other.gap_frames;
        self.epoch_changes_without_gap += other.epoch_changes_without_gap;
        self.unexpected += other.unexpected;
        self.unstamped += other.unstamped;
        self.reconnects += other.reconnects;
    }
}

/// What a check found.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Verdict {
    /// (stream, publish) pairs checked.
    pub checked: u64,
    /// Pairs covered by nothing.
    pub lost: u64,
    /// Pairs covered only by a gap frame.
    pub covered_by_gap: u64,
    /// Pairs covered only by a reconnect.
    pub covered_by_reconnect: u64,
    /// Up to [`MAX_EXAMPLES`] lost pairs, for the operator.
    pub examples: Vec<LostExample>,
}

/// The cutoff of the final check: every accepted publish is due.
pub const FINAL: u64 = u64::MAX;

/// How many lost pairs a verdict lists.
pub const MAX_EXAMPLES: usize = 10;

/// One lost (stream, publish) pair.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LostExample {
    /// The stream's global index.
    pub stream: usize,
    /// The publish's key.
    pub key: Key,
    /// Its epoch.
    pub epoch: Option<u64>,
    /// Its version.
    pub version: u64,
    /// The newest version the stream had for that key.
    pub newest: Option<u64>,
}

impl Verdict {
    /// Add `other` into `self` (keeping at most [`MAX_EXAMPLES`] examples).
    pub fn add(&mut self, other: &Verdict) {
        self.checked += other.checked;
        self.lost += other.lost;
        self.covered_by_gap += other.covered_by_gap;
        self.covered_by_reconnect += other.covered_by_reconnect;
        let room = MAX_EXAMPLES.saturating_sub(self.examples.len());
        self.examples.extend(other.examples.iter().take(room).cloned());
    }
}

#[derive(Debug, Clone)]
struct KeyState {
    key: Key,
    epoch: Option<u64>,
    newest: Option<u64>,
    /// Arrival of the last gap frame for this key (0: none).
    gap_us: u64,
    /// Arrival of the last unstamped frame for this key (0: none).
    arrived_us: u64,
}

/// One listen stream's delivery state.
#[derive(Debug, Clone)]
pub struct StreamVerifier {
    stream: usize,
    tenant: Option<u32>,
    keys: Vec<KeyState>,
    epoch: Option<u64>,
    gap_since_change: bool,
    opened_us: Option<u64>,
    reconnect_us: u64,
    counts: FrameCounts,
}

impl StreamVerifier {
    /// A stream (global index `stream`, of `tenant`) following `keys`.
    pub fn new(stream: usize, tenant: Option<u32>, keys: &[Key]) -> Self {
        let keys =
            keys.iter().map(|&key| KeyState { key, epoch: None, newest: None, gap_us: 0, arrived_us: 0 }).collect();
        StreamVerifier {
            stream,
            tenant,
            keys,
            epoch: None,
            gap_since_change: false,
            opened_us: None,
            reconnect_us: 0,
            counts: FrameCounts::default(),
        }
    }

    /// The stream was acknowledged at `at_us`. A reconnect covers everything accepted before
    /// it and starts a new stream (a new epoch needs no gap).
    pub fn on_connected(&mut self, at_us: u64) {
        if self.opened_us.is_none() {
            self.opened_us = Some(at_us);
            return;
        }
        self.counts.reconnects += 1;
        self.reconnect_us = at_us;
        self.gap_since_change = true;
    }

    /// A frame for `key` arrived at `at_us`.
    pub fn on_frame(&mut self, key: Key, stamp: EventStamp, at_us: u64) {
        self.counts.frames += 1;
        let Some(state) = self.keys.iter_mut().find(|k| k.key == key) else {
            self.counts.unexpected += 1;
            return;
        };
        match stamp {
            EventStamp::Change { epoch, version, .. } => {
                if let (Some(current), Some(new)) = (self.epoch, epoch)
                    && current != new
                    && !self.gap_since_change
                {
                    self.counts.epoch_changes_without_gap += 1;
                }
                self.epoch = epoch.or(self.epoch);
                self.gap_since_change = false;
                match state.newest {
                    Some(newest) if epochs_match(state.epoch, epoch) && version == newest => {
                        self.counts.duplicated += 1
                    }
                    Some(newest) if epochs_match(state.epoch, epoch) && version < newest => {
                        self.counts.out_of_order += 1
                    }
                    _ => state.newest = Some(version),
                }
                state.epoch = epoch.or(state.epoch);
            }
            EventStamp::Gap { epoch, .. } => {
                self.counts.gap_frames += 1;
                self.gap_since_change = true;
                state.gap_us = at_us;
                if let Some(new) = epoch.filter(|e| state.epoch.is_some_and(|cur| cur != *e)) {
                    // A new history for this key: older versions say nothing about it.
                    state.epoch = Some(new);
                    state.newest = None;
                }
                self.epoch = epoch.or(self.epoch);
            }
            EventStamp::Unstamped => {
                self.counts.unstamped += 1;
                state.arrived_us = state.arrived_us.max(at_us);
            }
        }
    }

    /// Check every publish in `index` accepted at or before `cutoff_us` that this stream must
    /// have received. Only the final check ([`FINAL`]) counts [`Verdict::checked`] fully; a
    /// live check costs a binary search per key plus the uncovered tail.
    pub fn check(&self, index: &PublishIndex, cutoff_us: u64) -> Verdict {
        let mut verdict = Verdict::default();
        let Some(opened_us) = self.opened_us else { return verdict };
        for state in &self.keys {
            for group in index.relevant(state.key, self.tenant) {
                let covered_by_version = match state.newest {
                    Some(newest) if epochs_match(group.epoch, state.epoch) => {
                        group.publishes.partition_point(|p| p.version <= newest)
                    }
                    _ => 0,
                };
                if cutoff_us == FINAL {
                    // Live checks skip this count: it would cost O(publishes) per key.
                    verdict.checked += covered_by_version as u64;
                }
                for p in &group.publishes[covered_by_version..] {
                    if p.accepted_us > cutoff_us || p.sent_us < opened_us {
                        continue;
                    }
                    verdict.checked += 1;
                    if p.sent_us <= state.arrived_us {
                        continue; // an unstamped frame arrived after it was sent
                    }
                    if p.accepted_us <= state.gap_us {
                        verdict.covered_by_gap += 1;
                    } else if p.accepted_us <= self.reconnect_us {
                        verdict.covered_by_reconnect += 1;
                    } else {
                        verdict.lost += 1;
                        if verdict.examples.len() < MAX_EXAMPLES {
                            verdict.examples.push(LostExample {
                                stream: self.stream,
                                key: state.key,
                                epoch: p.epoch,
                                version: p.version,
                                newest: state.newest,
                            });
                        }
                    }
                }
            }
        }
        verdict
    }

    /// The stream's frame counters.
    pub fn counts(&self) -> &FrameCounts {
        &self.counts
    }

    /// Whether the stream was ever acknowledged.
    pub fn is_open(&self) -> bool {
        self.opened_us.is_some()
    }
}

#[cfg(test)]
mod tests;
