//! One `subscriptions/listen` stream: [`ListenFilter`] says what to follow, [`ListenStream`]
//! opens it (checking the acknowledgement comes first, LSTN-3) and reads its messages.
//!
//! Reconnecting is [`Listener`](crate::Listener)'s job; deciding what to re-list is the
//! [`Rediscovery`](crate::Rediscovery) state machine's.

use std::time::Instant;

use http::header;
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use serde_json::{Map, Value, json};

use crate::error::ClientError;
use crate::list::ListKind;
use crate::message::ListenMessage;
use crate::rpc::{RpcClient, result_of, snippet};
use crate::sse::SseReader;

/// What a listen stream follows (`params.notifications`, spec digest §17.2).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListenFilter {
    /// `toolsListChanged`.
    pub tools: bool,
    /// `promptsListChanged`.
    pub prompts: bool,
    /// `resourcesListChanged` (also invalidates resource templates).
    pub resources: bool,
    /// `resourceSubscriptions`: URIs whose `resources/updated` to receive.
    pub resource_uris: Vec<String>,
}

impl ListenFilter {
    /// A filter following the `list_changed` notifications of `lists`.
    pub fn for_lists(lists: &[ListKind]) -> ListenFilter {
        let mut filter = ListenFilter::default();
        for kind in lists {
            filter.follow(*kind);
        }
        filter
    }

    /// Also follow `kind`'s `list_changed` notification.
    pub fn follow(&mut self, kind: ListKind) {
        match kind {
            ListKind::Tools => self.tools = true,
            ListKind::Prompts => self.prompts = true,
            ListKind::Resources | ListKind::ResourceTemplates => self.resources = true,
        }
    }

    /// The filter as the request's `notifications` object (only what is followed, LSTN-1).
    ///
    /// ```
    /// let mut f = mcp_fleet_client::ListenFilter::default();
    /// f.tools = true;
    /// f.resource_uris.push("a://b".into());
    /// assert_eq!(f.to_json(), serde_json::json!({"toolsListChanged": true, "resourceSubscriptions": ["a://b"]}));
    /// ```
    pub fn to_json(&self) -> Value {
        let mut out = Map::new();
        for (field, on) in [
            ("toolsListChanged", self.tools),
            ("promptsListChanged", self.prompts),
            ("resourcesListChanged", self.resources),
        ] {
            if on {
                out.insert(field.into(), Value::Bool(true));
            }
        }
        if !self.resource_uris.is_empty() {
            out.insert("resourceSubscriptions".into(), json!(self.resource_uris));
        }
        Value::Object(out)
    }
}

/// An open, acknowledged listen stream.
#[derive(Debug)]
pub struct ListenStream {
    reader: SseReader<Incoming>,
    honoured: Value,
    opened_at: Instant,
}

impl ListenStream {
    /// POST `subscriptions/listen` with `filter` as request `id` and wait for the
    /// acknowledgement. A plain JSON answer (e.g. `-32603` at capacity, LSTN-11) or any
    /// first message other than the ack is an error.
    pub async fn open(rpc: &RpcClient, id: &Value, filter: &ListenFilter) -> Result<ListenStream, ClientError> {
        let response = rpc.post(id, "subscriptions/listen", json!({"notifications": filter.to_json()})).await?;
        let (parts, body) = response.into_parts();
        let is_sse =
            parts.headers.get(header::CONTENT_TYPE).is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
        if !is_sse || !parts.status.is_success() {
            return Err(refusal(parts.status, body).await);
        }
        let mut reader = SseReader::new(body);
        let first = reader.next_message().await?.ok_or(ClientError::StreamLost("ended before the acknowledgement"))?;
        match ListenMessage::parse(&first)? {
            ListenMessage::Acknowledged { honoured } => {
                Ok(ListenStream { reader, honoured, opened_at: Instant::now() })
            }
            ListenMessage::Error { code, message } => Err(ClientError::Rpc { code, message, data: None }),
            _ => Err(ClientError::Protocol(format!(
                "first listen message is not the acknowledgement: {}",
                snippet(first.as_bytes())
            ))),
        }
    }

    /// The filter the server honours (from the acknowledgement).
    pub fn honoured(&self) -> &Value {
        &self.honoured
    }

    /// When the acknowledgement arrived.
    pub fn opened_at(&self) -> Instant {
        self.opened_at
    }

    /// When bytes (a message or a keep-alive) last arrived.
    pub fn last_activity(&self) -> Instant {
        self.reader.last_activity()
    }

    /// The next message (keep-alives are skipped); `None` when the stream ends. Cancel-safe.
    pub async fn next(&mut self) -> Result<Option<ListenMessage>, ClientError> {
        match self.reader.next_message().await? {
            Some(data) => ListenMessage::parse(&data).map(Some),
            None => Ok(None),
        }
    }
}

/// The error a non-SSE answer to a listen request stands for.
async fn refusal(status: http::StatusCode, body: Incoming) -> ClientError {
    let bytes = match Limited::new(body, 64 * 1024).collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(e) => return ClientError::Body(e),
    };
    match serde_json::from_slice::<Value>(&bytes) {
        Ok(message) => match result_of(message, status) {
            Err(e) => e,
            Ok(_) => ClientError::Protocol("listen answered with a plain result instead of a stream".into()),
        },
        Err(_) => ClientError::Status { status, body: snippet(&bytes) },
    }
}
