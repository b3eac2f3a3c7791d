//! The tailing task: one per [`subscribe`](mcp_fleet_bus::ServerEventBus::subscribe), reading
//! the stream with `XREAD BLOCK` on a dedicated connection and feeding a bounded channel.
//!
//! - **Dedicated connection**: a blocking read would stall every other command multiplexed on
//!   the same connection, and the publishing connection's response timeout is shorter than the
//!   block time. This one's response timeout is the block time plus [`READ_MARGIN`], so a
//!   silently dead socket is still noticed.
//! - **Reconnect**: on any error it reconnects with exponential backoff — to the primary the
//!   endpoint names now, so a Sentinel failover is followed — and resumes after the last id it
//!   delivered, so an outage shorter than the stream's retention loses nothing.
//! - **Lost history**: right after every reconnect, and whenever a read finds nothing new, it
//!   reads the baseline (which settles the epoch). A new epoch (restart without persistence,
//!   failover, deleted keys) or a stream behind the cursor means entries it never read are
//!   gone: it reports a gap and continues from the baseline. Entries of a new epoch read
//!   directly are caught by the cursor's rules.
//! - **Status**: the task owns the consumer status the bus reports: `Connected` after every
//!   successful read, `Reconnecting` from the first failure until a read works again.
//! - **Backpressure**: the channel holds [`CHANNEL_CAPACITY`] items; when the consumer is slow
//!   the task stops reading and the entries wait in Redis (a trim meanwhile becomes a gap).
//! - **Stop**: the task ends when the consumer drops its stream (the channel closes), or when
//!   its stop signal fires (nobody on this node follows its shard any more: see `crate::follow`).

use std::sync::Arc;
use std::time::Duration;

use mcp_fleet_bus::{Backoff, BusCounters, BusError, BusItem, EventEnvelope, EventKind, GapReason, StatusCell};
use redis::streams::{StreamId, StreamReadReply};
use tokio::sync::{Notify, mpsc};

use crate::cursor::{Baseline, Cursor};
use crate::endpoint::{Conn, Endpoint, Timeouts};
use crate::options::RedisBusOptions;
use crate::publisher::baseline;
use crate::to_bus_error;

/// Items buffered between the tailing task and the consumer.
pub(crate) const CHANNEL_CAPACITY: usize = 1024;
/// Extra time over the block time before a read is considered lost.
pub(crate) const READ_MARGIN: Duration = Duration::from_secs(3);

/// Everything one tailing task needs.
pub(crate) struct Tail {
    pub(crate) endpoint: Arc<Endpoint>,
    pub(crate) options: Arc<RedisBusOptions>,
    pub(crate) cursor: Cursor,
    /// Whether delivered events keep their version (false on a sharded bus: see
    /// [`RedisBusOptions::shards`]).
    pub(crate) positioned: bool,
    pub(crate) tx: mpsc::Sender<BusItem>,
    /// Fired when the task should end although its consumer lives on.
    pub(crate) stop: Arc<Notify>,
    pub(crate) counters: Arc<BusCounters>,
    pub(crate) status: StatusCell,
}

/// The channel closed: the consumer is gone and the task should end.
struct Closed;

impl Tail {
    /// Tail until the consumer drops its stream; `conn` is an open tailing connection.
    pub(crate) async fn run(mut self, mut conn: Conn) {
        loop {
            let read = tokio::select! {
                () = self.ended() => return,
                read = self.read(&mut conn) => read,
            };
            let outcome = match read {
                Ok(Some(entries)) => self.deliver_all(entries).await,
                Ok(None) => self.check_history(&mut conn).await,
                Err(err) => self.recover(&mut conn, err).await,
            };
            if outcome.is_err() {
                return;
            }
        }
    }

    /// Resolves when the consumer dropped its stream or the stop signal fired.
    async fn ended(&self) {
        tokio::select! {
            _ = self.tx.closed() => {}
            () = self.stop.notified() => {}
        }
    }

    /// One `XREAD BLOCK` after the cursor; `None` when the block time passed without entries.
    async fn read(&self, conn: &mut Conn) -> redis::RedisResult<Option<Vec<StreamId>>> {
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
        self.status.set_connected();
        Ok(reply.and_then(|r| r.keys.into_iter().next()).map(|k| k.ids).filter(|ids| !ids.is_empty()))
    }

    async fn deliver_all(&mut self, entries: Vec<StreamId>) -> Result<(), Closed> {
        for entry in entries {
            self.deliver(entry).await?;
        }
        Ok(())
    }

    /// Advance past one entry: report a gap first if the cursor's rules say so, then the event
    /// (or count it as undecodable).
    async fn deliver(&mut self, entry: StreamId) -> Result<(), Closed> {
        let version = entry.get::<u64>("v");
        if let Some(gap) = self.cursor.advance(&entry.id, entry.get("ep"), version) {
            tracing::warn!(stream = %self.options.stream_key, id = %entry.id, ?gap, "redis bus: entries lost, reporting a gap");
            self.send_gap(gap).await?;
        }
        let payload: Option<Vec<u8>> = entry.get("e");
        match (version, payload.as_deref().map(EventEnvelope::decode)) {
            (Some(version), Some(Ok(mut env))) => {
                env.epoch = self.cursor.epoch;
                // Occurrences all travel on shard 0: its positions order them on a split bus too.
                env.version = if self.positioned || env.kind == EventKind::Occurred { version } else { 0 };
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

    /// Read the baseline and bring the cursor in line with it (see [`Cursor::resync`]),
    /// reporting the gap if entries it never read are gone. A failure here reconnects.
    async fn check_history(&mut self, conn: &mut Conn) -> Result<(), Closed> {
        match baseline(conn, &self.options).await {
            Ok(now) => self.resync(now).await,
            Err(err) => self.recover(conn, err).await,
        }
    }

    async fn resync(&mut self, now: Baseline) -> Result<(), Closed> {
        let epoch = now.epoch;
        match self.cursor.resync(now) {
            Some(gap) => {
                tracing::warn!(stream = %self.options.stream_key, ?gap, epoch, "redis bus: entries lost, reporting a gap");
                self.send_gap(gap).await
            }
            None => Ok(()),
        }
    }

    /// Reconnect after `err` until a fresh connection has passed the history check.
    async fn recover(&mut self, conn: &mut Conn, err: redis::RedisError) -> Result<(), Closed> {
        tracing::warn!(stream = %self.options.stream_key, error = %err, "redis bus: tailing connection lost");
        self.status.set_reconnecting(&err);
        let mut backoff = Backoff::new(self.options.reconnect_min, self.options.reconnect_max);
        loop {
            tokio::select! {
                () = self.ended() => return Err(Closed),
                _ = tokio::time::sleep(backoff.next_delay()) => {}
            }
            match self.reopen().await {
                Ok((fresh, now)) => {
                    *conn = fresh;
                    BusCounters::bump(&self.counters.reconnects);
                    self.resync(now).await?;
                    self.status.set_connected();
                    tracing::info!(stream = %self.options.stream_key, after = %self.cursor.last_id, "redis bus: tailing resumed");
                    return Ok(());
                }
                Err(err) => self.status.set_reconnecting(&err),
            }
        }
    }

    /// A fresh tailing connection and the baseline read on it.
    async fn reopen(&self) -> Result<(Conn, Baseline), BusError> {
        let mut conn = open_tail_connection(&self.endpoint, &self.options).await?;
        let now = baseline(&mut conn, &self.options).await.map_err(to_bus_error)?;
        Ok((conn, now))
    }
}

/// Open and name a tailing connection to the current primary.
pub(crate) async fn open_tail_connection(endpoint: &Endpoint, options: &RedisBusOptions) -> Result<Conn, BusError> {
    let timeouts = Timeouts { connect: options.publish_timeout, response: options.block_timeout + READ_MARGIN };
    let mut conn = endpoint.connect(timeouts).await.map_err(to_bus_error)?;
    if endpoint.is_cluster() {
        // A keyless command would name one random node's connection; cluster tails go unnamed.
        return Ok(conn);
    }
    redis::cmd("CLIENT")
        .arg("SETNAME")
        .arg(options.tail_client_name())
        .exec_async(&mut conn)
        .await
        .map_err(to_bus_error)?;
    Ok(conn)
}
