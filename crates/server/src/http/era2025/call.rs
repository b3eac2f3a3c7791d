//! A 2025-era request served by the shared 2026 methods, and the input rounds of a call whose
//! handler asks the client for something.
//!
//! The 2026 methods answer `input_required` with `inputRequests` (MRTR). A 2025 client cannot
//! retry with `inputResponses`; it answers server-to-client requests instead. So here each
//! input request becomes a real JSON-RPC request on the call's SSE stream, the answers come
//! back through the [`Relay`](super::Relay) (from whichever replica they were POSTed to), and
//! the call is served again with them as its `inputResponses` (and the signed
//! `requestState`), until the handler completes. A handler that asks for input works the
//! same for both eras.

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame};
use mcp_fleet_protocol::jsonrpc::{encode_error, encode_result, value_bytes};
use mcp_fleet_protocol::legacy::{to_legacy_error, to_legacy_result};
use mcp_fleet_protocol::{RequestId, RpcError, sse};
use serde_json::{Map, Value, json};
use tokio::sync::mpsc;
use tokio::task::AbortHandle;

use crate::context::{NotificationReceiver, RequestContext};
use crate::era2025::session::SessionRecord;
use crate::methods::{CallFuture, CallResult, MethodRequest, Prepared, prepare};
use crate::shared::HandlerShared;

/// Most input rounds of one call: a handler that keeps asking is failed, not looped forever.
const MAX_ROUNDS: usize = 16;

/// Bound of the queue between a call's driver and its SSE body.
const OUT_QUEUE: usize = 64;

/// One request of a session, to serve with the shared methods.
pub(crate) struct SessionCall {
    pub(crate) handler: Arc<HandlerShared>,
    /// The session id (`None`: served without a session).
    pub(crate) session: Option<String>,
    pub(crate) record: SessionRecord,
    pub(crate) ctx: RequestContext,
    pub(crate) id: RequestId,
    pub(crate) method: String,
    pub(crate) params: Map<String, Value>,
    /// Whether the response may be SSE (the client's Accept allows it); without SSE there is
    /// nowhere to send a server-to-client request.
    pub(crate) sse_ok: bool,
}

/// What a call's driver hands its response: messages before the answer, then the answer.
enum Out {
    Message(Vec<u8>),
    Answer(Vec<u8>),
}

/// How a request is answered: a complete JSON message, or an SSE body.
pub(crate) enum Answered {
    Json(Vec<u8>),
    Stream(ChannelBody),
}

impl SessionCall {
    /// Serve the request through the shared 2026 methods with this session's envelope.
    fn prepare(&self, params: Map<String, Value>) -> Result<Prepared, RpcError> {
        let server = self.handler.factory.server(&self.ctx);
        let parts = self.ctx.parts.clone();
        let meta = self.record.meta(&params);
        prepare(MethodRequest {
            shared: &self.handler,
            catalog: server.snapshot(),
            server,
            ctx: self.ctx.clone(),
            id: self.id.clone(),
            method: self.method.clone(),
            params,
            meta,
            headers: &parts.headers,
            era2025: true,
        })
    }

    /// The era-pure answer message for `result`.
    fn encode(&self, result: Result<Value, RpcError>) -> Vec<u8> {
        match result {
            Ok(mut value) => {
                to_legacy_result(&mut value);
                encode_result(&self.id, &value)
            }
            Err(error) => encode_error(Some(&self.id), &to_legacy_error(&self.method, error)),
        }
    }

    /// Answer the request: JSON when it completes without saying anything first, else an SSE
    /// stream of its notifications, server-to-client requests and answer.
    pub(crate) async fn answer(self) -> Answered {
        let (future, notifications) = match self.prepare(self.params.clone()) {
            Err(error) => return Answered::Json(self.encode(Err(error))),
            Ok(Prepared::Immediate(value)) => return Answered::Json(self.encode(Ok(value))),
            // Listen is refused before dispatch; should it come here anyway, it is not a 2025 method.
            Ok(Prepared::Listen(_)) => {
                return Answered::Json(self.encode(Err(RpcError::method_not_found(&self.method))));
            }
            Ok(Prepared::Call { future, notifications }) => (future, notifications),
        };
        let (sse_ok, id) = (self.sse_ok, self.id.clone());
        let (tx, mut rx) = mpsc::channel(OUT_QUEUE);
        let (calls, session) = (self.handler.era2025.streams.calls().clone(), self.session.clone());
        let task = tokio::spawn(self.drive(future, notifications, tx));
        let registered = session.map(|s| calls.register(&s, &id, task.abort_handle()));
        match rx.recv().await {
            Some(Out::Answer(bytes)) => Answered::Json(bytes),
            Some(Out::Message(first)) if sse_ok => {
                let abort = task.abort_handle();
                Answered::Stream(ChannelBody { first: Some(first), rx, abort, _registered: registered, done: false })
            }
            // Not SSE: the messages before the answer have nowhere to go; the answer does.
            Some(Out::Message(_)) => loop {
                match rx.recv().await {
                    Some(Out::Answer(bytes)) => break Answered::Json(bytes),
                    Some(Out::Message(_)) => {}
                    None => break Answered::Json(ended(&id)),
                }
            },
            None => Answered::Json(ended(&id)),
        }
    }

    /// Run the call to its answer, round after round of client input.
    async fn drive(
        self,
        mut future: CallFuture,
        mut notifications: Option<NotificationReceiver>,
        out: mpsc::Sender<Out>,
    ) {
        let mut params = self.params.clone();
        for _ in 0..MAX_ROUNDS {
            let result = forward(&mut future, notifications.as_mut(), &out).await;
            let asks = match &result {
                Ok(value) if value.get("resultType").and_then(Value::as_str) == Some("input_required") => value.clone(),
                _ => {
                    let _ = out.send(Out::Answer(self.encode(result))).await;
                    return;
                }
            };
            let answers = match self.ask(&asks, &out).await {
                Ok(answers) => answers,
                Err(error) => {
                    let _ = out.send(Out::Answer(self.encode(Err(error)))).await;
                    return;
                }
            };
            params.insert("inputResponses".into(), Value::Object(answers));
            match asks.get("requestState") {
                Some(state) => params.insert("requestState".into(), state.clone()),
                None => params.remove("requestState"),
            };
            match self.prepare(params.clone()) {
                Ok(Prepared::Call { future: next, notifications: n }) => {
                    future = next;
                    notifications = n;
                }
                Ok(Prepared::Immediate(value)) => {
                    let _ = out.send(Out::Answer(self.encode(Ok(value)))).await;
                    return;
                }
                Ok(Prepared::Listen(_)) => return,
                Err(error) => {
                    let _ = out.send(Out::Answer(self.encode(Err(error)))).await;
                    return;
                }
            }
        }
        let error = RpcError::internal(format!("The handler asked for client input more than {MAX_ROUNDS} times"));
        let _ = out.send(Out::Answer(self.encode(Err(error)))).await;
    }

    /// Send every input request of an `input_required` result to the client as a
    /// server-to-client request on this stream, and wait for all the answers.
    async fn ask(&self, result: &Value, out: &mpsc::Sender<Out>) -> Result<Map<String, Value>, RpcError> {
        let relay = self.handler.era2025.relay.as_ref();
        let (Some(relay), Some(session), true) = (relay, &self.session, self.sse_ok) else {
            return Err(RpcError::internal(
                "This handler needs input from the client, which this request cannot give \
                 (it needs a session and an SSE response)",
            ));
        };
        let requests = result.get("inputRequests").and_then(Value::as_object).cloned().unwrap_or_default();
        let mut waits = Vec::with_capacity(requests.len());
        for (key, request) in requests {
            let (id, awaited) = relay
                .expect(session)
                .await
                .map_err(|e| RpcError::internal(format!("Could not reach the fleet's reply store: {e}")))?;
            let method = request.get("method").cloned().unwrap_or(Value::Null);
            let params = request.get("params").cloned().unwrap_or_else(|| json!({}));
            let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
            if out.send(Out::Message(value_bytes(&message))).await.is_err() {
                return Err(RpcError::internal("The client closed the call's stream"));
            }
            self.handler.metrics.era2025.server_requests.inc();
            waits.push(async move { (key, method, relay.wait(awaited).await) });
        }
        let mut answers = Map::new();
        for (key, method, answer) in futures_util::future::join_all(waits).await {
            match answer? {
                Ok(result) => {
                    answers.insert(key, result);
                }
                Err(error) => {
                    let message = error.get("message").and_then(Value::as_str).unwrap_or("no message");
                    return Err(RpcError::internal(format!("The client refused the {method} request: {message}")));
                }
            }
        }
        Ok(answers)
    }
}

/// The answer of a call whose driver ended without one (it panicked).
fn ended(id: &RequestId) -> Vec<u8> {
    encode_error(Some(id), &RpcError::internal("The call ended without an answer"))
}

/// Poll `future` to its result, passing its notifications on as they come (those sent just
/// before the result still go first).
async fn forward(
    future: &mut CallFuture,
    mut notifications: Option<&mut NotificationReceiver>,
    out: &mpsc::Sender<Out>,
) -> Result<Value, RpcError> {
    loop {
        // A 2025 request's results are always built as maps (`Finisher::finish_tool_call`).
        let Some(rx) = notifications.as_deref_mut() else { return future.await.map(CallResult::into_value) };
        tokio::select! {
            biased;
            Some(message) = rx.recv() => {
                let _ = out.send(Out::Message(message)).await;
            }
            result = &mut *future => {
                while let Ok(message) = rx.try_recv() {
                    let _ = out.send(Out::Message(message)).await;
                }
                return result.map(CallResult::into_value);
            }
        }
    }
}

/// The SSE body of a 2025-era call: what its driver task sends, until the answer. Dropping it
/// (the client went away) aborts the call.
pub(crate) struct ChannelBody {
    first: Option<Vec<u8>>,
    rx: mpsc::Receiver<Out>,
    abort: AbortHandle,
    /// Keeps the call cancellable by `notifications/cancelled` while it streams.
    _registered: Option<crate::era2025::calls::Registered>,
    done: bool,
}

impl std::fmt::Debug for ChannelBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChannelBody").field("done", &self.done).finish()
    }
}

impl Body for ChannelBody {
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
        loop {
            match this.rx.poll_recv(cx) {
                Poll::Ready(Some(Out::Message(m))) => sse::write_event(&mut buf, &m),
                Poll::Ready(Some(Out::Answer(m))) => {
                    sse::write_event(&mut buf, &m);
                    this.done = true;
                    break;
                }
                Poll::Ready(None) => {
                    this.done = true;
                    break;
                }
                Poll::Pending => break,
            }
        }
        if buf.is_empty() {
            if this.done { Poll::Ready(None) } else { Poll::Pending }
        } else {
            Poll::Ready(Some(Ok(Frame::data(Bytes::from(buf)))))
        }
    }

    fn is_end_stream(&self) -> bool {
        self.done
    }
}

impl Drop for ChannelBody {
    fn drop(&mut self) {
        self.abort.abort();
    }
}
