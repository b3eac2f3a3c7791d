//! [`Watches`]: this node's part in the fleet's agreement on who watches what (the module
//! docs say how): what its streams follow, the slots it holds for them, the leases it owns
//! and the watchers it runs.
//!
//! Streams tell it what they gain and lose synchronously ([`InterestSink`]); one task
//! ([`Watches::run`]) does the keyspace I/O — at once for what changed, and every third of
//! the lease for everything (renewals, takeovers, and ends noticed for other nodes' streams).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use mcp_fleet_bus::{BusError, Keyspace, ServerEventBus, Subject};
use sha2::{Digest, Sha256};
use tokio::sync::{Notify, watch};
use tokio::time::Instant;

use super::{Watch, Watchers};
use crate::listen::InterestSink;
use crate::notify::Notifier;
use crate::shutdown::Shutdown;

/// The keyspace the fleet agrees in.
const KEYSPACE: &str = "watches";

/// This node's watches. Shared by the streams (through [`InterestSink`]) and its task.
pub(crate) struct Watches {
    keyspace: Arc<dyn Keyspace>,
    node: String,
    watchers: Watchers,
    notifier: Notifier,
    state: Mutex<State>,
    changed: Notify,
}

#[derive(Default)]
struct State {
    /// This node's open streams per subject.
    local: HashMap<Subject, usize>,
    /// The subjects this node holds a slot of.
    held: HashSet<Subject>,
    /// The watches this node runs.
    owned: HashMap<Subject, Owned>,
}

/// A lease this node owns, and the watch it runs under it.
struct Owned {
    revision: u64,
    renewed: Instant,
    ended: watch::Sender<bool>,
}

/// What one visit of a subject found to do.
#[derive(Clone, Copy)]
struct Visit {
    wanted: bool,
    held: bool,
    owned: Option<u64>,
}

impl Watches {
    /// Open the fleet's `watches` keyspace on `bus` for `watchers`.
    pub(crate) async fn open(
        bus: &Arc<dyn ServerEventBus>,
        watchers: Watchers,
        notifier: Notifier,
    ) -> Result<Arc<Self>, BusError> {
        let keyspace = bus.keyspace(KEYSPACE, watchers.lease).await?;
        let node = bus.node_id().to_owned();
        let (state, changed) = (Mutex::default(), Notify::new());
        Ok(Arc::new(Watches { keyspace, node, watchers, notifier, state, changed }))
    }

    /// Visit what changed whenever woken, everything every third of the lease, until `stop`;
    /// then end every watch and give every slot back.
    pub(crate) async fn run(self: Arc<Self>, mut stop: Shutdown) {
        let mut renewal = tokio::time::interval(self.watchers.lease / 3);
        renewal.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = renewal.tick() => self.visit_all(true).await,
                () = self.changed.notified() => self.visit_all(false).await,
                () = stop.recv() => break,
            }
        }
        self.leave().await;
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // Every change leaves the state whole: one insert or remove per call.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Visit every subject this node follows, holds or owns (`renew`: renew every hold and
    /// lease too, and try to take over the leases nobody renews).
    async fn visit_all(&self, renew: bool) {
        let subjects: HashSet<Subject> = {
            let state = self.lock();
            state.local.keys().chain(&state.held).chain(state.owned.keys()).cloned().collect()
        };
        for subject in subjects {
            if let Err(err) = self.visit(&subject, renew).await {
                tracing::debug!(?subject, error = %err, "could not settle a watch; retried at the next renewal");
            }
        }
        self.fence();
    }

    async fn visit(&self, subject: &Subject, renew: bool) -> Result<(), BusError> {
        let Visit { wanted, held, owned } = self.visit_of(subject);
        let key = key_of(subject);
        if wanted && (!held || renew) {
            self.keyspace.hold_slot(&key, &self.node, self.watchers.lease, usize::MAX).await?;
            self.lock().held.insert(subject.clone());
        } else if !wanted && held {
            self.keyspace.release_slot(&key, &self.node).await?;
            self.lock().held.remove(subject);
        }
        match owned {
            None if wanted && (!held || renew) => self.claim(subject, &key).await,
            Some(revision) if !wanted && self.keyspace.live_slots(&key).await? == 0 => {
                self.end(subject, &key, revision).await
            }
            Some(revision) if renew => self.renew(subject, &key, revision).await,
            _ => Ok(()),
        }
    }

    fn visit_of(&self, subject: &Subject) -> Visit {
        let state = self.lock();
        Visit {
            wanted: state.local.get(subject).is_some_and(|n| *n > 0),
            held: state.held.contains(subject),
            owned: state.owned.get(subject).map(|o| o.revision),
        }
    }

    /// Take the subject's lease if nobody holds it, and start its watch here.
    async fn claim(&self, subject: &Subject, key: &str) -> Result<(), BusError> {
        let Some(revision) = self.keyspace.create(key, self.node.as_bytes().to_vec()).await? else {
            return Ok(()); // another node watches it
        };
        let (ended, receiver) = watch::channel(false);
        let owned = Owned { revision, renewed: Instant::now(), ended };
        self.lock().owned.insert(subject.clone(), owned);
        tracing::info!(?subject, "the fleet listens: watch started on this node");
        tokio::spawn((self.watchers.start)(Watch::new(subject.clone(), &self.notifier, receiver)));
        Ok(())
    }

    async fn renew(&self, subject: &Subject, key: &str, revision: u64) -> Result<(), BusError> {
        match self.keyspace.compare_and_set(key, revision, self.node.as_bytes().to_vec()).await? {
            Some(next) => {
                if let Some(owned) = self.lock().owned.get_mut(subject) {
                    (owned.revision, owned.renewed) = (next, Instant::now());
                }
            }
            None => self.stop(subject, "this node lost the lease"),
        }
        Ok(())
    }

    /// Nobody listens any more: give the lease back (if it is still this node's) and end.
    async fn end(&self, subject: &Subject, key: &str, revision: u64) -> Result<(), BusError> {
        if self.keyspace.get(key).await?.is_some_and(|record| record.revision == revision) {
            self.keyspace.delete(key).await?;
        }
        self.stop(subject, "nobody listens any more");
        Ok(())
    }

    /// End the watch of `subject` here.
    fn stop(&self, subject: &Subject, why: &'static str) {
        if let Some(owned) = self.lock().owned.remove(subject) {
            tracing::info!(?subject, why, "watch ended on this node");
            owned.ended.send_replace(true);
        }
    }

    /// End the watches whose lease this node could not renew for a whole lease: another
    /// node may have taken them over by now.
    fn fence(&self) {
        let lease = self.watchers.lease;
        let stale: Vec<Subject> = {
            let state = self.lock();
            state.owned.iter().filter(|(_, o)| o.renewed.elapsed() >= lease).map(|(s, _)| s.clone()).collect()
        };
        for subject in stale {
            self.stop(&subject, "its lease could not be renewed");
        }
    }

    /// Shutting down: end every watch, give every lease and slot back.
    async fn leave(&self) {
        let (owned, held): (Vec<(Subject, u64)>, Vec<Subject>) = {
            let state = self.lock();
            (state.owned.iter().map(|(s, o)| (s.clone(), o.revision)).collect(), state.held.iter().cloned().collect())
        };
        for (subject, revision) in owned {
            if let Err(err) = self.end(&subject, &key_of(&subject), revision).await {
                tracing::debug!(?subject, error = %err, "could not give a lease back; it expires");
                self.stop(&subject, "the handler shuts down");
            }
        }
        for subject in held {
            let _ = self.keyspace.release_slot(&key_of(&subject), &self.node).await;
        }
    }
}

impl InterestSink for Watches {
    fn gained(&self, subjects: &[Subject]) {
        let mut state = self.lock();
        for subject in subjects.iter().filter(|s| **s != Subject::EveryUri) {
            *state.local.entry(subject.clone()).or_default() += 1;
        }
        drop(state);
        self.changed.notify_one();
    }

    fn lost(&self, subjects: &[Subject]) {
        let mut state = self.lock();
        for subject in subjects.iter().filter(|s| **s != Subject::EveryUri) {
            if let Some(count) = state.local.get_mut(subject) {
                *count = count.saturating_sub(1);
                if *count == 0 {
                    state.local.remove(subject);
                }
            }
        }
        drop(state);
        self.changed.notify_one();
    }
}

/// A subject's key: the same on every node, in the keyspace's alphabet whatever the URI.
fn key_of(subject: &Subject) -> String {
    let (kind, name) = match subject {
        Subject::Scope(scope) => ("s", scope.as_str()),
        Subject::Uri(uri) => ("u", uri.as_str()),
        Subject::EveryUri => ("e", ""),
    };
    let digest = Sha256::new().chain_update(kind).chain_update([0]).chain_update(name).finalize();
    format!("{kind}.{}", hex(&digest[..16]))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_subject_has_its_own_key_in_the_keyspace_alphabet() {
        let keys: HashSet<String> = [
            Subject::Uri("file:///a b/ü?x=1#y".into()),
            Subject::Uri("a".into()),
            Subject::Scope("a".into()),
            Subject::EveryUri,
        ]
        .iter()
        .map(key_of)
        .collect();
        assert_eq!(keys.len(), 4, "{keys:?}");
        for key in &keys {
            mcp_fleet_bus::check_key(key).expect("a keyspace key");
        }
        assert_eq!(key_of(&Subject::Uri("a".into())), key_of(&Subject::Uri("a".into())), "stable");
    }
}
