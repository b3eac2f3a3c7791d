//! The accept path of the MCP endpoint: a connection's first request is read here — its head
//! with `httparse`, its body by `Content-Length` — and when it is an HTTP/1.1
//! `subscriptions/listen` POST or a GET (a 2025-era session's stream), the connection leaves
//! hyper. Its answer's head is written here, and the stream is then written by whoever marks it
//! straight to the socket (see `direct`): no per-connection read and write buffers, no task
//! woken per delivery. Everything else — h2c, any other first request, anything unusual
//! (chunked or oversized bodies, `Expect`, `Upgrade`, HTTP/1.0, bad heads) — is served by hyper
//! over a [`Rewind`] that replays the bytes read, so hyper sees the connection as it came (and
//! gives its own answers to what it refuses).
//!
//! A first request taken here but answered without a stream (a refusal: 400, 401, 404, 429…)
//! is written here too, and the connection then goes on with hyper.

use std::borrow::Cow;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use http::{HeaderName, HeaderValue, Method, Request, Uri, Version, header};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::TokioExecutor;
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::Watcher;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::body::{EndlessBody, ResponseBody};
use super::rewind::Rewind;
use super::serve::serve_with_hyper;
use crate::context::ClientAddr;
use crate::shared::HandlerShared;
use mcp_fleet_protocol::Method as McpMethod;

/// A first request head larger than this is left to hyper (which applies its own limits).
const MAX_HEAD: usize = 16 * 1024;
/// Headers parsed in a first request head; one with more is left to hyper.
const MAX_HEADERS: usize = 64;
/// What the read buffer of a first request starts with.
const FIRST_READ: usize = 2048;

/// What a connection opened with.
#[derive(Debug)]
enum Opening {
    /// An HTTP/1.1 `subscriptions/listen` POST or GET, read whole; `rest` is what followed it.
    Stream { request: Box<Request<Bytes>>, rest: Bytes },
    /// Anything else: hyper serves the connection, starting with these bytes.
    Hyper(Bytes),
    /// The client left (or the read failed) before sending a request.
    Closed,
}

/// Serve one accepted connection of the MCP endpoint (see the module docs).
pub(super) async fn serve_connection(
    handler: Arc<HandlerShared>,
    builder: Arc<auto::Builder<TokioExecutor>>,
    mut stream: TcpStream,
    peer: SocketAddr,
    watcher: Watcher,
) {
    let options = &handler.options;
    let opening = if options.direct_http1_listen {
        let mut stop = handler.shutdown.subscribe();
        let read =
            tokio::time::timeout(options.request_read_timeout, read_opening(&mut stream, options.max_body_bytes));
        // Every future awaited here is boxed: a task is as large as the largest future its
        // async fn awaits inline, and a connection should carry only what its state needs (an
        // open stream, or hyper's connection) for as long as it is open.
        Box::pin(async {
            tokio::select! {
                read = read => read.unwrap_or(Opening::Closed),
                // An idle connection does not hold up a drain.
                () = stop.recv() => Opening::Closed,
            }
        })
        .await
    } else {
        Opening::Hyper(Bytes::new())
    };
    match opening {
        Opening::Closed => {}
        Opening::Hyper(read) => {
            Box::pin(serve_hyper(&handler, &builder, Rewind::new(read, stream), peer, watcher)).await
        }
        Opening::Stream { mut request, rest } => {
            request.extensions_mut().insert(ClientAddr(peer));
            let close = wants_close(request.headers());
            let response = Box::pin(handler.handle((*request).map(Full::new))).await;
            let (parts, body) = response.into_parts();
            match body.into_endless() {
                Ok(endless) => {
                    let head = head(&parts, None);
                    // Nothing of the request stays with the stream (`rest` shares the read
                    // buffer): per open stream, only what it needs.
                    drop((parts, rest));
                    match endless {
                        EndlessBody::Listen(listen) => Box::pin(listen.into_direct(stream, head).run()).await,
                        EndlessBody::Session(session) => Box::pin(session.into_direct(stream, head).run()).await,
                    }
                }
                Err(body) => {
                    if Box::pin(write_full(&mut stream, &parts, body)).await.is_ok() && !close {
                        Box::pin(serve_hyper(&handler, &builder, Rewind::new(rest, stream), peer, watcher)).await;
                    }
                }
            }
        }
    }
}

/// Hand the connection to hyper (see [`serve_with_hyper`]).
async fn serve_hyper(
    handler: &Arc<HandlerShared>,
    builder: &auto::Builder<TokioExecutor>,
    io: Rewind<TcpStream>,
    peer: SocketAddr,
    watcher: Watcher,
) {
    let handler = handler.clone();
    let service = move |req: Request<Incoming>| {
        let handler = handler.clone();
        async move { Ok::<_, Infallible>(handler.handle(req).await) }
    };
    serve_with_hyper(builder, io, peer, service, watcher).await;
}

/// Read the connection's first request as far as needed to tell whether it is a listen.
/// Generic over the stream so the differential test can feed it what it feeds hyper.
async fn read_opening<S: AsyncRead + Unpin>(stream: &mut S, max_body: usize) -> Opening {
    let mut buf = BytesMut::with_capacity(FIRST_READ);
    loop {
        match stream.read_buf(&mut buf).await {
            Ok(0) | Err(_) => return Opening::Closed,
            Ok(_) => {}
        }
        match inspect(&buf, max_body) {
            Inspection::NeedMore => continue,
            Inspection::Hyper => return Opening::Hyper(buf.freeze()),
            Inspection::Request { head_len, body_len, get } => {
                let end = head_len + body_len;
                while buf.len() < end {
                    buf.reserve(end - buf.len());
                    match stream.read_buf(&mut buf).await {
                        Ok(0) | Err(_) => return Opening::Closed,
                        Ok(_) => {}
                    }
                }
                if !get && !is_listen(&buf[head_len..end]) {
                    return Opening::Hyper(buf.freeze());
                }
                let mut all = buf.freeze();
                let rest = all.split_off(end);
                let body = all.split_off(head_len);
                return match request(&all, body) {
                    Some(request) => Opening::Stream { request: Box::new(request), rest },
                    None => {
                        let mut whole = BytesMut::from(&all[..]);
                        whole.extend_from_slice(&rest);
                        Opening::Hyper(whole.freeze())
                    }
                };
            }
        }
    }
}

/// What the bytes read so far say.
#[derive(Debug, PartialEq, Eq)]
enum Inspection {
    /// Not a whole request head yet.
    NeedMore,
    /// Not one this path serves: hyper's.
    Hyper,
    /// An HTTP/1.1 POST or GET whose head is `head_len` bytes, with a `body_len`-byte body.
    Request { head_len: usize, body_len: usize, get: bool },
}

fn inspect(buf: &[u8], max_body: usize) -> Inspection {
    const H2_PREFACE: &[u8] = b"PRI * HTTP/2.0";
    if buf.len() < H2_PREFACE.len() && H2_PREFACE.starts_with(buf) {
        return Inspection::NeedMore;
    }
    if buf.starts_with(H2_PREFACE) {
        return Inspection::Hyper;
    }
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut headers);
    let head_len = match req.parse(buf) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) if buf.len() <= MAX_HEAD => return Inspection::NeedMore,
        Ok(httparse::Status::Partial) | Err(_) => return Inspection::Hyper,
    };
    let get = match (req.method, req.version) {
        (Some("POST"), Some(1)) => false,
        (Some("GET"), Some(1)) => true,
        _ => return Inspection::Hyper,
    };
    let mut body_len = None;
    for h in req.headers.iter() {
        if h.name.eq_ignore_ascii_case("content-length") {
            // Framing read the way hyper reads it, or not here at all: two parsers that
            // disagree on a body's length are how requests get smuggled.
            match (body_len, content_length(h.value).and_then(|n| usize::try_from(n).ok())) {
                (None, Some(len)) => body_len = Some(len),
                // RFC 9112 §6.3: repeated identical values are one length (hyper takes them).
                (Some(prev), Some(len)) if prev == len => {}
                // Unparsable or differing lengths: hyper answers 400.
                _ => return Inspection::Hyper,
            }
        } else if ["transfer-encoding", "expect", "upgrade"].iter().any(|n| h.name.eq_ignore_ascii_case(n)) {
            return Inspection::Hyper;
        }
    }
    match (body_len, get) {
        (None | Some(0), true) => Inspection::Request { head_len, body_len: 0, get },
        (Some(body_len), false) if body_len <= max_body => Inspection::Request { head_len, body_len, get },
        _ => Inspection::Hyper,
    }
}

/// A `Content-Length` value as hyper's HTTP/1.1 server reads it: one or more ASCII digits and
/// nothing else (no sign, no blanks, no list), within `u64`. Rust's integer parser takes a
/// leading `+`, which hyper refuses (RFC 9110 §8.6: `Content-Length = 1*DIGIT`).
pub(super) fn content_length(value: &[u8]) -> Option<u64> {
    if value.is_empty() {
        return None;
    }
    value.iter().try_fold(0u64, |n, &b| match b {
        b'0'..=b'9' => n.checked_mul(10)?.checked_add(u64::from(b - b'0')),
        _ => None,
    })
}

/// Whether a request body is a `subscriptions/listen` (the handler validates it for real).
fn is_listen(body: &[u8]) -> bool {
    #[derive(serde::Deserialize)]
    struct Probe<'a> {
        #[serde(borrow)]
        method: Option<Cow<'a, str>>,
    }
    serde_json::from_slice::<Probe<'_>>(body)
        .is_ok_and(|p| p.method.as_deref() == Some(McpMethod::SubscriptionsListen.as_str()))
}

/// The request `head` (complete, checked by [`inspect`]) with `body`; `None` when a part of the
/// head is not something `http` takes (hyper then answers it).
fn request(head: &[u8], body: Bytes) -> Option<Request<Bytes>> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut headers);
    req.parse(head).ok()?;
    let mut request = Request::new(body);
    *request.method_mut() = Method::from_bytes(req.method?.as_bytes()).ok()?;
    *request.version_mut() = Version::HTTP_11;
    *request.uri_mut() = Uri::try_from(req.path?).ok()?;
    let map = request.headers_mut();
    for h in req.headers.iter() {
        let name = HeaderName::from_bytes(h.name.as_bytes()).ok()?;
        // A repeated (identical, checked by `inspect`) Content-Length is kept once, as hyper
        // keeps it: the handler sees the same request on either path.
        if name == header::CONTENT_LENGTH && map.contains_key(&name) {
            continue;
        }
        map.append(name, HeaderValue::from_bytes(h.value).ok()?);
    }
    Some(request)
}

/// Whether the client asked to close the connection after this request.
fn wants_close(headers: &http::HeaderMap) -> bool {
    headers
        .get_all(header::CONNECTION)
        .iter()
        .any(|v| v.to_str().is_ok_and(|v| v.split(',').any(|t| t.trim().eq_ignore_ascii_case("close"))))
}

/// The response head: status line, the response's headers, `date`, and the framing —
/// `content-length` for a body of `length` bytes, else chunked.
fn head(parts: &http::response::Parts, length: Option<usize>) -> Vec<u8> {
    let mut head = Vec::with_capacity(256);
    head.extend_from_slice(b"HTTP/1.1 ");
    head.extend_from_slice(parts.status.as_str().as_bytes());
    head.push(b' ');
    head.extend_from_slice(parts.status.canonical_reason().unwrap_or("").as_bytes());
    head.extend_from_slice(b"\r\n");
    for (name, value) in &parts.headers {
        if name == header::CONTENT_LENGTH || name == header::TRANSFER_ENCODING {
            continue;
        }
        head.extend_from_slice(name.as_str().as_bytes());
        head.extend_from_slice(b": ");
        head.extend_from_slice(value.as_bytes());
        head.extend_from_slice(b"\r\n");
    }
    head.extend_from_slice(b"date: ");
    head.extend_from_slice(httpdate::fmt_http_date(std::time::SystemTime::now()).as_bytes());
    head.extend_from_slice(b"\r\n");
    let bodiless = parts.status.is_informational()
        || parts.status == http::StatusCode::NO_CONTENT
        || parts.status == http::StatusCode::NOT_MODIFIED;
    match length {
        // RFC 9110 §8.6: no Content-Length on a 1xx or 204 answer (nor a 304's body).
        Some(_) if bodiless => head.extend_from_slice(b"\r\n"),
        Some(n) => head.extend_from_slice(format!("content-length: {n}\r\n\r\n").as_bytes()),
        None => head.extend_from_slice(b"transfer-encoding: chunked\r\n\r\n"),
    }
    head
}

/// Write a response that is not a stream, whole.
async fn write_full(stream: &mut TcpStream, parts: &http::response::Parts, body: ResponseBody) -> std::io::Result<()> {
    // Every body but a listen stream's ends; `ResponseBody` cannot fail (its error is
    // `Infallible`).
    let bytes = match body.collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(never) => match never {},
    };
    let mut out = head(parts, Some(bytes.len()));
    out.extend_from_slice(&bytes);
    stream.write_all(&out).await
}

#[cfg(test)]
mod differential;

#[cfg(test)]
mod tests {
    use super::*;
    use http::Response;

    const LISTEN: &[u8] = br#"{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{}}"#;

    fn post(body: &[u8], extra: &str) -> Vec<u8> {
        let mut req = format!(
            "POST /mcp HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n{extra}content-length: {}\r\n\r\n",
            body.len()
        )
        .into_bytes();
        req.extend_from_slice(body);
        req
    }

    #[test]
    fn a_listen_post_is_taken_and_everything_unusual_is_left_to_hyper() {
        let req = post(LISTEN, "");
        let head_len = req.len() - LISTEN.len();
        assert_eq!(inspect(&req, 1 << 20), Inspection::Request { head_len, body_len: LISTEN.len(), get: false });
        let get = b"GET /mcp HTTP/1.1\r\nhost: x\r\n\r\n";
        assert_eq!(inspect(get, 1 << 20), Inspection::Request { head_len: get.len(), body_len: 0, get: true });
        assert_eq!(inspect(b"GET /mcp HTTP/1.1\r\ncontent-length: 2\r\n\r\n{}", 1 << 20), Inspection::Hyper);
        assert_eq!(inspect(b"DELETE /mcp HTTP/1.1\r\nhost: x\r\n\r\n", 1 << 20), Inspection::Hyper);
        assert_eq!(inspect(&req[..20], 1 << 20), Inspection::NeedMore);
        assert_eq!(inspect(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 1 << 20), Inspection::Hyper);
        assert_eq!(inspect(b"PRI", 1 << 20), Inspection::NeedMore);
        assert_eq!(inspect(b"POST /mcp HTTP/1.0\r\ncontent-length: 0\r\n\r\n", 1 << 20), Inspection::Hyper);
        assert_eq!(inspect(&post(LISTEN, "transfer-encoding: chunked\r\n"), 1 << 20), Inspection::Hyper);
        assert_eq!(inspect(&post(LISTEN, "expect: 100-continue\r\n"), 1 << 20), Inspection::Hyper);
        assert_eq!(inspect(&post(LISTEN, "content-length: 3\r\n"), 1 << 20), Inspection::Hyper);
        assert_eq!(inspect(&req, 10), Inspection::Hyper, "a body over the limit: hyper answers 413");
        assert_eq!(inspect(b"\x00\x01garbage\r\n\r\n", 1 << 20), Inspection::Hyper);
        let huge = format!("POST /mcp HTTP/1.1\r\nx: {}", "a".repeat(MAX_HEAD + 1));
        assert_eq!(inspect(huge.as_bytes(), 1 << 20), Inspection::Hyper);
    }

    #[test]
    fn a_content_length_is_digits_only_as_hyper_reads_it() {
        let req = post(LISTEN, "");
        let head_len = req.len() - LISTEN.len();
        let with_length = |value: &str| {
            let text = String::from_utf8(req.clone()).unwrap();
            text.replace(&format!("content-length: {}", LISTEN.len()), &format!("content-length: {value}")).into_bytes()
        };
        for bad in ["+69", "-69", "6 9", "0x45", "69,69", "", "99999999999999999999999"] {
            let bad = with_length(bad);
            assert_eq!(inspect(&bad, 1 << 20), Inspection::Hyper, "{:?}", String::from_utf8_lossy(&bad));
        }
        let n = LISTEN.len();
        let twice = with_length(&format!("{n}\r\ncontent-length: {n}"));
        let repeated = format!("\r\ncontent-length: {n}").len();
        assert_eq!(
            inspect(&twice, 1 << 20),
            Inspection::Request { head_len: head_len + repeated, body_len: n, get: false }
        );
        let differing = with_length(&format!("{n}\r\ncontent-length: {}", n + 1));
        assert_eq!(inspect(&differing, 1 << 20), Inspection::Hyper);
        assert_eq!(content_length(b"007"), Some(7));
        assert_eq!(content_length(b"18446744073709551615"), Some(u64::MAX));
        assert_eq!(content_length(b"18446744073709551616"), None);
    }

    #[test]
    fn only_a_listen_method_is_a_listen() {
        assert!(is_listen(LISTEN));
        assert!(!is_listen(br#"{"jsonrpc":"2.0","id":1,"method":"tools/call"}"#));
        assert!(!is_listen(br#"[{"method":"subscriptions/listen"}]"#));
        assert!(!is_listen(b"not json"));
        assert!(is_listen(br#"{"method":"subscriptions\/listen"}"#), "escapes decode");
    }

    #[test]
    fn the_request_keeps_its_target_and_headers() {
        let req = post(LISTEN, "authorization: Bearer t\r\n");
        let head_len = req.len() - LISTEN.len();
        let r = request(&req[..head_len], Bytes::copy_from_slice(LISTEN)).unwrap();
        assert_eq!(r.uri().path(), "/mcp");
        assert_eq!(r.headers()["authorization"], "Bearer t");
        assert_eq!(r.headers()["content-type"], "application/json");
        assert_eq!(r.body().as_ref(), LISTEN);
        assert!(wants_close(
            &"close"
                .parse::<HeaderValue>()
                .map(|v| {
                    let mut m = http::HeaderMap::new();
                    m.insert(header::CONNECTION, v);
                    m
                })
                .unwrap()
        ));
    }

    #[test]
    fn a_repeated_content_length_reaches_the_handler_once_as_through_hyper() {
        // Found by the differential test (`differential.rs`): the direct path passed both.
        let req = b"POST /mcp HTTP/1.1\r\ncontent-length: 1024\r\ncontent-length: 1024\r\n\r\n";
        let r = request(req, Bytes::new()).unwrap();
        assert_eq!(r.headers().get_all(header::CONTENT_LENGTH).iter().count(), 1);
    }

    #[test]
    fn a_head_frames_its_body() {
        let response = Response::builder()
            .status(200)
            .header("content-type", "text/event-stream")
            .header("content-length", "9")
            .body(ResponseBody::empty())
            .unwrap();
        let text = String::from_utf8(head(&response.into_parts().0, None)).unwrap();
        assert!(text.starts_with("HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ndate: "), "{text}");
        assert!(text.ends_with("\r\ntransfer-encoding: chunked\r\n\r\n") && !text.contains("content-length"), "{text}");
    }
}
