//! The tailing task: one per [`subscribe`](mcp_fleet_bus::ServerEventBus::subscribe), reading
//! the stream with `XREAD BLOCK` on a dedicated connection and feeding a bounded channel.
//!
//! - **Dedicated connection**: a blocking read would stall every other command multiplexed on
//!   the same connection, and the shared connection's response timeout is shorter than the
//!   block time. This one's response timeout is the block time plus [`READ_MARGIN`], so a
//!   silently dead socket is still noticed.
//! - **Reconnect**: on any error it reconnects with exponential backoff and resumes after the
//!   last id it delivered, so an outage shorter than the stream's retention loses nothing.
//! - **Backpressure**: the channel holds [`CHANNEL_CAPACITY`] items; when the consumer is slow
//!   the task stops reading and the entries wait in Redis (a trim meanwhile becomes a gap).
//! - **Stop**: the task ends when the consumer drops its stream (the channel closes).

use std::sync::Arc;
use std::time::Duration;

use mcp_fleet_bus::{BusCounters, BusError, BusItem, EventEnvelope, GapReason};
use redis::aio::MultiplexedConnection;
use redis::streams::{StreamId, StreamReadReply};
use tokio::sync::mpsc;

use crate::cursor::Cursor;
use crate::options::RedisBusOptions;
use crate::scripts;
use crate::status::StatusCell;
use crate::to_bus_error;

/// Items buffered between the tailing task and the consumer.
pub(crate) const CHANNEL_CAPACITY: usize = 1024;
/// Extra time over the block time before a read is considered lost.
pub(crate) const READ_MARGIN: Duration = Duration::from_secs(3);

/// Everything one tailing task needs.
pub(crate) struct Tail {
    pub(crate) client: redis::Client,
    pub(crate) options: Arc<RedisBusOptions>,
    pub(crate) cursor: Cursor,
    pub(crate) tx: mpsc::Sender<BusItem>,
    pub(crate) counters: Arc<BusCounters>,
    pub(crate) status: StatusCell,
}

/// The channel closed: the consumer is gone and the task should end.
struct Closed;

impl Tail {
    /// Tail until the consumer drops its stream; `conn` is an open tailing connection.
    pub(crate) async fn run(mut self, mut conn: MultiplexedConnection) {
        loop {
            let read = tokio::select! {
                _ = self.tx.closed() => return,
                read = self.read(&mut conn) => read,
            };
            let outcome = match read {
                Ok(Some(entries)) => self.deliver_all(entries).await,
                Ok(None) => self.resync_if_reset(&mut conn).await,
                Err(err) => match self.reconnect(err).await {
                    Some(fresh) => {
                        conn = fresh;
                        Ok(())
                    }
                    None => Err(Closed),
                },
            };
            if outcome.is_err() {
                return;
            }
        }
    }

    /// One `XREAD BLOCK` after the cursor; `None` when the block time passed without entries.
    async fn read(&self, conn: &mut MultiplexedConnection) -> redis::RedisResult<Option<Vec<StreamId>>> {
        let reply: Option<StreamReadReply> = redis::cmd("XREAD")
            .arg("COUNT")
            .arg(self.options.read_count)
            .arg("BLOCK")
            .arg(self.options.block_timeout.as_millis() as u64)
            .arg("STREAMS")
            .arg(&self.options.stream_key)
            .arg(&self.cursor.last_id)
            .query_async(conn)
            .await?;
        Ok(reply.and_then(|r| r.keys.into_iter().next()).map(|k| k.ids).filter(|ids| !ids.is_empty()))
    }

    async fn deliver_all(&mut self, entries: Vec<StreamId>) -> Result<(), Closed> {
        for entry in entries {
            self.deliver(entry).await?;
        }
        Ok(())
    }

    /// Advance past one entry: report a gap first if versions skipped, then the event (or
    /// count it as undecodable).
    async fn deliver(&mut self, entry: StreamId) -> Result<(), Closed> {
        let version = entry.get::<u64>("v");
        if let Some(gap) = self.cursor.advance(&entry.id, version) {
            tracing::warn!(stream = %self.options.stream_key, id = %entry.id, "redis bus: history trimmed, reporting a gap");
            self.send_gap(gap).await?;
        }
        let payload: Option<Vec<u8>> = entry.get("e");
        match (version, payload.as_deref().map(EventEnvelope::decode)) {
            (Some(version), Some(Ok(mut env))) => {
                env.version = version;
                BusCounters::bump(&self.counters.received);
                self.tx.send(BusItem::Event(env)).await.map_err(|_| Closed)
            }
            (_, Some(Err(err))) => self.undecodable(&entry.id, &err.to_string()),
            _ => self.undecodable(&entry.id, "missing version or payload field"),
        }
    }

    /// Count and log an entry this node cannot read; the stream goes on.
    fn undecodable(&self, id: &str, why: &str) -> Result<(), Closed> {
        BusCounters::bump(&self.counters.undecodable);
        tracing::warn!(stream = %self.options.stream_key, %id, why, "redis bus: skipping undecodable entry");
        Ok(())
    }

    async fn send_gap(&self, gap: GapReason) -> Result<(), Closed> {
        BusCounters::bump(&self.counters.gaps);
        self.tx.send(BusItem::Gap(gap)).await.map_err(|_| Closed)
    }

    /// On an idle read, check that the stream was not deleted and recreated behind us (then
    /// our id is ahead of every new entry and `XREAD` would wait forever): report a gap and
    /// restart from the new stream's end.
    async fn resync_if_reset(&mut self, conn: &mut MultiplexedConnection) -> Result<(), Closed> {
        let Ok((version, id)) = baseline(conn, &self.options).await else {
            return Ok(()); // a connection problem shows up on the next read
        };
        if self.cursor.is_ahead_of(&id, version) {
            tracing::warn!(stream = %self.options.stream_key, "redis bus: stream was reset, reporting a gap");
            self.cursor = Cursor::new(id, version);
            self.send_gap(GapReason::HistoryTrimmed).await?;
        }
        Ok(())
    }

    /// Reconnect with exponential backoff until it works (`Some`) or the consumer is gone.
    async fn reconnect(&self, err: redis::RedisError) -> Option<MultiplexedConnection> {
        tracing::warn!(stream = %self.options.stream_key, error = %err, "redis bus: tailing connection lost");
        self.status.set_reconnecting(&err);
        let mut delay = self.options.reconnect_min;
        loop {
            tokio::select! {
                _ = self.tx.closed() => return None,
                _ = tokio::time::sleep(delay) => {}
            }
            match open_tail_connection(&self.client, &self.options).await {
                Ok(conn) => {
                    BusCounters::bump(&self.counters.reconnects);
                    self.status.set_connected();
                    tracing::info!(stream = %self.options.stream_key, after = %self.cursor.last_id, "redis bus: tailing resumed");
                    return Some(conn);
                }
                Err(err) => self.status.set_reconnecting(&err),
            }
            delay = (delay * 2).min(self.options.reconnect_max);
        }
    }
}

/// Open and name a tailing connection.
pub(crate) async fn open_tail_connection(
    client: &redis::Client,
    options: &RedisBusOptions,
) -> Result<MultiplexedConnection, BusError> {
    let config = redis::AsyncConnectionConfig::new()
        .set_connection_timeout(Some(options.publish_timeout))
        .set_response_timeout(Some(options.block_timeout + READ_MARGIN));
    let mut conn = client.get_multiplexed_async_connection_with_config(&config).await.map_err(to_bus_error)?;
    redis::cmd("CLIENT")
        .arg("SETNAME")
        .arg(options.tail_client_name())
        .exec_async(&mut conn)
        .await
        .map_err(to_bus_error)?;
    Ok(conn)
}

/// The stream's current `(version, last generated id)`, read atomically.
pub(crate) async fn baseline(
    conn: &mut impl redis::aio::ConnectionLike,
    options: &RedisBusOptions,
) -> redis::RedisResult<(u64, String)> {
    scripts::BASELINE.key(&options.stream_key).key(options.version_key()).invoke_async(conn).await
}
