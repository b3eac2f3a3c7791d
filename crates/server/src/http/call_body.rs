//! [`CallBody`]: the SSE body of a call that emitted a notification before its result
//! (STRM-3 "auto" mode). It owns the handler's future and polls it from the connection task,
//! so closing the response drops the future — that *is* cancellation on HTTP.

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use crate::context::NotificationReceiver;
use bytes::Bytes;
use futures_util::FutureExt;
use http_body::{Body, Frame};
use mcp_fleet_protocol::jsonrpc::encode_error;
use mcp_fleet_protocol::{RequestId, sse};

use crate::methods::CallFuture;

/// A call answered as an SSE stream.
pub(crate) struct CallBody {
    id: RequestId,
    future: Option<CallFuture>,
    notifications: NotificationReceiver,
    first: Option<Vec<u8>>,
    done: bool,
}

impl std::fmt::Debug for CallBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallBody").field("id", &self.id).field("done", &self.done).finish()
    }
}

impl CallBody {
    pub(crate) fn new(id: RequestId, future: CallFuture, notifications: NotificationReceiver, first: Vec<u8>) -> Self {
        CallBody { id, future: Some(future), notifications, first: Some(first), done: false }
    }
}

impl Body for CallBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let this = &mut *self;
        if this.done {
            return Poll::Ready(None);
        }
        let mut buf = Vec::new();
        if let Some(first) = this.first.take() {
            sse::write_event(&mut buf, &first);
        }
        while let Poll::Ready(Some(msg)) = this.notifications.poll_recv(cx) {
            sse::write_event(&mut buf, &msg);
        }
        if let Some(future) = &mut this.future
            && let Poll::Ready(result) = future.poll_unpin(cx)
        {
            this.future = None;
            // Notifications sent just before the result still go first.
            while let Ok(msg) = this.notifications.try_recv() {
                sse::write_event(&mut buf, &msg);
            }
            let response = match result {
                Ok(answer) => answer.encode_response(&this.id),
                Err(error) => encode_error(Some(&this.id), &error),
            };
            sse::write_event(&mut buf, &response);
            this.done = true;
        }
        if buf.is_empty() { Poll::Pending } else { Poll::Ready(Some(Ok(Frame::data(Bytes::from(buf))))) }
    }

    fn is_end_stream(&self) -> bool {
        self.done
    }
}
