//! The machine's own fan-out limit, measured in the same run as the server: a minimal writer
//! that holds N loopback connections and writes one SSE-sized chunked frame to each per round
//! from a single thread (no HTTP framework, no runtime), and a reader that drains them. Its
//! CPU per frame is the floor the node's "server CPU per delivery" is compared with
//! (`../shared/PERFORMANCE.md`: "re-measure in the same run when you compare").

use std::io::Write;
use std::net::TcpListener;
use std::time::{Duration, Instant};

use tokio::io::AsyncReadExt;

use crate::error::LoadtestError;
use crate::procfs::cpu_ticks;

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
    let payload = format!("event: message\ndata: {}\n\n", "x".repeat(frame_bytes.saturating_sub(23)));
    let frame = format!("{:x}\r\n{payload}\r\n", payload.len()).into_bytes();
    let before = cpu_ticks(std::process::id())?;
    let started = Instant::now();
    let mut fanouts = Vec::with_capacity(events);
    for _ in 0..events {
        let round = Instant::now();
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
        frame.len(),
        started.elapsed(),
        (ticks * 10_000) as f64 / frames,
        fanouts[fanouts.len() / 2]
    );
    Ok(())
}

/// Open `streams` connections to `addr` and drain them until the writer closes them.
pub async fn reader(addr: &str, streams: usize) -> Result<(), LoadtestError> {
    let mut tasks = Vec::with_capacity(streams);
    for _ in 0..streams {
        let mut socket =
            tokio::net::TcpStream::connect(addr).await.map_err(LoadtestError::io(format!("connecting to {addr}")))?;
        tasks.push(tokio::spawn(async move {
            let mut buf = vec![0u8; 4096];
            let mut total = 0usize;
            while let Ok(n) = socket.read(&mut buf).await {
                if n == 0 {
                    break;
                }
                total += n;
            }
            total
        }));
    }
    let mut bytes = 0;
    for t in tasks {
        bytes += t.await.map_err(|e| LoadtestError::Worker(format!("reader task: {e}")))?;
    }
    println!("limit reader: {bytes} bytes over {streams} connections");
    Ok(())
}
