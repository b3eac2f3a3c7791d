//! [`AuditSink`]: where records go, and [`JsonLinesSink`], the shipped one (one JSON object a
//! line, to a file or to stdout).

use std::fs::OpenOptions;
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::sync::{Mutex, PoisonError};

use super::record::AuditRecord;

/// A destination of audit records.
///
/// Contract: [`write`](AuditSink::write) is called on the audit writer's own thread (never on
/// the async runtime), one record at a time, in the order the records were queued; it may
/// block — while it does, new records wait in the bounded queue and, once it is full, are
/// dropped and counted; calls are never slowed. [`flush`](AuditSink::flush) is called once no
/// record came for 5 ms, and after every 1 024 records of a steady stream. An error is logged and counted
/// (`mcp_fleet_audit_sink_errors_total`); the record is not retried.
pub trait AuditSink: Send + Sync + 'static {
    /// Take one record.
    fn write(&self, record: &AuditRecord) -> std::io::Result<()>;

    /// Push out what is buffered (no record is waiting for now).
    fn flush(&self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Records as JSON lines, to a file (appended) or to stdout, through a 64 KiB buffer flushed when
/// the writer asks (see [`AuditSink`]).
pub struct JsonLinesSink {
    target: Target,
    /// The open output: only the writer thread locks it (the lock is for `Sync`).
    out: Mutex<Option<BufWriter<Box<dyn Write + Send>>>>,
}

enum Target {
    File(PathBuf),
    Stdout,
}

impl std::fmt::Debug for JsonLinesSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.target {
            Target::File(path) => f.debug_tuple("JsonLinesSink").field(path).finish(),
            Target::Stdout => f.write_str("JsonLinesSink(stdout)"),
        }
    }
}

impl JsonLinesSink {
    /// Append to the file at `path`, opened (created if missing) at the first record.
    pub fn file(path: impl Into<PathBuf>) -> Self {
        JsonLinesSink { target: Target::File(path.into()), out: Mutex::new(None) }
    }

    /// Write to standard output.
    pub fn stdout() -> Self {
        JsonLinesSink { target: Target::Stdout, out: Mutex::new(None) }
    }

    fn open(&self) -> std::io::Result<Box<dyn Write + Send>> {
        Ok(match &self.target {
            Target::File(path) => Box::new(OpenOptions::new().create(true).append(true).open(path)?),
            Target::Stdout => Box::new(std::io::stdout()),
        })
    }
}

impl AuditSink for JsonLinesSink {
    fn write(&self, record: &AuditRecord) -> std::io::Result<()> {
        let mut out = self.out.lock().unwrap_or_else(PoisonError::into_inner);
        if out.is_none() {
            *out = Some(BufWriter::with_capacity(64 * 1024, self.open()?));
        }
        let Some(writer) = out.as_mut() else { unreachable!("opened above") };
        serde_json::to_writer(&mut *writer, record)?;
        writer.write_all(b"\n")
    }

    fn flush(&self) -> std::io::Result<()> {
        match self.out.lock().unwrap_or_else(PoisonError::into_inner).as_mut() {
            Some(writer) => writer.flush(),
            None => Ok(()),
        }
    }
}
