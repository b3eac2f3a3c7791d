//! [`Counters`]: increments of one node to one counter, combined into one write.
//!
//! JetStream before 2.12 has no atomic add, so an increment is read-then-write expecting the
//! revision read. Were each increment its own round, a hot counter (a fleet-wide rate window
//! under load) would have as many contenders as requests in flight, each losing to the others
//! and retrying until it gave up — and the rate limit fell back to each replica's own exactly
//! under load. So a node keeps **one round in flight per counter**: increments arriving
//! meanwhile queue, and the next round writes their sum. Contenders for a counter are then at
//! most the nodes of the fleet, and each round of a node carries all its waiting increments.
//!
//! Each increment still answers its own value: a round's increments are applied in arrival
//! order, so the values are those of running them one after another. One that would leave the
//! `i64` range fails alone and changes nothing; a counter holding something else fails them all.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use mcp_fleet_bus::{BusError, add_to_counter, parse_counter};
use tokio::sync::oneshot;
use tokio::time::Instant;

use super::record::{Bucket, Last, pause};
use crate::within;

/// One queued increment and where its answer goes.
struct Waiter {
    delta: i64,
    answer: oneshot::Sender<Result<i64, BusError>>,
}

/// The increments queued per counter while a round is in flight; a key is present exactly
/// while a round task runs for it.
type Queued = Arc<Mutex<HashMap<String, Vec<Waiter>>>>;

/// One keyspace handle's counters.
pub(crate) struct Counters {
    bucket: Bucket,
    queued: Queued,
}

impl Counters {
    /// The counters of `bucket`.
    pub(crate) fn new(bucket: Bucket) -> Counters {
        Counters { bucket, queued: Queued::default() }
    }

    /// Add `delta` to the counter `key` (checked by the caller), in this node's next round for
    /// it; answers the new value.
    pub(crate) async fn increment(&self, key: &str, delta: i64) -> Result<i64, BusError> {
        let (answer, answered) = oneshot::channel();
        let waiter = Waiter { delta, answer };
        let first = {
            let mut queued = self.queued.lock().unwrap_or_else(PoisonError::into_inner);
            match queued.get_mut(key) {
                Some(waiting) => {
                    waiting.push(waiter);
                    false
                }
                None => {
                    queued.insert(key.to_owned(), vec![waiter]);
                    true
                }
            }
        };
        if first {
            // A task of its own: the rounds go on for the others if this caller goes away.
            tokio::spawn(run_rounds(self.bucket.clone(), self.queued.clone(), key.to_owned()));
        }
        answered.await.unwrap_or_else(|_| Err(BusError::Unavailable("the counter's round ended unanswered".into())))
    }
}

/// Write the queued increments of `key`, a round at a time, until none is queued.
async fn run_rounds(bucket: Bucket, queued: Queued, key: String) {
    loop {
        let round = {
            let mut queued = queued.lock().unwrap_or_else(PoisonError::into_inner);
            match queued.get_mut(&key) {
                Some(waiting) if !waiting.is_empty() => std::mem::take(waiting),
                _ => {
                    queued.remove(&key);
                    return;
                }
            }
        };
        let deltas: Vec<i64> = round.iter().map(|waiter| waiter.delta).collect();
        let answers = match apply(&bucket, &key, &deltas).await {
            Ok(answers) => answers,
            Err(err) => vec![Err(err); round.len()],
        };
        for (waiter, answer) in round.into_iter().zip(answers) {
            // A waiter that gave up no longer listens.
            let _ = waiter.answer.send(answer);
        }
    }
}

/// Apply `deltas` to the counter `key` in one write, again after a conflict until the
/// operation timeout: answers each delta's value, or its own error.
async fn apply(bucket: &Bucket, key: &str, deltas: &[i64]) -> Result<Vec<Result<i64, BusError>>, BusError> {
    let deadline = Instant::now() + bucket.timeout;
    let mut attempt = 0u32;
    loop {
        let last = within(bucket.timeout, bucket.last(key)).await??;
        let current = match &last {
            Last::Live { value, .. } => parse_counter(key, value)?,
            Last::Gone(_) | Last::Nothing => 0,
        };
        let (total, answers) = run_in_order(key, current, deltas);
        if answers.iter().all(Result::is_err) {
            // Nothing changes (an increment that counts renews the TTL, even by zero).
            return Ok(answers);
        }
        let written = within(bucket.timeout, bucket.write(key, total.to_string().into_bytes(), Some(last.revision())));
        if written.await??.is_some() {
            return Ok(answers);
        }
        if Instant::now() >= deadline {
            return Err(BusError::Backend(format!("keyspace counter {key:?} kept changing for {:?}", bucket.timeout)));
        }
        pause(attempt).await;
        attempt = attempt.saturating_add(1);
    }
}

/// Run `deltas` one after another from `current`: the total, and each delta's value (or its
/// error, which leaves the total as it was).
fn run_in_order(key: &str, current: i64, deltas: &[i64]) -> (i64, Vec<Result<i64, BusError>>) {
    let mut total = current;
    let answers = deltas
        .iter()
        .map(|delta| {
            let next = add_to_counter(key, total, *delta)?;
            total = next;
            Ok(next)
        })
        .collect();
    (total, answers)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rounds_increments_answer_as_if_run_one_after_another() {
        let (total, answers) = run_in_order("k", 10, &[1, -3, 5]);
        assert_eq!(total, 13);
        let values: Vec<i64> = answers.into_iter().map(|a| a.expect("in range")).collect();
        assert_eq!(values, [11, 8, 13]);
    }

    #[test]
    fn an_increment_past_the_range_fails_alone() {
        let (total, answers) = run_in_order("k", i64::MAX - 1, &[1, 1, -5]);
        assert_eq!(total, i64::MAX - 5);
        assert!(matches!(answers[0], Ok(v) if v == i64::MAX));
        assert!(matches!(answers[1], Err(BusError::Backend(_))), "{:?}", answers[1]);
        assert!(matches!(answers[2], Ok(v) if v == i64::MAX - 5));
    }
}
