//! [`ListenBody`]: the SSE response body of one listen stream.
//!
//! Over h2c it is polled by the connection task that owns the socket — no task or channel of its
//! own. Over HTTP/1.1 it leaves hyper and is written directly (see `direct`), with the same
//! [`write_due`].
//! Each poll writes the ack (first), then everything pending, in one buffer; when nothing is
//! pending but a keepalive is due, a comment; when the server closes, the completion result and
//! then the end of the stream. Dropping it (client gone) unregisters the subscription.

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use mcp_fleet_protocol::sse;

use tokio::net::TcpStream;

use super::budget::BudgetPermit;
use super::direct::DirectSocket;
use super::interest::InterestGuard;
use super::router::ListenRouter;
use super::subscription::Subscription;
use crate::auth::StreamSlot;
use crate::metrics::Metrics;

/// The body of a `subscriptions/listen` response.
pub(crate) struct ListenBody {
    sub: Arc<Subscription>,
    router: ListenRouter,
    /// The ack event, until it is written (a boxed slice: the body is held per open stream).
    ack: Option<Box<[u8]>>,
    done: bool,
    /// The principal's stream slot, released when the stream ends.
    _permit: Option<StreamSlot>,
    /// Its subscription bytes or address slot (see `budget`), released when it ends.
    _budget: Option<BudgetPermit>,
    /// What it follows, told to the bus before its ack (see `interest`), lost when it ends.
    interest: Option<Box<InterestGuard>>,
}

impl std::fmt::Debug for ListenBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ListenBody").field("key", &self.sub.key).field("done", &self.done).finish()
    }
}

impl ListenBody {
    pub(crate) fn new(sub: Arc<Subscription>, router: ListenRouter) -> Self {
        let mut ack = Vec::with_capacity(256);
        sse::ack_event(&mut ack, &sub.request_id, &sub.filter.to_wire());
        ListenBody {
            sub,
            router,
            ack: Some(ack.into_boxed_slice()),
            done: false,
            _permit: None,
            _budget: None,
            interest: None,
        }
    }

    /// The stream following `interest`, which [`follow`](Self::follow) tells the bus.
    pub(crate) fn following(mut self, interest: Option<Box<InterestGuard>>) -> Self {
        self.interest = interest;
        self
    }

    /// Tell the bus what this stream follows; once this resolves, every event published that
    /// the stream follows reaches this node. Called before the response (and its ack) is sent.
    pub(crate) async fn follow(&mut self) -> Result<(), mcp_fleet_bus::BusError> {
        match &mut self.interest {
            Some(interest) => interest.gain().await,
            None => Ok(()),
        }
    }

    /// The stream holding its principal's `permit` for as long as it lives.
    pub(crate) fn holding(mut self, permit: Option<StreamSlot>, budget: BudgetPermit) -> Self {
        self._permit = permit;
        self._budget = Some(budget);
        self
    }

    /// Everything due now, in one buffer (empty when nothing is).
    fn collect(&mut self) -> Vec<u8> {
        let mut buf = self.ack.take().map(Vec::from).unwrap_or_default();
        self.done = write_due(&self.sub, &mut buf, self.router.metrics());
        buf
    }
}

/// Append everything due on `sub` to `buf`: its pending frames, or a keepalive comment when
/// one is due and no frame is; then, when it is closing, the completion result. Answers whether
/// the stream closed.
pub(super) fn write_due(sub: &Subscription, buf: &mut Vec<u8>, metrics: &Metrics) -> bool {
    let had = buf.len();
    let mut state = sub.state();
    let written = state.drain_into(buf, &sub.id_json);
    if buf.len() == had && state.keepalive {
        buf.extend_from_slice(sse::KEEPALIVE);
    }
    state.keepalive = false;
    let closing = state.closing;
    drop(state);
    metrics.frames_written.inc_by(written as u64);
    if closing {
        sse::close_event(buf, &sub.request_id, &sub.server_info);
    }
    closing
}

/// A listen stream taken out of hyper (see [`DirectSocket`]): run it to its end with
/// [`DirectListen::run`].
#[derive(Debug)]
pub(crate) struct DirectListen {
    /// Holds the subscription (whose socket it is), its permits, and unregisters it when dropped.
    body: ListenBody,
}

impl ListenBody {
    /// Write this stream straight to `socket`, starting with `head` (the response head, which
    /// must announce a chunked body) and the ack.
    pub(crate) fn into_direct(mut self, socket: TcpStream, head: Vec<u8>) -> DirectListen {
        let ack = self.ack.take().unwrap_or_default();
        // Invariant: only this consuming call sets it, once per subscription.
        let _ = self.sub.direct.set(DirectSocket::new(socket, head, &ack));
        DirectListen { body: self }
    }
}

impl DirectListen {
    /// Write the head and the ack, then everything marked from now on, until the stream
    /// closes (completion result and last chunk written) or the client goes away.
    pub(crate) async fn run(self) {
        let (sub, metrics) = (&self.body.sub, self.body.router.metrics());
        if let Some(direct) = sub.direct.get() {
            direct.run(|buf| write_due(sub, buf, metrics)).await;
        }
    }
}

impl Body for ListenBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        if self.done {
            return Poll::Ready(None);
        }
        // Register before looking, so a delivery racing with this poll still wakes us.
        self.sub.waker.register(cx.waker());
        let buf = self.collect();
        if buf.is_empty() { Poll::Pending } else { Poll::Ready(Some(Ok(Frame::data(Bytes::from(buf))))) }
    }

    fn is_end_stream(&self) -> bool {
        self.done
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::default()
    }
}

impl Drop for ListenBody {
    fn drop(&mut self) {
        self.router.unregister(&self.sub);
    }
}
