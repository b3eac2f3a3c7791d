//! [`ResponseBody`]: every body the MCP endpoint answers with, one type (no boxing on the hot
//! path) over a private enum: a complete JSON body, nothing, a call's SSE stream, a listen
//! stream, or a 2025-era call's or session's stream.

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};

use super::call_body::CallBody;
use super::era2025::ChannelBody;
use crate::era2025::SessionStreamBody;
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
    /// A 2025-era call's SSE stream (notifications, server-to-client requests, the answer).
    Channel(ChannelBody),
    /// A 2025-era session's GET stream.
    SessionStream(SessionStreamBody),
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

    /// A 2025-era call's stream.
    pub(crate) fn channel(body: ChannelBody) -> Self {
        ResponseBody(Kind::Channel(body))
    }

    /// A 2025-era session's GET stream.
    pub(crate) fn session_stream(body: SessionStreamBody) -> Self {
        ResponseBody(Kind::SessionStream(body))
    }

    /// The never-ending stream this body is, or the body itself when it is something else.
    pub(crate) fn into_endless(self) -> Result<EndlessBody, Self> {
        match self.0 {
            Kind::Listen(listen) => Ok(EndlessBody::Listen(listen)),
            Kind::SessionStream(body) => Ok(EndlessBody::Session(body)),
            other => Err(ResponseBody(other)),
        }
    }
}

/// A body that ends only when the server or the client ends it: what `h1` writes outside hyper.
#[derive(Debug)]
pub(crate) enum EndlessBody {
    /// A `subscriptions/listen` stream.
    Listen(ListenBody),
    /// A 2025-era session's GET stream.
    Session(SessionStreamBody),
}

impl Body for ResponseBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        match &mut self.get_mut().0 {
            Kind::Full(bytes) => Poll::Ready(bytes.take().map(|b| Ok(Frame::data(b)))),
            Kind::Call(stream) => Pin::new(stream).poll_frame(cx),
            Kind::Listen(listen) => Pin::new(listen).poll_frame(cx),
            Kind::Channel(body) => Pin::new(body).poll_frame(cx),
            Kind::SessionStream(body) => Pin::new(body).poll_frame(cx),
        }
    }

    fn is_end_stream(&self) -> bool {
        match &self.0 {
            Kind::Full(bytes) => bytes.is_none(),
            Kind::Call(stream) => stream.is_end_stream(),
            Kind::Listen(listen) => listen.is_end_stream(),
            Kind::Channel(body) => body.is_end_stream(),
            Kind::SessionStream(body) => body.is_end_stream(),
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
