//! [`SessionStreamBody`]: the SSE body of one GET stream, polled by its connection (no task of
//! its own), or taken out of hyper and written straight to its HTTP/1.1 socket
//! ([`DirectSessionStream`]). Dropping it (the client gone) unregisters the stream.

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame};
use tokio::net::TcpStream;

use super::stream::{SessionStream, SessionStreams};
use crate::listen::{DirectSocket, InterestGuard};

/// The SSE body of one GET stream, polled by the connection task (no task of its own).
/// Dropping it (client gone) unregisters the stream.
pub(crate) struct SessionStreamBody {
    pub(super) stream: Arc<SessionStream>,
    pub(super) streams: SessionStreams,
    pub(super) done: bool,
    /// What it follows, told to the bus before the response (see `listen::Interest`).
    pub(super) interest: Option<Box<InterestGuard>>,
}

impl std::fmt::Debug for SessionStreamBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionStreamBody").field("key", &self.stream.key).field("done", &self.done).finish()
    }
}

impl SessionStreamBody {
    /// The stream holding `interest` (already gained) for as long as it lives.
    pub(crate) fn following(mut self, interest: Option<Box<InterestGuard>>) -> Self {
        self.interest = interest;
        self
    }

    /// Write this stream straight to `socket` (see [`DirectSocket`]), starting with `head` (the
    /// response head, which must announce a chunked body); run it with
    /// [`DirectSessionStream::run`].
    pub(crate) fn into_direct(self, socket: TcpStream, head: Vec<u8>) -> DirectSessionStream {
        // Invariant: only this consuming call sets it, once per stream.
        let _ = self.stream.direct.set(DirectSocket::new(socket, head, b""));
        DirectSessionStream { body: self }
    }
}

/// A GET stream taken out of hyper.
#[derive(Debug)]
pub(crate) struct DirectSessionStream {
    /// Holds the stream (whose socket it is) and unregisters it when dropped.
    pub(super) body: SessionStreamBody,
}

impl DirectSessionStream {
    /// Write the head, then everything due from now on, until the stream ends (the last chunk
    /// written) or the client goes away.
    pub(crate) async fn run(self) {
        let (stream, streams) = (&self.body.stream, &self.body.streams);
        if let Some(direct) = stream.direct.get() {
            direct.run(|buf| streams.write_due(stream, buf)).await;
        }
    }
}

impl Body for SessionStreamBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        if self.done {
            return Poll::Ready(None);
        }
        // Register before looking, so a delivery racing with this poll still wakes us.
        self.stream.waker.register(cx.waker());
        let mut buf = Vec::new();
        let closing = self.streams.write_due(&self.stream, &mut buf);
        if closing {
            self.done = true;
        }
        match (buf.is_empty(), closing) {
            (false, _) => Poll::Ready(Some(Ok(Frame::data(Bytes::from(buf))))),
            (true, true) => Poll::Ready(None),
            (true, false) => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.done
    }
}

impl Drop for SessionStreamBody {
    fn drop(&mut self) {
        self.streams.unregister(&self.stream);
    }
}
