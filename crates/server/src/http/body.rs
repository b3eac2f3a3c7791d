//! [`ResponseBody`]: every body the MCP endpoint answers with, as one enum (no boxing on the
//! hot path): a complete JSON body, nothing, a call's SSE stream, or a listen stream.

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};

use super::call_stream::CallStream;
use crate::listen::ListenBody;

/// The body of an MCP endpoint response.
#[derive(Debug)]
pub enum ResponseBody {
    /// A complete body (JSON), sent once.
    Full(Option<Bytes>),
    /// A call's SSE stream: request-scoped notifications, then the response.
    Call(CallStream),
    /// A `subscriptions/listen` stream.
    Listen(ListenBody),
}

impl ResponseBody {
    /// A complete body.
    pub fn full(bytes: impl Into<Bytes>) -> Self {
        ResponseBody::Full(Some(bytes.into()))
    }

    /// No body.
    pub fn empty() -> Self {
        ResponseBody::Full(None)
    }
}

impl Body for ResponseBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        match self.get_mut() {
            ResponseBody::Full(bytes) => Poll::Ready(bytes.take().map(|b| Ok(Frame::data(b)))),
            ResponseBody::Call(stream) => Pin::new(stream).poll_frame(cx),
            ResponseBody::Listen(listen) => Pin::new(listen).poll_frame(cx),
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            ResponseBody::Full(bytes) => bytes.is_none(),
            ResponseBody::Call(stream) => stream.is_end_stream(),
            ResponseBody::Listen(listen) => listen.is_end_stream(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            ResponseBody::Full(Some(b)) => SizeHint::with_exact(b.len() as u64),
            ResponseBody::Full(None) => SizeHint::with_exact(0),
            _ => SizeHint::default(),
        }
    }
}
