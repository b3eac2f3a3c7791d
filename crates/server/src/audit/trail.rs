//! [`AuditTrail`]: the handler's side of the audit trail — a bounded queue into a writer thread
//! that feeds the sinks — and [`CallStart`], one call's record from its arrival to its answer.
//!
//! The writer is an OS thread, not a task: a sink's write may block (a FIFO, a slow disk), and
//! a blocked task would hold a runtime worker — on a current-thread runtime, every call.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};
use std::time::{Duration, Instant};

use mcp_fleet_protocol::RpcError;
use serde_json::Value;

use super::options::AuditOptions;
use super::record::{AuditOrigin, AuditPrincipal, AuditRecord, Ending, sha256_hex};
use super::sink::AuditSink;
use crate::context::Principal;
use crate::metrics::AuditMetrics;

/// The audit trail of one handler; records nothing when audit is off. Cheap to clone.
#[derive(Clone, Default)]
pub(crate) struct AuditTrail {
    inner: Option<Arc<Inner>>,
}

struct Inner {
    /// Bounded by [`AuditOptions::capacity`]: a stalled sink costs that many records of memory.
    tx: SyncSender<AuditRecord>,
    origin: Arc<AuditOrigin>,
    arguments: bool,
    /// Records queued and not yet written and flushed (what [`AuditTrail::flush`] waits for).
    queued: Arc<AtomicUsize>,
    metrics: AuditMetrics,
}

/// What a call's record knows before the call is answered.
pub(crate) struct CallFacts<'a> {
    pub(crate) method: &'static str,
    pub(crate) name: String,
    pub(crate) principal: Option<&'a Principal>,
    pub(crate) catalog_revision: String,
    /// The call's arguments (`None` for `resources/read`, which has none).
    pub(crate) arguments: Option<&'a Value>,
}

/// A task transition, for its record.
pub(crate) struct TaskTransition<'a> {
    pub(crate) task_id: &'a str,
    pub(crate) tool: &'a str,
    /// The task's principal binding ([`crate::tasks::binding`]).
    pub(crate) principal: &'a str,
    pub(crate) previous: Option<&'static str>,
    pub(crate) status: &'static str,
    pub(crate) created_ms: u64,
    pub(crate) now_ms: u64,
}

impl AuditTrail {
    /// The trail `options` describe (off without them), its writer thread started.
    pub(crate) fn open(options: Option<&AuditOptions>, origin: AuditOrigin, metrics: AuditMetrics) -> Self {
        let Some(options) = options else { return AuditTrail::default() };
        let (tx, rx) = sync_channel(options.capacity);
        let queued = Arc::new(AtomicUsize::new(0));
        let writer = Writer { rx, sinks: options.sinks.clone(), queued: queued.clone(), metrics: metrics.clone() };
        let spawned = std::thread::Builder::new().name("mcp-fleet-audit".into()).spawn(move || writer.run());
        if let Err(error) = spawned {
            tracing::error!(%error, "could not start the audit writer: no audit records will be written");
        }
        let inner = Inner { tx, origin: Arc::new(origin), arguments: options.arguments, queued, metrics };
        AuditTrail { inner: Some(Arc::new(inner)) }
    }

    /// A call arriving now, its `facts` read only when audit is on (nothing is computed for a
    /// handler without audit); `None` when it is off. Finish it with [`CallStart::finish`]
    /// (dropped unfinished, it is recorded as `cancelled`).
    pub(crate) fn start<'a>(&self, facts: impl FnOnce() -> CallFacts<'a>) -> Option<CallStart> {
        let inner = self.inner.as_ref()?;
        let facts = facts();
        let record = AuditRecord {
            time_ms: unix_ms(),
            origin: inner.origin.clone(),
            catalog_revision: Some(facts.catalog_revision),
            principal: facts.principal.map(AuditPrincipal::of),
            method: facts.method,
            name: facts.name,
            arguments_sha256: facts.arguments.map(sha256_hex),
            arguments: facts.arguments.filter(|_| inner.arguments).cloned(),
            outcome: "cancelled",
            error_code: None,
            error_reason: None,
            task_id: None,
            previous_status: None,
            duration_ms: 0.0,
            trace_id: crate::trace::trace_id(&tracing::Span::current()),
        };
        Some(CallStart { inner: inner.clone(), record: Some(record), started: Instant::now() })
    }

    /// Record a task's transition to `status`.
    pub(crate) fn task(&self, t: TaskTransition<'_>) {
        let Some(inner) = &self.inner else { return };
        inner.send(AuditRecord {
            time_ms: t.now_ms,
            origin: inner.origin.clone(),
            catalog_revision: None,
            principal: AuditPrincipal::of_binding(t.principal),
            method: "task",
            name: t.tool.to_owned(),
            arguments_sha256: None,
            arguments: None,
            outcome: t.status,
            error_code: None,
            error_reason: None,
            task_id: Some(t.task_id.to_owned()),
            previous_status: t.previous,
            duration_ms: t.now_ms.saturating_sub(t.created_ms) as f64,
            trace_id: crate::trace::trace_id(&tracing::Span::current()),
        });
    }

    /// Wait (up to `grace`) for the queued records to be written: what a shutdown does last,
    /// so the process does not exit with them. A stalled sink only costs the grace.
    pub(crate) async fn flush(&self, grace: Duration) {
        let Some(inner) = &self.inner else { return };
        let until = tokio::time::Instant::now() + grace;
        while inner.queued.load(Ordering::Acquire) > 0 && tokio::time::Instant::now() < until {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
}

impl Inner {
    /// Queue `record` without waiting: dropped and counted when the queue is full.
    fn send(&self, record: AuditRecord) {
        self.queued.fetch_add(1, Ordering::AcqRel);
        if let Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) = self.tx.try_send(record) {
            self.queued.fetch_sub(1, Ordering::AcqRel);
            self.metrics.dropped.inc();
        }
    }
}

/// One call's record, from its arrival to its answer.
pub(crate) struct CallStart {
    inner: Arc<Inner>,
    record: Option<AuditRecord>,
    started: Instant,
}

impl CallStart {
    /// The call was answered with `answer`.
    pub(crate) fn finish(self, answer: Result<&Value, &RpcError>) {
        self.end(Ending::of(answer));
    }

    /// The call ended as `ending` (a written result's, say: [`Ending::complete`]).
    pub(crate) fn end(mut self, ending: Ending) {
        if let Some(record) = self.record.as_mut() {
            record.outcome = ending.outcome;
            record.error_code = ending.error_code;
            record.error_reason = ending.error_reason;
            record.task_id = ending.task_id;
        }
        self.send();
    }

    fn send(&mut self) {
        if let Some(mut record) = self.record.take() {
            // Microsecond precision: what a record can honestly claim.
            record.duration_ms = self.started.elapsed().as_micros() as f64 / 1000.0;
            self.inner.send(record);
        }
    }
}

impl Drop for CallStart {
    /// Unfinished: the answer's future was dropped (the client went away); recorded as
    /// `cancelled`.
    fn drop(&mut self) {
        self.send();
    }
}

/// How long the writer waits for more records before flushing: records reach the file at
/// most this late, and under load one write carries many of them.
const FLUSH_DELAY: Duration = Duration::from_millis(5);

/// Records written between two flushes at most (a steady stream is still flushed).
const MAX_BATCH: usize = 1024;

/// The writer thread: queued records to every sink, flushed once no record came for
/// [`FLUSH_DELAY`] (or after [`MAX_BATCH`]); ends when the last handler clone is gone.
struct Writer {
    rx: Receiver<AuditRecord>,
    sinks: Vec<Arc<dyn AuditSink>>,
    queued: Arc<AtomicUsize>,
    metrics: AuditMetrics,
}

impl Writer {
    fn run(self) {
        let mut failing = false;
        while let Ok(first) = self.rx.recv() {
            let mut batch = 1;
            self.write(&first, &mut failing);
            // Gather what arrives within FLUSH_DELAY (up to MAX_BATCH records) before flushing:
            // under load a flush per record would be a write syscall per call. Timeout or
            // disconnection alike: flush what was written.
            while batch < MAX_BATCH
                && let Ok(record) = self.rx.recv_timeout(FLUSH_DELAY)
            {
                batch += 1;
                self.write(&record, &mut failing);
            }
            for sink in &self.sinks {
                if let Err(error) = sink.flush() {
                    self.failed(&error, &mut failing);
                }
            }
            self.queued.fetch_sub(batch, Ordering::AcqRel);
        }
    }

    fn write(&self, record: &AuditRecord, failing: &mut bool) {
        let mut ok = true;
        for sink in &self.sinks {
            if let Err(error) = sink.write(record) {
                ok = false;
                self.failed(&error, failing);
            }
        }
        if ok {
            self.metrics.written.inc();
            *failing = false;
        }
    }

    /// Counted every time, logged when a sink starts failing (not once per record).
    fn failed(&self, error: &std::io::Error, failing: &mut bool) {
        self.metrics.sink_errors.inc();
        if !std::mem::replace(failing, true) {
            tracing::warn!(%error, "an audit sink failed; records are counted in mcp_fleet_audit_sink_errors_total");
        }
    }
}

/// Now, Unix milliseconds.
fn unix_ms() -> u64 {
    let since = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
}
