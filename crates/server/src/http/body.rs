//! [`ResponseBody`]: every body the MCP endpoint answers with, one type (no boxing on the hot
//! path) over a private enum: a complete JSON body, nothing, a call's SSE stream, or a listen
//! stream.

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};

use super::call_body::CallBody;
use crate::listen::ListenBody;

/// The body of an MCP endpoint response (an `http_body::Body` of `Bytes`).
#[derive(Debug)]
pub struct ResponseBody(Kind);

#[derive(Debug)]
enum Kind {
    /// A complete body (JSON), sent once.
    Full(Option<Bytes>),
    /// A call's SSE stream: request-scoped notifications, then the response.
    Call(CallBody),
    /// A `subscriptions/listen` stream.
    Listen(ListenBody),
}

impl ResponseBody {
    /// A complete body.
    pub(crate) fn full(bytes: impl Into<Bytes>) -> Self {
        ResponseBody(Kind::Full(Some(bytes.into())))
    }

    /// No body.
    pub(crate) fn empty() -> Self {
        ResponseBody(Kind::Full(None))
    }

    /// A call's SSE stream.
    pub(crate) fn call(stream: CallBody) -> Self {
        ResponseBody(Kind::Call(stream))
    }

    /// A listen stream.
    pub(crate) fn listen(body: ListenBody) -> Self {
        ResponseBody(Kind::Listen(body))
    }
}

impl Body for ResponseBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        match &mut self.get_mut().0 {
            Kind::Full(bytes) => Poll::Ready(bytes.take().map(|b| Ok(Frame::data(b)))),
            Kind::Call(stream) => Pin::new(stream).poll_frame(cx),
            Kind::Listen(listen) => Pin::new(listen).poll_frame(cx),
        }
    }

    fn is_end_stream(&self) -> bool {
        match &self.0 {
            Kind::Full(bytes) => bytes.is_none(),
            Kind::Call(stream) => stream.is_end_stream(),
            Kind::Listen(listen) => listen.is_end_stream(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match &self.0 {
            Kind::Full(Some(b)) => SizeHint::with_exact(b.len() as u64),
            Kind::Full(None) => SizeHint::with_exact(0),
            _ => SizeHint::default(),
        }
    }
}
