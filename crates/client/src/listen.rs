//! One `subscriptions/listen` stream: a [`SubscriptionFilter`] says what to follow (helpers
//! here map lists onto it), [`ListenStream`] opens it (checking the acknowledgement comes
//! first, LSTN-3) and reads its messages.
//!
//! Reconnecting is [`Listener`](crate::Listener)'s job; deciding what to re-list is the
//! [`Rediscovery`](crate::Rediscovery) state machine's.

use std::time::Instant;

use http::header;
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use mcp_fleet_protocol::SubscriptionFilter;
use serde_json::{Map, Value, json};

use crate::error::ClientError;
use crate::list::ListKind;
use crate::message::ListenMessage;
use crate::rpc::{RpcClient, result_of, snippet};
use crate::sse::SseReader;

/// A filter following the `list_changed` notifications of `lists` (the protocol's
/// [`SubscriptionFilter`], the same type the server parses and acknowledges).
///
/// ```
/// use mcp_fleet_client::{ListKind, listen};
/// let mut f = listen::filter_for(&[ListKind::Tools]);
/// f.resource_subscriptions.push("a://b".into());
/// assert_eq!(f.to_wire(), serde_json::json!({"toolsListChanged": true, "resourceSubscriptions": ["a://b"]}));
/// assert!(listen::follows(&f, ListKind::Tools) && !listen::follows(&f, ListKind::Prompts));
/// ```
pub fn filter_for(lists: &[ListKind]) -> SubscriptionFilter {
    let mut filter = SubscriptionFilter::default();
    for kind in lists {
        follow(&mut filter, *kind);
    }
    filter
}

/// Also follow `kind`'s `list_changed` notification (templates: the resources').
pub fn follow(filter: &mut SubscriptionFilter, kind: ListKind) {
    *flag(filter, kind) = true;
}

/// Stop following `kind`'s `list_changed` notification (a server that does not advertise it).
pub fn unfollow(filter: &mut SubscriptionFilter, kind: ListKind) {
    *flag(filter, kind) = false;
}

/// Whether `filter` follows the notification that invalidates `kind`.
pub fn follows(filter: &SubscriptionFilter, kind: ListKind) -> bool {
    match kind.announced_as() {
        ListKind::Prompts => filter.prompts_list_changed,
        ListKind::Resources | ListKind::ResourceTemplates => filter.resources_list_changed,
        ListKind::Tools => filter.tools_list_changed,
    }
}

fn flag(filter: &mut SubscriptionFilter, kind: ListKind) -> &mut bool {
    match kind.announced_as() {
        ListKind::Prompts => &mut filter.prompts_list_changed,
        ListKind::Resources | ListKind::ResourceTemplates => &mut filter.resources_list_changed,
        ListKind::Tools => &mut filter.tools_list_changed,
    }
}

/// The honoured filter of an acknowledgement's `notifications` object (LSTN-4). What does
/// not parse is taken as not honoured: a client must not wait for what it cannot read.
pub fn honoured_filter(notifications: &Value) -> SubscriptionFilter {
    let params = Map::from_iter([("notifications".to_owned(), notifications.clone())]);
    SubscriptionFilter::from_params(&params, usize::MAX).unwrap_or_default()
}

/// An open, acknowledged listen stream.
#[derive(Debug)]
pub struct ListenStream {
    reader: SseReader<Incoming>,
    honoured: SubscriptionFilter,
    opened_at: Instant,
}

impl ListenStream {
    /// POST `subscriptions/listen` with `filter` as request `id` and wait for the
    /// acknowledgement. A plain JSON answer (e.g. `-32603` at capacity, LSTN-11) or any
    /// first message other than the ack is an error.
    pub async fn open(rpc: &RpcClient, id: &Value, filter: &SubscriptionFilter) -> Result<ListenStream, ClientError> {
        let response = rpc.post(id, "subscriptions/listen", json!({"notifications": filter.to_wire()})).await?;
        let (parts, body) = response.into_parts();
        let is_sse =
            parts.headers.get(header::CONTENT_TYPE).is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
        if let Some(refused) = ClientError::from_auth_refusal(&parts) {
            return Err(refused);
        }
        if !is_sse || !parts.status.is_success() {
            return Err(refusal(parts.status, body).await);
        }
        let mut reader = SseReader::new(body);
        let first = reader.next_message().await?.ok_or(ClientError::StreamLost("ended before the acknowledgement"))?;
        match ListenMessage::parse(&first)? {
            ListenMessage::Acknowledged { honoured } => {
                Ok(ListenStream { reader, honoured: honoured_filter(&honoured), opened_at: Instant::now() })
            }
            ListenMessage::Error { code, message } => Err(ClientError::Rpc { code, message, data: None }),
            _ => Err(ClientError::Protocol(format!(
                "first listen message is not the acknowledgement: {}",
                snippet(first.as_bytes())
            ))),
        }
    }

    /// The 2025-era counterpart of [`ListenStream::open`]: a session (initialized if none),
    /// `resources/subscribe` for each of `filter`'s URIs, then the session's `GET` stream.
    /// That era has no acknowledgement; the honoured filter is what was asked for and the
    /// session's capabilities advertise. A 404 (the session is gone) clears the session, so
    /// the next attempt starts a new one.
    pub async fn open_session(rpc: &RpcClient, filter: &SubscriptionFilter) -> Result<ListenStream, ClientError> {
        let initialized = rpc.ensure_session().await?;
        let capabilities = crate::capabilities::ServerCapabilities::from_discover(&initialized);
        let honoured = filter.honoured(capabilities.listen_support());
        for uri in &honoured.resource_subscriptions {
            rpc.call("resources/subscribe", json!({"uri": uri})).await?;
        }
        let (parts, body) = rpc.get_stream().await?.into_parts();
        if let Some(refused) = ClientError::from_auth_refusal(&parts) {
            return Err(refused);
        }
        let is_sse =
            parts.headers.get(header::CONTENT_TYPE).is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
        if !is_sse || !parts.status.is_success() {
            if parts.status == http::StatusCode::NOT_FOUND
                && let Some(session) = rpc.session()
            {
                session.clear();
            }
            return Err(refusal(parts.status, body).await);
        }
        Ok(ListenStream { reader: SseReader::new(body), honoured, opened_at: Instant::now() })
    }

    /// The filter the server honours (from the acknowledgement).
    pub fn honoured(&self) -> &SubscriptionFilter {
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
        loop {
            match self.reader.next_message().await? {
                // A data-less event (a 2025 GET stream's priming event, an id to resume
                // from) says nothing.
                Some(data) if data.trim().is_empty() => continue,
                Some(data) => return ListenMessage::parse(&data).map(Some),
                None => return Ok(None),
            }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_honoured_filter_is_read_as_the_server_wrote_it_and_garbage_honours_nothing() {
        let partial = honoured_filter(&json!({"toolsListChanged": true, "resourceSubscriptions": ["a://b"]}));
        assert!(follows(&partial, ListKind::Tools));
        assert!(!follows(&partial, ListKind::Prompts) && !follows(&partial, ListKind::ResourceTemplates));
        assert_eq!(partial.resource_subscriptions, ["a://b"]);
        for garbage in [json!(null), json!("all"), json!({"toolsListChanged": "yes"})] {
            assert_eq!(honoured_filter(&garbage), SubscriptionFilter::default(), "{garbage}");
        }
        let mut filter = filter_for(&[ListKind::ResourceTemplates]);
        assert!(follows(&filter, ListKind::Resources), "templates are announced as resources");
        unfollow(&mut filter, ListKind::Resources);
        assert!(filter.is_empty());
    }
}
