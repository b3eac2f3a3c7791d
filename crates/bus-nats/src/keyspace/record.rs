//! [`Bucket`]: one keyspace's key-value bucket, read and written message by message so that
//! each record carries **its own TTL** — the TTL of the handle that wrote it — in a header.
//!
//! nats-server before 2.11 has no per-message TTL, and a bucket has one `max_age`. Were that
//! the keyspace's TTL, the node that opened the bucket last would set it for every node: a
//! rolling deploy that shortens `session_ttl` would expire the sessions the old nodes keep
//! renewing on their own, longer schedule. So each write carries [`TTL_HEADER`] (milliseconds),
//! a record is live until the broker's timestamp of its message plus that TTL (read on this
//! node's clock: nodes' and brokers' clocks should agree, as for slot sets and rate windows),
//! and the bucket's `max_age` only removes what is long dead: it is the longest TTL any node
//! opened the keyspace with. A record written by an earlier version, without the header, lives
//! by `max_age` alone.
//!
//! Reads go to the stream's leader (`STREAM.MSG.GET`), which holds every acknowledged write;
//! writes are JetStream publishes to the key's subject, conditional on the subject's last
//! sequence where the operation needs it (the key-value store's own convention).

use std::time::Duration;

use async_nats::HeaderMap;
use async_nats::jetstream::message::StreamMessage;
use async_nats::jetstream::stream::LastRawMessageErrorKind;
use async_nats::jetstream::{self, context::PublishErrorKind, kv};
use bytes::Bytes;
use mcp_fleet_bus::{BusError, check_key};

use crate::{backend_error, unavailable_when_down, within};

/// The header holding a record's TTL in milliseconds.
pub(crate) const TTL_HEADER: &str = "Mcp-Fleet-Ttl-Ms";

/// The key-value convention's header marking a delete or purge.
const OPERATION_HEADER: &str = "KV-Operation";

/// The JetStream header making a publish conditional on the subject's last sequence.
const EXPECTED_HEADER: &str = "Nats-Expected-Last-Subject-Sequence";

/// What a key's subject holds last.
#[derive(Debug)]
pub(crate) enum Last {
    /// No message at all.
    Nothing,
    /// A delete or purge marker, or a record past its TTL, at this sequence.
    Gone(u64),
    /// A live record.
    Live {
        /// Its bytes.
        value: Bytes,
        /// Its sequence: the key's revision.
        revision: u64,
    },
}

impl Last {
    /// The revision a write must expect to follow this (0: no message yet).
    pub(crate) fn revision(&self) -> u64 {
        match self {
            Last::Nothing => 0,
            Last::Gone(revision) | Last::Live { revision, .. } => *revision,
        }
    }
}

/// One keyspace's bucket and how long this handle's writes live.
#[derive(Clone)]
pub(crate) struct Bucket {
    store: kv::Store,
    js: jetstream::Context,
    client: async_nats::Client,
    /// This handle's TTL: every record it writes carries it.
    pub(crate) ttl: Duration,
    /// Bound on one operation (the bus's publish timeout).
    pub(crate) timeout: Duration,
}

impl Bucket {
    /// The bucket `store`, written through `js`, with this handle's `ttl` and `timeout`.
    pub(crate) fn new(
        store: kv::Store,
        js: jetstream::Context,
        client: async_nats::Client,
        ttl: Duration,
        timeout: Duration,
    ) -> Bucket {
        Bucket { store, js, client, ttl, timeout }
    }

    /// Run `op` on `key` (checked first) within the timeout; an error becomes `Unavailable`
    /// while the connection is down.
    pub(crate) async fn bounded<T>(
        &self,
        key: &str,
        op: impl Future<Output = Result<T, BusError>>,
    ) -> Result<T, BusError> {
        check_key(key)?;
        within(self.timeout, op).await.and_then(|result| result).map_err(|e| unavailable_when_down(&self.client, e))
    }

    /// What `key`'s subject holds last, judged live or gone now.
    pub(crate) async fn last(&self, key: &str) -> Result<Last, BusError> {
        let subject = format!("{}{key}", self.store.prefix);
        let message = match self.store.stream.get_last_raw_message_by_subject(&subject).await {
            Ok(message) => message,
            Err(err) if err.kind() == LastRawMessageErrorKind::NoMessageFound => return Ok(Last::Nothing),
            Err(err) => return Err(backend_error(err)),
        };
        if is_live(&message, time::OffsetDateTime::now_utc()) {
            Ok(Last::Live { value: message.payload, revision: message.sequence })
        } else {
            Ok(Last::Gone(message.sequence))
        }
    }

    /// Store `value` under `key` with this handle's TTL; with `expected`, only while the key's
    /// last revision is that (0: no message at all), answering `None` when it is not.
    pub(crate) async fn write(
        &self,
        key: &str,
        value: Vec<u8>,
        expected: Option<u64>,
    ) -> Result<Option<u64>, BusError> {
        let mut headers = HeaderMap::new();
        headers.insert(TTL_HEADER, self.ttl.as_millis().to_string().as_str());
        if let Some(expected) = expected {
            headers.insert(EXPECTED_HEADER, expected.to_string().as_str());
        }
        let prefix = self.store.put_prefix.as_ref().unwrap_or(&self.store.prefix);
        let subject = format!("{prefix}{key}");
        let sent = self.js.publish_with_headers(subject, headers, value.into()).await.map_err(backend_error)?;
        match sent.await {
            Ok(ack) => Ok(Some(ack.sequence)),
            Err(err) if err.kind() == PublishErrorKind::WrongLastSequence => Ok(None),
            Err(err) => Err(backend_error(err)),
        }
    }

    /// Mark `key` deleted while its last revision is `expected`; `false` when it is not.
    pub(crate) async fn delete(&self, key: &str, expected: u64) -> Result<bool, BusError> {
        match self.store.delete_expect_revision(key, Some(expected)).await {
            Ok(()) => Ok(true),
            Err(err) if err.kind() == kv::UpdateErrorKind::WrongLastRevision => Ok(false),
            Err(err) => Err(backend_error(err)),
        }
    }
}

/// Whether `message` is a live record at `now`: not a delete or purge marker, and within its
/// TTL if it carries one.
fn is_live(message: &StreamMessage, now: time::OffsetDateTime) -> bool {
    let operation = message.headers.get(OPERATION_HEADER).map(|operation| operation.as_str());
    if matches!(operation, Some("DEL" | "PURGE")) {
        return false;
    }
    match message.headers.get(TTL_HEADER).and_then(|ttl| ttl.as_str().parse::<u64>().ok()) {
        Some(ttl_ms) => now < message.time + Duration::from_millis(ttl_ms),
        None => true,
    }
}

/// A short random pause after a conflict, so contending writers spread out: up to `attempt`
/// milliseconds, at most 20.
pub(crate) async fn pause(attempt: u32) {
    let cap = u64::from(attempt).min(20);
    tokio::time::sleep(Duration::from_millis(rand::random_range(0..=cap))).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(headers: &[(&str, &str)], time: time::OffsetDateTime) -> StreamMessage {
        let mut map = HeaderMap::new();
        for (name, value) in headers {
            map.insert(*name, *value);
        }
        StreamMessage { subject: "$KV.b.k".into(), sequence: 7, headers: map, payload: Bytes::new(), time }
    }

    #[test]
    fn a_record_lives_by_its_own_ttl_from_the_brokers_timestamp() {
        let written = time::OffsetDateTime::now_utc();
        let record = message(&[(TTL_HEADER, "1000")], written);
        assert!(is_live(&record, written + Duration::from_millis(999)));
        assert!(!is_live(&record, written + Duration::from_millis(1000)), "never late on our clock");
        let older = message(&[], written);
        assert!(is_live(&older, written + Duration::from_secs(3600)), "without the header, max_age decides");
    }

    #[test]
    fn markers_are_gone_whatever_their_ttl() {
        let now = time::OffsetDateTime::now_utc();
        for operation in ["DEL", "PURGE"] {
            assert!(!is_live(&message(&[(OPERATION_HEADER, operation), (TTL_HEADER, "60000")], now), now));
        }
    }
}
