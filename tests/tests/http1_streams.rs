//! HTTP/1.1 listen streams and 2025-era GET streams written outside hyper, seen from a raw
//! socket: the head and the chunked framing byte for byte, keepalives, the completion result
//! and the last chunk on close, a client that goes away, a client that stops reading
//! (coalesced, then the newest change), bytes sent after the request, a refused listen after
//! which the connection goes on with hyper, a thousand streams written by two workers, and a
//! `Content-Length` read exactly as hyper reads it (digits only, one length).

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::time::Duration;

use mcp_fleet_bus::testing::eventually;
use mcp_fleet_protocol::sse::{SseDecoder, SseEvent};
use mcp_fleet_server::HandlerOptions;
use mcp_fleet_tests::legacy::{LegacySession, VERSION};
use mcp_fleet_tests::{McpClient, TestNode, request, test_server};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

const WAIT: Duration = Duration::from_secs(10);

/// A listen stream read off a raw socket, its chunked body decoded strictly.
struct RawStream {
    tcp: TcpStream,
    /// Bytes read and not decoded yet.
    buf: Vec<u8>,
    head: String,
    sse: SseDecoder,
    events: VecDeque<SseEvent>,
    /// The last chunk was read.
    ended: bool,
}

/// A whole HTTP/1.1 request for `body`, with the headers a 2026-07-28 client sends.
fn http_request(body: &Value) -> Vec<u8> {
    let bytes = serde_json::to_vec(body).unwrap();
    let mut req = b"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\n".to_vec();
    for (name, value) in McpClient::standard_headers(body) {
        req.extend_from_slice(format!("{name}: {value}\r\n").as_bytes());
    }
    req.extend_from_slice(format!("content-length: {}\r\n\r\n", bytes.len()).as_bytes());
    req.extend_from_slice(&bytes);
    req
}

fn listen_body(id: u64, notifications: Value) -> Value {
    request(json!(id), "subscriptions/listen", json!({"notifications": notifications}))
}

async fn connect(addr: SocketAddr, recv_buffer: Option<u32>) -> TcpStream {
    let socket = TcpSocket::new_v4().unwrap();
    if let Some(bytes) = recv_buffer {
        socket.set_recv_buffer_size(bytes).unwrap();
    }
    socket.connect(addr).await.unwrap()
}

/// Read until `buf` holds `\r\n\r\n`; returns the head and leaves the rest in `buf`.
async fn read_head(tcp: &mut TcpStream, buf: &mut Vec<u8>) -> String {
    loop {
        if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8(buf[..at + 4].to_vec()).unwrap();
            buf.drain(..at + 4);
            return head;
        }
        let n = tokio::time::timeout(WAIT, tcp.read_buf(buf)).await.expect("head in time").unwrap();
        assert!(n > 0, "connection closed before a response head: {:?}", String::from_utf8_lossy(buf));
    }
}

impl RawStream {
    async fn open(addr: SocketAddr, body: &Value, extra: &[u8], recv_buffer: Option<u32>) -> RawStream {
        let mut bytes = http_request(body);
        bytes.extend_from_slice(extra);
        Self::send(addr, &bytes, recv_buffer).await
    }

    /// Send `request` on a new connection and read the response head.
    async fn send(addr: SocketAddr, request: &[u8], recv_buffer: Option<u32>) -> RawStream {
        let mut tcp = connect(addr, recv_buffer).await;
        tcp.write_all(request).await.unwrap();
        let mut buf = Vec::new();
        let head = read_head(&mut tcp, &mut buf).await;
        RawStream { tcp, buf, head, sse: SseDecoder::new(), events: VecDeque::new(), ended: false }
    }

    /// Decode every whole chunk in `buf`; panics on anything that is not chunked framing.
    fn decode_chunks(&mut self) {
        loop {
            let Some(line_end) = self.buf.windows(2).position(|w| w == b"\r\n") else { return };
            let size_line = std::str::from_utf8(&self.buf[..line_end]).expect("size line is text");
            let size = usize::from_str_radix(size_line, 16).unwrap_or_else(|_| panic!("bad size line {size_line:?}"));
            let total = line_end + 2 + size + 2;
            if self.buf.len() < total {
                return;
            }
            assert_eq!(&self.buf[total - 2..total], b"\r\n", "a chunk ends with CRLF");
            let data = self.buf[line_end + 2..line_end + 2 + size].to_vec();
            self.buf.drain(..total);
            if size == 0 {
                self.ended = true;
                assert!(self.buf.is_empty(), "nothing after the last chunk");
                return;
            }
            let mut out = Vec::new();
            self.sse.feed(&data, &mut out);
            self.events.extend(out);
        }
    }

    /// The next SSE event, or `None` once the body ended (the connection must close then).
    async fn next_event(&mut self) -> Option<SseEvent> {
        loop {
            self.decode_chunks();
            if let Some(event) = self.events.pop_front() {
                return Some(event);
            }
            if self.ended {
                let mut rest = Vec::new();
                let n = tokio::time::timeout(WAIT, self.tcp.read_to_end(&mut rest)).await.expect("close in time");
                assert_eq!(n.unwrap(), 0, "the server closes after the last chunk");
                return None;
            }
            let n = tokio::time::timeout(WAIT, self.tcp.read_buf(&mut self.buf)).await.expect("event in time").unwrap();
            assert!(n > 0, "connection closed inside the body");
        }
    }

    async fn next_message(&mut self) -> Option<Value> {
        loop {
            match self.next_event().await? {
                SseEvent::Message(m) => return Some(serde_json::from_str(&m).unwrap()),
                SseEvent::Comment(_) => {}
            }
        }
    }
}

fn header<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.lines().find_map(|l| {
        let (n, v) = l.split_once(':')?;
        n.eq_ignore_ascii_case(name).then_some(v.trim())
    })
}

#[tokio::test]
async fn a_listen_stream_is_chunked_sse_from_its_head_to_its_last_chunk() {
    let node = TestNode::start(test_server(), HandlerOptions::default().keepalive(Duration::from_millis(100))).await;
    let mut stream = RawStream::open(node.addr, &listen_body(7, json!({"toolsListChanged": true})), b"", None).await;
    assert!(stream.head.starts_with("HTTP/1.1 200 OK\r\n"), "{}", stream.head);
    assert_eq!(header(&stream.head, "transfer-encoding"), Some("chunked"));
    assert_eq!(header(&stream.head, "content-type"), Some("text/event-stream"));
    assert!(header(&stream.head, "date").is_some() && header(&stream.head, "content-length").is_none());
    let ack = stream.next_message().await.unwrap();
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(node.handler.open_streams(), 1);

    // Keepalive comments while nothing happens.
    let keepalive = stream.next_event().await.unwrap();
    assert!(matches!(keepalive, SseEvent::Comment(_)), "{keepalive:?}");

    let published = node.handler.notify().tools_changed().await.unwrap();
    let change = stream.next_message().await.unwrap();
    assert_eq!(change["method"], "notifications/tools/list_changed");
    assert_eq!(change["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], 7);
    assert_eq!(change["params"]["_meta"]["dev.mcp-fleet/event"]["version"], published.version);

    // Shutdown: the completion result, the last chunk, then the connection closes.
    let handler = node.handler.clone();
    let shutdown = tokio::spawn(async move { node.shutdown().await });
    let complete = stream.next_message().await.unwrap();
    assert_eq!((complete["id"].clone(), complete["result"]["resultType"].clone()), (json!(7), json!("complete")));
    assert!(stream.next_message().await.is_none());
    tokio::time::timeout(WAIT, shutdown).await.expect("shutdown in time").unwrap();
    assert_eq!(handler.open_streams(), 0);
}

#[tokio::test]
async fn a_client_that_goes_away_is_unregistered() {
    let node = TestNode::start(test_server(), HandlerOptions::default()).await;
    let mut stream = RawStream::open(node.addr, &listen_body(1, json!({"toolsListChanged": true})), b"", None).await;
    stream.next_message().await.unwrap();
    assert_eq!(node.handler.open_streams(), 1);
    drop(stream);
    eventually("the stream unregistered", WAIT, async || node.handler.open_streams() == 0).await;
    node.shutdown().await;
}

#[tokio::test]
async fn bytes_after_the_listen_request_change_nothing() {
    let node = TestNode::start(test_server(), HandlerOptions::default()).await;
    let body = listen_body(2, json!({"toolsListChanged": true}));
    let mut stream = RawStream::open(node.addr, &body, b"GET / HTTP/1.1\r\n\r\nnoise", None).await;
    assert_eq!(stream.next_message().await.unwrap()["method"], "notifications/subscriptions/acknowledged");
    stream.tcp.write_all(b"more noise").await.unwrap();
    node.handler.notify().tools_changed().await.unwrap();
    assert_eq!(stream.next_message().await.unwrap()["method"], "notifications/tools/list_changed");
    assert_eq!(node.handler.open_streams(), 1);
    node.shutdown().await;
}

#[tokio::test]
async fn a_reader_that_stops_reading_gets_the_newest_change_once_it_reads_again() {
    let node = TestNode::start(test_server(), HandlerOptions::default()).await;
    // A small receive window and large frames (a 2,000-byte URI), so the socket stops taking
    // the server's writes long before the changes end (past the kernel's send buffer).
    let uri = format!("test://{}", "u".repeat(1_990));
    let body = listen_body(3, json!({"resourceSubscriptions": [uri]}));
    let mut stream = RawStream::open(node.addr, &body, b"", Some(4096)).await;
    stream.next_message().await.unwrap();
    let notify = node.handler.notify();
    let changes = 4_000;
    let mut last = 0;
    for _ in 0..changes {
        last = notify.resource_updated(&uri).await.unwrap().version;
        // Let the router deliver as the changes come (one runtime thread).
        tokio::task::yield_now().await;
    }
    let counter = |name: &str| {
        let text = node.handler.metrics_text();
        let line = text.lines().find_map(|l| l.strip_prefix(&format!("{name} ")).map(str::to_owned));
        line.map_or(0, |v| v.parse::<u64>().unwrap())
    };
    eventually("every change handed to the router", WAIT, async || {
        counter("mcp_fleet_bus_events_delivered_total") == changes
    })
    .await;
    assert!(counter("mcp_fleet_listen_coalesced_total") > 0, "a stalled socket makes changes coalesce");
    // Reading again: frames arrive until the newest change, fewer than were published.
    let mut received = 0;
    loop {
        let message = stream.next_message().await.unwrap();
        assert_eq!(message["params"]["uri"], uri.as_str());
        received += 1;
        if message["params"]["_meta"]["dev.mcp-fleet/event"]["version"] == last {
            break;
        }
    }
    assert!(received < changes, "{received} frames for {changes} changes");
    notify.resource_updated(&uri).await.unwrap();
    assert_eq!(stream.next_message().await.unwrap()["method"], "notifications/resources/updated");
    node.shutdown().await;
}

#[tokio::test]
async fn a_refused_listen_is_answered_and_the_connection_goes_on_with_hyper() {
    let node = TestNode::start(test_server(), HandlerOptions::default()).await;
    let mut tcp = connect(node.addr, None).await;
    // Not an object: refused before any stream (an in-band error).
    let refused = request(json!(1), "subscriptions/listen", json!({"notifications": 5}));
    tcp.write_all(&http_request(&refused)).await.unwrap();
    let mut buf = Vec::new();
    let head = read_head(&mut tcp, &mut buf).await;
    assert!(head.starts_with("HTTP/1.1 200 OK\r\n"), "{head}");
    let length: usize = header(&head, "content-length").unwrap().parse().unwrap();
    while buf.len() < length {
        tcp.read_buf(&mut buf).await.unwrap();
    }
    let error: Value = serde_json::from_slice(&buf[..length]).unwrap();
    assert_eq!((error["id"].clone(), error["error"]["code"].clone()), (json!(1), json!(-32602)), "{error}");
    buf.drain(..length);
    // The same connection, now hyper's: a second request is answered.
    tcp.write_all(&http_request(&request(json!(2), "server/discover", json!({})))).await.unwrap();
    let head = read_head(&mut tcp, &mut buf).await;
    assert!(head.starts_with("HTTP/1.1 200 "), "{head}");
    assert_eq!(node.handler.open_streams(), 0);
    node.shutdown().await;
}

#[tokio::test]
async fn with_the_direct_path_off_hyper_writes_the_stream() {
    let options = HandlerOptions::default().direct_http1_listen_streams(false);
    let node = TestNode::start(test_server(), options).await;
    let mut stream = RawStream::open(node.addr, &listen_body(4, json!({"toolsListChanged": true})), b"", None).await;
    assert!(header(&stream.head, "date").is_some());
    assert_eq!(stream.next_message().await.unwrap()["method"], "notifications/subscriptions/acknowledged");
    node.handler.notify().tools_changed().await.unwrap();
    assert_eq!(stream.next_message().await.unwrap()["method"], "notifications/tools/list_changed");
    node.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_two_workers_every_one_of_a_thousand_streams_hears_every_change() {
    // Enough streams that one change's writes are split over both worker threads.
    let node = TestNode::start(test_server(), HandlerOptions::default()).await;
    let body = listen_body(5, json!({"toolsListChanged": true}));
    let mut streams = Vec::new();
    for _ in 0..1_000 {
        let mut stream = RawStream::open(node.addr, &body, b"", None).await;
        stream.next_message().await.unwrap();
        streams.push(stream);
    }
    assert_eq!(node.handler.open_streams(), 1_000);
    let notify = node.handler.notify();
    let mut versions = Vec::new();
    for _ in 0..3 {
        versions.push(notify.tools_changed().await.unwrap().version);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    for stream in &mut streams {
        // Each change once, in order (a change coalesced away would be older than the next).
        let mut heard = Vec::new();
        while heard.last() != Some(versions.last().unwrap()) {
            let m = stream.next_message().await.unwrap();
            heard.push(m["params"]["_meta"]["dev.mcp-fleet/event"]["version"].as_u64().unwrap());
        }
        assert!(heard.windows(2).all(|w| w[0] < w[1]), "in order: {heard:?}");
    }
    node.shutdown().await;
}

#[tokio::test]
async fn a_session_get_stream_is_written_the_same_way() {
    let node = TestNode::start(test_server(), HandlerOptions::default()).await;
    let client = McpClient::new(node.url());
    let session = LegacySession::open(&client, json!({})).await;
    let get = format!(
        "GET /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\naccept: text/event-stream\r\nmcp-protocol-version: {VERSION}\r\nmcp-session-id: {}\r\n\r\n",
        session.id
    );
    let mut stream = RawStream::send(node.addr, get.as_bytes(), None).await;
    assert!(stream.head.starts_with("HTTP/1.1 200 OK\r\n"), "{}", stream.head);
    assert_eq!(header(&stream.head, "transfer-encoding"), Some("chunked"));
    assert_eq!(header(&stream.head, "content-type"), Some("text/event-stream"));
    // The priming event: an id and empty data.
    assert!(matches!(stream.next_event().await, Some(SseEvent::Message(m)) if m.is_empty()));
    node.handler.notify().tools_changed().await.unwrap();
    assert_eq!(stream.next_message().await.unwrap()["method"], "notifications/tools/list_changed");
    // The session ends: the stream ends with the last chunk, and the connection closes.
    assert_eq!(session.delete(&client).await, 200);
    assert!(stream.next_event().await.is_none());
    node.shutdown().await;
}

#[tokio::test]
async fn a_signed_content_length_is_refused_as_hyper_refuses_it() {
    let node = TestNode::start(test_server(), HandlerOptions::default()).await;
    let body = listen_body(6, json!({"toolsListChanged": true}));
    let length = serde_json::to_vec(&body).unwrap().len();
    let plain = String::from_utf8(http_request(&body)).unwrap();
    let with = |value: String| plain.replace(&format!("content-length: {length}\r\n"), &value);
    // Anything but digits, or two different lengths: 400 and no stream, whichever path reads it.
    for framing in
        [format!("content-length: +{length}\r\n"), format!("content-length: {length}\r\ncontent-length: 1\r\n")]
    {
        let stream = RawStream::send(node.addr, with(framing.clone()).as_bytes(), None).await;
        assert!(stream.head.starts_with("HTTP/1.1 400 "), "{framing:?}: {}", stream.head);
    }
    assert_eq!(node.handler.open_streams(), 0);
    // The same length twice is one length (hyper takes it too): a stream.
    let twice = with(format!("content-length: {length}\r\ncontent-length: {length}\r\n"));
    let mut stream = RawStream::send(node.addr, twice.as_bytes(), None).await;
    assert!(stream.head.starts_with("HTTP/1.1 200 OK\r\n"), "{}", stream.head);
    assert_eq!(stream.next_message().await.unwrap()["method"], "notifications/subscriptions/acknowledged");
    node.shutdown().await;
}
