//! [`Publisher`]: the connection events are published on, and the publish itself.
//!
//! One multiplexed connection shared by every publish. When a publish fails in a way a new
//! connection could fix (the socket dropped, the server restarted, a failover made it a
//! replica), the connection is discarded and the publish is tried once more on a fresh one —
//! to the primary the [`Endpoint`] names *now* — within the same publish timeout. A publish
//! that still fails returns the error: the caller decides whether to retry. Operations that
//! must not run twice (a keyspace create or increment) are tried again only when the first
//! attempt certainly did not run (see [`Retry`]).
//!
//! **Split brain.** Behind Sentinel, a publish resolves `Ok` only once a replica holds it
//! (`WAIT`, see [`RedisBusOptions::min_replica_acks`]): a primary cut off from its replicas
//! and sentinels, but not from some nodes, would otherwise keep acknowledging events that its
//! demotion discards — and the other nodes' only gap (at their failover) came before them.
//! The cost: a replica round trip on every publish (queued behind it on the shared
//! connection), and no publishing while no replica is connected (a set with one replica,
//! during a failover, until the old primary rejoins).

use std::sync::{Mutex, PoisonError};

use mcp_fleet_bus::new_epoch;
use mcp_fleet_bus::{BusError, EventEnvelope};
use tokio::time::Instant;

use crate::cursor::Baseline;
use crate::endpoint::{Conn, Endpoint, Timeouts};
use crate::options::RedisBusOptions;
use crate::{is_reconnect_worthy, scripts, to_bus_error};

/// Whether an attempt that failed in a way reconnecting can fix is tried again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Retry {
    /// Always: repeating the operation is harmless (a read, a put, a publish whose duplicate
    /// consumers drop).
    Always,
    /// Only when the first attempt did not reach Redis (connecting failed) or Redis refused it
    /// before running it (`READONLY`, `LOADING`, …): a lost reply may hide an increment or a
    /// create that happened, and running it again would double it or change its answer.
    UnlessSent,
}

/// The publishing connection.
pub(crate) struct Publisher {
    /// The current connection and its generation, so a failure discards only the connection
    /// it happened on. A std mutex: held only to clone or replace, never across `.await`.
    current: Mutex<(u64, Option<Conn>)>,
    timeouts: Timeouts,
}

impl Publisher {
    /// A publisher whose connections time out after `options.publish_timeout`.
    pub(crate) fn new(options: &RedisBusOptions) -> Self {
        let timeouts = Timeouts { connect: options.publish_timeout, response: options.publish_timeout };
        Publisher { current: Mutex::new((0, None)), timeouts }
    }

    /// Publish `env` with the epoch-settling script on the stream of `options` (a shard's);
    /// resolves with its epoch and version.
    pub(crate) async fn publish(
        &self,
        endpoint: &Endpoint,
        options: &RedisBusOptions,
        mut env: EventEnvelope,
    ) -> Result<EventEnvelope, BusError> {
        let payload = env.encode();
        let (wanted, wait_ms) = (options.min_replica_acks, (options.publish_timeout / 2).as_millis().max(1));
        let (epoch, version, acks) = self
            .run(endpoint, options, Retry::Always, |mut conn| {
                let mut invocation = scripts::PUBLISH.prepare_invoke();
                invocation.key(&options.stream_key).key(options.version_key()).key(options.epoch_key());
                invocation.arg(new_epoch()).arg(&payload[..]).arg(options.max_len);
                let pipeline = (wanted > 0).then(|| publish_and_wait(options, &payload, wanted, wait_ms as u64));
                async move {
                    let Some(pipeline) = pipeline else {
                        let (epoch, version) = invocation.invoke_async::<(u64, u64)>(&mut conn).await?;
                        return Ok((epoch, version, 0));
                    };
                    let reply = match pipeline.query_async::<((u64, u64), usize)>(&mut conn).await {
                        Err(err) if err.kind() == redis::ErrorKind::Server(redis::ServerErrorKind::NoScript) => {
                            scripts::PUBLISH.load_async(&mut conn).await?;
                            pipeline.query_async(&mut conn).await?
                        }
                        reply => reply?,
                    };
                    let ((epoch, version), acks) = reply;
                    Ok((epoch, version, acks))
                }
            })
            .await?;
        if acks < wanted {
            // The primary has it, but nothing says it survives a failover: not acknowledged.
            return Err(BusError::Unavailable(format!(
                "{acks} of {wanted} replicas acknowledged the event within {wait_ms} ms (a primary cut off from its replicas may be discarded at failover)"
            )));
        }
        env.epoch = epoch;
        env.version = version;
        Ok(env)
    }

    /// Read the stream's [`Baseline`] (settling the epoch on the way).
    pub(crate) async fn baseline(&self, endpoint: &Endpoint, options: &RedisBusOptions) -> Result<Baseline, BusError> {
        self.run(endpoint, options, Retry::Always, |mut conn| async move { baseline(&mut conn, options).await }).await
    }

    /// Run `op` (any command or script) on the current connection, once more on a fresh one if
    /// the first attempt failed in a way reconnecting can fix and `retry` allows it; everything
    /// within the publish timeout.
    pub(crate) async fn run<T, F, Fut>(
        &self,
        endpoint: &Endpoint,
        options: &RedisBusOptions,
        retry: Retry,
        op: F,
    ) -> Result<T, BusError>
    where
        F: Fn(Conn) -> Fut,
        Fut: Future<Output = redis::RedisResult<T>>,
    {
        let deadline = Instant::now() + options.publish_timeout;
        let mut attempt = 0;
        loop {
            attempt += 1;
            let bounded = tokio::time::timeout_at(deadline, async {
                let (generation, conn) = self.connection(endpoint).await.map_err(|(g, err)| (g, err, false))?;
                op(conn).await.map_err(|err| (generation, err, true))
            });
            let (err, sent) = match bounded.await {
                Ok(Ok(value)) => return Ok(value),
                Ok(Err((generation, err, sent))) => {
                    if is_reconnect_worthy(&err) {
                        self.discard(generation);
                    }
                    (err, sent)
                }
                Err(_) => return Err(BusError::Timeout(options.publish_timeout)),
            };
            // A server error reply (READONLY, LOADING…) means Redis refused before running it.
            let repeatable = retry == Retry::Always || !sent || err.code().is_some();
            if attempt >= 2 || !is_reconnect_worthy(&err) || !repeatable {
                return Err(to_bus_error(err));
            }
            tracing::debug!(error = %err, "redis bus: publishing connection failed; retrying on a fresh one");
        }
    }

    /// The current connection, opening one if there is none.
    async fn connection(&self, endpoint: &Endpoint) -> Result<(u64, Conn), (u64, redis::RedisError)> {
        let (generation, existing) = self.lock().clone();
        if let Some(conn) = existing {
            return Ok((generation, conn));
        }
        let conn = endpoint.connect(self.timeouts).await.map_err(|err| (generation, err))?;
        let mut current = self.lock();
        // Another publish may have connected meanwhile; either connection works, keep theirs.
        let conn = current.1.get_or_insert(conn).clone();
        Ok((current.0, conn))
    }

    /// Forget the connection of `generation` (if it is still the current one).
    fn discard(&self, generation: u64) {
        let mut current = self.lock();
        if current.0 == generation {
            *current = (generation + 1, None);
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, (u64, Option<Conn>)> {
        // The pair is replaced whole; a panic elsewhere cannot leave it half-written.
        self.current.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The publish script by its hash, then `WAIT wanted ms`, in one pipeline: one request to one
/// server (on a cluster, the master of the stream's slot: the pipeline is routed by its first
/// key), so the `WAIT` counts the replicas that hold this very write.
fn publish_and_wait(options: &RedisBusOptions, payload: &[u8], wanted: usize, ms: u64) -> redis::Pipeline {
    let mut publish = redis::cmd("EVALSHA");
    publish.arg(scripts::PUBLISH.get_hash()).arg(3);
    publish.arg(&options.stream_key).arg(options.version_key()).arg(options.epoch_key());
    publish.arg(new_epoch()).arg(payload).arg(options.max_len);
    let mut pipeline = redis::pipe();
    pipeline.add_command(publish).add_command(redis::cmd("WAIT").arg(wanted).arg(ms).clone());
    pipeline
}

/// The stream's [`Baseline`], read (and the epoch settled) atomically on `conn`.
pub(crate) async fn baseline(
    conn: &mut impl redis::aio::ConnectionLike,
    options: &RedisBusOptions,
) -> redis::RedisResult<Baseline> {
    let (epoch, version, last_id, first_version): (u64, u64, String, u64) = scripts::BASELINE
        .key(&options.stream_key)
        .key(options.version_key())
        .key(options.epoch_key())
        .arg(new_epoch())
        .invoke_async(conn)
        .await?;
    Ok(Baseline { epoch, version, last_id, first_version })
}
