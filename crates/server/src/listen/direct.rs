//! [`DirectSocket`]: an SSE stream that never ends on its own — a listen stream, a 2025-era
//! session's GET stream — written straight to its HTTP/1.1 socket, outside hyper.
//!
//! Such a response never ends, so once its head is out the connection carries nothing but that
//! stream (`h1` hands it over). Whoever marks the stream's pending set — the router delivering
//! an event, the keepalive tick, the close — then writes what is due right away: one chunk, one
//! `try_write`, from a per-thread scratch buffer. Only when the socket does not take it all do
//! the remaining bytes get a buffer of their own, and the stream's task waits for the socket to
//! become writable; meanwhile later changes coalesce in the pending set as they do on any
//! stream, so a slow reader costs one chunk of memory. The same task watches the socket for the
//! client going away.
//!
//! Per open stream this holds the socket, a few flags and an idle task: no read or write buffer.

use std::cell::RefCell;
use std::io::{self, Write as _};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use tokio::net::TcpStream;
use tokio::sync::Notify;

/// Room kept in front of a chunk's data for its size line (`{hex}\r\n`, below 4 GiB).
const CHUNK_HEAD: usize = 10;
/// The last chunk of a chunked body.
const LAST_CHUNK: &[u8] = b"0\r\n\r\n";
/// A per-thread scratch buffer grown past this is given back after use.
const SCRATCH_KEPT: usize = 64 * 1024;
/// How long a closed stream waits for its client to close the connection after the last chunk
/// (so the kernel does not reset it under the client's unread bytes).
const LINGER: Duration = Duration::from_secs(1);

thread_local! {
    static SCRATCH: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// The socket of a directly written stream, and what it has not taken yet.
///
/// What is due is the stream's business: every call takes a `due` function that appends it to
/// a buffer and answers whether the stream ends with it.
#[derive(Debug)]
pub(crate) struct DirectSocket {
    socket: TcpStream,
    out: Mutex<Out>,
    /// Wakes the stream's task: bytes wait for the socket, or the stream ended.
    wake: Notify,
}

#[derive(Debug, Default)]
struct Out {
    /// Bytes the socket has not taken yet (empty, and without capacity, when none).
    backlog: Vec<u8>,
    /// The completion result and the last chunk are written or in the backlog.
    ended: bool,
    /// The socket failed: the client is gone.
    broken: bool,
}

impl Out {
    fn waiting(&self) -> bool {
        !self.backlog.is_empty()
    }

    fn finished(&self) -> bool {
        self.broken || (self.ended && !self.waiting())
    }
}

impl DirectSocket {
    /// A stream on `socket` that starts with `head` (the response head, which must announce a
    /// chunked body) and, as its first chunk, `first`.
    pub(crate) fn new(socket: TcpStream, mut head: Vec<u8>, first: &[u8]) -> DirectSocket {
        if !first.is_empty() {
            // Writing into a Vec cannot fail.
            let _ = write!(head, "{:x}\r\n", first.len());
            head.extend_from_slice(first);
            head.extend_from_slice(b"\r\n");
        }
        DirectSocket { socket, out: Mutex::new(Out { backlog: head, ..Out::default() }), wake: Notify::new() }
    }

    /// Write the head and the first chunk, then everything marked from now on, until the stream
    /// ends (its last bytes and the last chunk written) or the client goes away.
    pub(crate) async fn run(&self, due: impl Fn(&mut Vec<u8>) -> bool) {
        self.serve(&due).await;
        if !self.lock().broken {
            // The last chunk is out: end our side, and give the client a moment to close its.
            let _ = socket2::SockRef::from(&self.socket).shutdown(std::net::Shutdown::Write);
            let _ = tokio::time::timeout(LINGER, async { while !self.peer_gone().await {} }).await;
        }
    }

    fn lock(&self) -> MutexGuard<'_, Out> {
        // `Out` is a byte buffer and flags, each set in one step: usable even if poisoned.
        self.out.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Write what is due as far as the socket takes it now. Whoever marked the stream calls it
    /// right after (`from_task` false: a stream with bytes still waiting is left to its task,
    /// which writes what is due once they are out); the stream's task calls it when the socket
    /// became writable.
    pub(crate) fn flush(&self, due: impl FnOnce(&mut Vec<u8>) -> bool, from_task: bool) {
        let mut out = self.lock();
        if out.finished() || (out.waiting() && !from_task) {
            return;
        }
        if out.waiting() {
            let backlog = std::mem::take(&mut out.backlog);
            self.send(&mut out, &backlog);
            if out.waiting() || out.finished() {
                return self.notify_if_needed(&out);
            }
        }
        if out.ended {
            return;
        }
        SCRATCH.with(|scratch| {
            let mut buf = scratch.borrow_mut();
            buf.clear();
            buf.resize(CHUNK_HEAD, 0);
            let closed = due(&mut buf);
            let from = if buf.len() > CHUNK_HEAD {
                let from = frame_chunk(&mut buf);
                buf.extend_from_slice(b"\r\n");
                from
            } else {
                CHUNK_HEAD
            };
            if closed {
                buf.extend_from_slice(LAST_CHUNK);
                out.ended = true;
            }
            if buf.len() > from {
                self.send(&mut out, &buf[from..]);
            }
            if buf.capacity() > SCRATCH_KEPT {
                *buf = Vec::new();
            }
        });
        self.notify_if_needed(&out);
    }

    /// Hand `bytes` to the socket without waiting; keep what it did not take.
    fn send(&self, out: &mut Out, bytes: &[u8]) {
        let taken = match self.socket.try_write(bytes) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => 0,
            Err(e) => {
                tracing::debug!(error = %e, "stream socket failed");
                out.broken = true;
                out.backlog = Vec::new();
                return;
            }
        };
        out.backlog = if taken == bytes.len() { Vec::new() } else { bytes[taken..].to_vec() };
    }

    /// The stream's task has something to do: wait for the socket, or end.
    fn notify_if_needed(&self, out: &Out) {
        if out.waiting() || out.finished() {
            self.wake.notify_one();
        }
    }

    /// The stream's task: wait for the socket when bytes wait for it, watch for the client going
    /// away, and return once the stream is finished.
    async fn serve(&self, due: &impl Fn(&mut Vec<u8>) -> bool) {
        loop {
            let (waiting, finished) = {
                let out = self.lock();
                (out.waiting(), out.finished())
            };
            if finished {
                return;
            }
            tokio::select! {
                writable = self.socket.writable(), if waiting => match writable {
                    Ok(()) => self.flush(due, true),
                    Err(_) => return,
                },
                () = self.wake.notified(), if !waiting => {}
                gone = self.peer_gone() => if gone {
                    self.lock().broken = true;
                    return;
                },
            }
        }
    }

    /// Wait until the client sends something; `true` when that is the end of the connection
    /// (or an error), `false` when it was bytes (discarded: nothing is read on a listen
    /// connection after its request).
    async fn peer_gone(&self) -> bool {
        if self.socket.readable().await.is_err() {
            return true;
        }
        let mut sink = [0u8; 256];
        match self.socket.try_read(&mut sink) {
            Ok(0) => true,
            Ok(_) => false,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => false,
            Err(_) => true,
        }
    }
}

/// Frame `buf[CHUNK_HEAD..]` as one chunk's size line and data by writing the size line right
/// before the data; returns where the chunk starts. The caller appends the closing CRLF.
fn frame_chunk(buf: &mut [u8]) -> usize {
    let len = buf.len() - CHUNK_HEAD;
    let mut line = [0u8; CHUNK_HEAD];
    let mut cursor = &mut line[..];
    // Invariant: a chunk is far below 4 GiB (a pending set holds one frame per list, per followed
    // URI and per followed task), so its size line fits in CHUNK_HEAD bytes.
    let _ = write!(cursor, "{len:x}\r\n");
    let line_len = CHUNK_HEAD - cursor.len();
    let from = CHUNK_HEAD - line_len;
    buf[from..CHUNK_HEAD].copy_from_slice(&line[..line_len]);
    from
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chunk_size_line_sits_right_before_its_data() {
        let mut buf = vec![0u8; CHUNK_HEAD];
        buf.extend_from_slice(&[b'x'; 300]);
        let from = frame_chunk(&mut buf);
        assert_eq!(&buf[from..from + 5], b"12c\r\n");
        assert_eq!(buf.len() - from, 5 + 300);
    }
}
