//! The direct HTTP/1.1 path against hyper: generated request heads (methods, targets, versions,
//! `Content-Length` spellings, duplicates, `Transfer-Encoding` and friends, many headers) are
//! fed both to [`read_opening`] and to hyper's own HTTP/1.1 server over an in-memory duplex
//! stream, and their verdicts compared.
//!
//! - What the direct path takes, hyper takes too, as the same request: method, target, headers
//!   and body length (two parsers that disagree on framing are how requests get smuggled).
//! - What hyper takes and the direct path's contract covers (an HTTP/1.1 listen POST or a GET,
//!   no `Transfer-Encoding`/`Expect`/`Upgrade`, within its header and body limits), the direct
//!   path takes.
//! - Everything else is left to hyper, which then gives its own answer.
//!
//! 256 cases by default; `PROPTEST_CASES` raises it (see `docs/fuzzing.md`).

use std::convert::Infallible;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http::{HeaderMap, Request, Response};
use http_body::Body as _;
use http_body_util::Empty;
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use proptest::prelude::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::{MAX_HEADERS, Opening, is_listen, read_opening};

/// The direct path's body limit in these tests (small, so "over the limit" is cheap to send).
const MAX_BODY: usize = 1024;
const LISTEN: &[u8] = br#"{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{}}"#;

/// A request as a server passed it on: what a handler would see of it.
#[derive(Debug, Clone, PartialEq)]
struct Taken {
    method: String,
    uri: String,
    headers: HeaderMap,
    body_len: u64,
}

/// What the direct path did with the bytes.
#[derive(Debug)]
enum Direct {
    Took(Taken),
    LeftToHyper,
    Closed,
}

/// Run the direct path's first read over `bytes` (the client then closes its side).
async fn direct(bytes: &[u8]) -> Direct {
    let (mut client, mut server) = tokio::io::duplex(bytes.len() + 1);
    client.write_all(bytes).await.expect("the duplex has room for it all");
    drop(client);
    match read_opening(&mut server, MAX_BODY).await {
        Opening::Stream { request, .. } => Direct::Took(Taken {
            method: request.method().to_string(),
            uri: request.uri().to_string(),
            headers: request.headers().clone(),
            body_len: request.body().len() as u64,
        }),
        Opening::Hyper(_) => Direct::LeftToHyper,
        Opening::Closed => Direct::Closed,
    }
}

/// Serve `bytes` with hyper's HTTP/1.1 server (default settings, as the endpoint's builder
/// leaves them): the first request its service was called with, `None` if it refused them.
async fn hyper_takes(bytes: &[u8]) -> Option<Taken> {
    let (mut client, server) = tokio::io::duplex(64 * 1024);
    let first: Arc<Mutex<Option<Taken>>> = Arc::default();
    let seen = first.clone();
    let service = service_fn(move |req: Request<Incoming>| {
        let mut seen = seen.lock().expect("not poisoned");
        if seen.is_none() {
            *seen = Some(Taken {
                method: req.method().to_string(),
                uri: req.uri().to_string(),
                headers: req.headers().clone(),
                // A chunked body has no exact length: never a direct-path request.
                body_len: req.body().size_hint().exact().unwrap_or(u64::MAX),
            });
        }
        async { Ok::<_, Infallible>(Response::new(Empty::<Bytes>::new())) }
    });
    let conn = hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(server), service);
    let talk = async {
        let _ = client.write_all(bytes).await;
        let _ = client.shutdown().await;
        let mut answer = Vec::new();
        let _ = client.read_to_end(&mut answer).await;
    };
    let _ = tokio::join!(conn, talk);
    first.lock().expect("not poisoned").take()
}

/// Whether the direct path's contract covers a request hyper took (stated from hyper's view
/// of it, not from the direct path's code).
fn covered(taken: &Taken, head: &Head, body: &[u8]) -> bool {
    let plain_framing = !["transfer-encoding", "expect", "upgrade"].iter().any(|h| taken.headers.contains_key(*h));
    let fits = head.version == "HTTP/1.1" && head.header_count() <= MAX_HEADERS;
    let len = usize::try_from(taken.body_len).unwrap_or(usize::MAX);
    let shape = match taken.method.as_str() {
        "GET" => len == 0,
        "POST" => len <= MAX_BODY && is_listen(&body[..len.min(body.len())]),
        _ => false,
    };
    plain_framing && fits && shape
}

/// A generated request head.
#[derive(Debug, Clone)]
struct Head {
    method: String,
    target: String,
    version: String,
    headers: Vec<(String, String)>,
    /// Headers added to reach (or pass) the header limits.
    padding: usize,
    line_end: &'static str,
}

impl Head {
    fn header_count(&self) -> usize {
        self.headers.len() + self.padding
    }

    fn bytes(&self) -> Vec<u8> {
        let end = self.line_end;
        let mut out = format!("{} {} {}{end}", self.method, self.target, self.version);
        for (name, value) in &self.headers {
            out.push_str(&format!("{name}:{value}{end}"));
        }
        for i in 0..self.padding {
            out.push_str(&format!("x-pad-{i}: {i}{end}"));
        }
        out.push_str(end);
        out.into_bytes()
    }
}

/// A `Content-Length` value, spelled in one of the ways clients (and attackers) spell it.
fn content_length() -> impl Strategy<Value = String> {
    let n = LISTEN.len() as u64;
    let number = prop_oneof![
        4 => (0u64..24).prop_map(move |k| n + k),
        1 => Just(0u64),
        1 => Just(5u64),
        1 => Just(MAX_BODY as u64),
        1 => Just(MAX_BODY as u64 + 1),
        1 => Just(u64::MAX),
        1 => Just(u64::MAX - 2),
        1 => any::<u64>(),
    ];
    (number, 0..14u8, 0..3usize).prop_map(|(n, spelling, zeros)| match spelling {
        0..=4 => n.to_string(),
        5 => format!("{}{n}", "0".repeat(zeros + 1)),
        6 => format!("+{n}"),
        7 => format!("-{n}"),
        8 => format!(" {n} "),
        9 => format!("\t{n}"),
        10 => format!("{n},{n}"),
        11 => format!("{n}, {}", n.wrapping_add(zeros as u64)),
        12 => format!("{n}0000000000000000000000"),
        _ => ["", "0x45", "69.0", "69;q=1", "6 9", "\u{ff11}\u{ff12}"][(n % 6) as usize].to_owned(),
    })
}

/// One header line's name and value.
fn header() -> impl Strategy<Value = (String, String)> {
    let fixed = prop_oneof![
        Just(("host", " x")),
        Just(("content-type", " application/json")),
        Just(("accept", " application/json, text/event-stream")),
        Just(("Transfer-Encoding", " chunked")),
        Just(("transfer-encoding", " gzip, chunked")),
        Just(("transfer-encoding", " identity")),
        Just(("Expect", " 100-continue")),
        Just(("upgrade", " websocket")),
        Just(("connection", " close")),
        Just(("connection", " keep-alive, Upgrade")),
        Just(("mcp-protocol-version", " 2026-07-28")),
        Just(("bad header", " x")),
        Just(("x-folded", " a\r\n b")),
        Just(("x-empty", "")),
        Just(("x-obs", " caf\u{e9}")),
    ]
    .prop_map(|(n, v)| (n.to_owned(), v.to_owned()));
    prop_oneof![
        4 => fixed,
        3 => (prop::sample::select(vec!["content-length", "Content-Length", "CONTENT-LENGTH"]), content_length())
            .prop_map(|(n, v)| (n.to_owned(), format!(" {v}"))),
        2 => ("[a-zA-Z0-9!#$%&'*+.^_`|~-]{1,12}", "[ -~\t]{0,16}").prop_map(|(n, v)| (n, format!(" {v}"))),
    ]
}

fn head() -> impl Strategy<Value = Head> {
    let method = prop_oneof![
        6 => Just("POST"),
        3 => Just("GET"),
        1 => prop::sample::select(vec!["post", "PUT", "DELETE", "CONNECT", "PRI", "G\u{1}T", ""]),
    ];
    let target = prop_oneof![
        6 => Just("/mcp".to_owned()),
        1 => prop::sample::select(vec!["/", "*", "http://x/mcp", "x:80", "/mcp?a=b&c", "/m%20cp", "/mcp#f", "//x", ""])
            .prop_map(str::to_owned),
        1 => "/[ -~]{0,12}",
    ];
    let version = prop_oneof![
        8 => Just("HTTP/1.1"),
        1 => prop::sample::select(vec!["HTTP/1.0", "HTTP/2.0", "http/1.1", "HTTP/1.1 ", "HTTP/1.10", "HTTP/3"]),
    ];
    let padding = prop_oneof![6 => Just(0usize), 1 => 55..75usize];
    let line_end = prop_oneof![9 => Just("\r\n"), 1 => Just("\n")];
    (method, target, version, prop::collection::vec(header(), 0..6), padding, line_end).prop_map(
        |(method, target, version, headers, padding, line_end)| Head {
            method: method.to_owned(),
            target,
            version: version.to_owned(),
            headers,
            padding,
            line_end,
        },
    )
}

/// Compare the two servers on `head` followed by a listen body padded past the body limit (so
/// any declared length within the limit has its bytes there; what follows is a next request).
fn compare(head: &Head) -> Result<(), TestCaseError> {
    let mut body = LISTEN.to_vec();
    body.resize(MAX_BODY + 16, b' ');
    let mut bytes = head.bytes();
    bytes.extend_from_slice(&body);
    let runtime = tokio::runtime::Builder::new_current_thread().build().expect("a runtime");
    let (direct, hyper) = runtime.block_on(async { (direct(&bytes).await, hyper_takes(&bytes).await) });
    let shown = String::from_utf8_lossy(&bytes[..bytes.len() - body.len()]).into_owned();
    match (&direct, &hyper) {
        (Direct::Took(d), Some(h)) => prop_assert_eq!(d, h, "the two read one request differently: {:?}", shown),
        (Direct::Took(d), None) => prop_assert!(false, "taken directly, refused by hyper: {:?}\n{:?}", shown, d),
        (Direct::Closed, Some(_)) => prop_assert!(false, "closed directly, served by hyper: {:?}", shown),
        (Direct::LeftToHyper, Some(h)) => {
            prop_assert!(!covered(h, head, &body), "hyper took a listen the direct path left: {:?}\n{:?}", shown, h)
        }
        (Direct::LeftToHyper | Direct::Closed, None) => {}
    }
    Ok(())
}

proptest! {
    #[test]
    fn the_direct_path_takes_exactly_what_hyper_takes(head in head()) {
        compare(&head)?;
    }
}
