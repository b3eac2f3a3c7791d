//! The machine's own fan-out limit, measured in the same run as the server: a minimal writer
//! that holds N loopback connections and writes one SSE-sized chunked frame to each per round
//! from a single thread (no HTTP framework, no runtime), and a reader that drains them. Its
//! CPU per frame is the floor the node's "server CPU per delivery" is compared with
//! (`../shared/PERFORMANCE.md`: "re-measure in the same run when you compare").
//!
//! Each frame carries the moment its round started ([`Clock`] microseconds, comparable across
//! the two processes), so the reader also reports when a round had reached every socket, as
//! read by a tokio reader like the load tester's own: the figure to set beside the node's
//! "publish → all streams", which the load tester takes at its reader too. The writer's own
//! figure (one round's loop over the sockets) leaves out how fast the other side reads.

use std::io::Write;
use std::net::TcpListener;
use std::time::{Duration, Instant};

use tokio::io::AsyncReadExt;

use crate::clock::Clock;
use crate::error::LoadtestError;
use crate::procfs::cpu_ticks;

/// What precedes a frame's round stamp, and the stamp's width (decimal digits).
const STAMP_AT: &[u8] = b"data: ";
const STAMP_DIGITS: usize = 16;

/// Accept `streams` connections on `listen`, then write `events` rounds of one `frame_bytes`
/// frame to every connection, `interval` apart; print CPU per frame.
pub fn writer(
    listen: &str,
    streams: usize,
    events: usize,
    frame_bytes: usize,
    interval: Duration,
) -> Result<(), LoadtestError> {
    let listener = TcpListener::bind(listen).map_err(LoadtestError::io(format!("binding {listen}")))?;
    let mut sockets = Vec::with_capacity(streams);
    while sockets.len() < streams {
        let (mut socket, _) = listener.accept().map_err(LoadtestError::io("accepting"))?;
        socket.set_nodelay(true).map_err(LoadtestError::io("setting TCP_NODELAY"))?;
        socket
            .write_all(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n")
            .map_err(LoadtestError::io("writing the response head"))?;
        sockets.push(socket);
    }
    let padding = "x".repeat(frame_bytes.saturating_sub(23 + STAMP_DIGITS));
    let clock = Clock::new();
    let before = cpu_ticks(std::process::id())?;
    let started = Instant::now();
    let mut fanouts = Vec::with_capacity(events);
    let mut frame_len = 0;
    for _ in 0..events {
        let round = Instant::now();
        let payload = format!("event: message\ndata: {:0STAMP_DIGITS$}{padding}\n\n", clock.now_us());
        let frame = format!("{:x}\r\n{payload}\r\n", payload.len()).into_bytes();
        frame_len = frame.len();
        for socket in &mut sockets {
            socket.write_all(&frame).map_err(LoadtestError::io("writing a frame"))?;
        }
        fanouts.push(round.elapsed());
        std::thread::sleep(interval);
    }
    let ticks = cpu_ticks(std::process::id())? - before;
    let frames = (streams * events) as f64;
    fanouts.sort();
    println!(
        "limit writer: {frames} frames of {} bytes in {:?}; CPU {:.2} µs per frame; one round to all {streams} sockets: median {:?}",
        frame_len,
        started.elapsed(),
        (ticks * 10_000) as f64 / frames,
        fanouts[fanouts.len() / 2]
    );
    Ok(())
}

/// Open `streams` connections to `addr` and drain them until the writer closes them; print
/// the median over rounds of the time from a round's start to its frame's arrival on the last
/// socket.
pub async fn reader(addr: &str, streams: usize) -> Result<(), LoadtestError> {
    let clock = Clock::new();
    let mut tasks = Vec::with_capacity(streams);
    for _ in 0..streams {
        let mut socket =
            tokio::net::TcpStream::connect(addr).await.map_err(LoadtestError::io(format!("connecting to {addr}")))?;
        tasks.push(tokio::spawn(async move {
            let mut buf = vec![0u8; 4096];
            let mut unread = Vec::new();
            let mut arrivals = Vec::new();
            let mut total = 0usize;
            while let Ok(n) = socket.read(&mut buf).await {
                if n == 0 {
                    break;
                }
                let now = clock.now_us();
                total += n;
                unread.extend_from_slice(&buf[..n]);
                let used = take_stamps(&unread, |stamp| arrivals.push((stamp, now)));
                unread.drain(..used);
            }
            (total, arrivals)
        }));
    }
    let mut bytes = 0;
    let mut last_arrival = std::collections::BTreeMap::<u64, u64>::new();
    for t in tasks {
        let (total, arrivals) = t.await.map_err(|e| LoadtestError::Worker(format!("reader task: {e}")))?;
        bytes += total;
        for (stamp, at) in arrivals {
            let last = last_arrival.entry(stamp).or_default();
            *last = (*last).max(at);
        }
    }
    let mut rounds: Vec<u64> = last_arrival.iter().map(|(stamp, at)| at.saturating_sub(*stamp)).collect();
    rounds.sort_unstable();
    let median = rounds.get(rounds.len() / 2).copied().unwrap_or_default();
    println!(
        "limit reader: {bytes} bytes over {streams} connections; one round read from all {streams} sockets: median {:.1} ms over {} rounds",
        median as f64 / 1000.0,
        rounds.len()
    );
    Ok(())
}

/// Call `found` with every complete round stamp in `bytes`; answers how many bytes are done
/// with (the rest may hold a stamp cut by the end of a read).
fn take_stamps(bytes: &[u8], mut found: impl FnMut(u64)) -> usize {
    let mut done = 0;
    while let Some(at) = bytes[done..].windows(STAMP_AT.len()).position(|w| w == STAMP_AT) {
        let digits = done + at + STAMP_AT.len();
        let Some(stamp) = bytes.get(digits..digits + STAMP_DIGITS) else { return done + at };
        if let Some(value) = std::str::from_utf8(stamp).ok().and_then(|s| s.parse().ok()) {
            found(value);
        }
        done = digits + STAMP_DIGITS;
    }
    // Keep a tail that could be the start of a cut `data: `.
    bytes.len().saturating_sub(STAMP_AT.len() - 1).max(done)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamps_are_read_whole_across_cut_reads() {
        let frame = b"4e\r\nevent: message\ndata: 0001796304824046xxxx\n\n\r\n";
        let mut seen = Vec::new();
        let mut unread = Vec::new();
        for piece in frame.chunks(7).chain(frame.chunks(30)) {
            unread.extend_from_slice(piece);
            let used = take_stamps(&unread, |s| seen.push(s));
            unread.drain(..used);
        }
        assert_eq!(seen, vec![1_796_304_824_046, 1_796_304_824_046]);
    }
}
