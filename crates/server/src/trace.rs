//! Opt-in OpenTelemetry tracing: the spans this crate opens, their attributes, and the W3C
//! trace context that flows into them (from a request) and out of them (into the bus envelope).
//!
//! # The spans
//!
//! | Span | Where | Kind | Parent | Name |
//! |---|---|---|---|---|
//! | request | [`McpHandler::handle`](crate::McpHandler::handle) | server | the request's `params._meta` trace context, else its `traceparent` header | `{mcp.method.name} {target}` (`tools/call echo`), else `mcp.request` |
//! | publish | [`Notifier::publish`](crate::Notifier::publish) and catalog announcements | producer | the current span | `publish {kind}` |
//! | delivery | each event the bus delivers to this node's listen router | consumer | none: a new trace, with a **link** to the publish | `process {kind}` |
//! | incoming | [`incoming_span`], for HTTP operations outside the MCP endpoint (an admin call) | server | the request's `traceparent` header | the operation |
//!
//! The publish span's context travels in [`EventEnvelope::trace_parent`] as a `traceparent`
//! string; every node's delivery span links to it (a link, not a parent: one publish causes
//! a delivery on every node, each its own unit of work), so a backend shows a publish on node
//! A next to the deliveries it caused on node B.
//!
//! # Attributes
//!
//! From the OpenTelemetry semantic conventions for MCP (`gen-ai/mcp.md` of the GenAI
//! semantic conventions, status Development): `mcp.method.name`, `mcp.protocol.version`,
//! `jsonrpc.request.id`, `gen_ai.tool.name` and `gen_ai.operation.name = execute_tool` for
//! `tools/call`, `gen_ai.prompt.name` for `prompts/get`, `mcp.resource.uri` for
//! `resources/read` and resource updates, `error.type` (the JSON-RPC code, `tool_error` for a
//! tool result with `isError`, the HTTP status for a refusal before any JSON-RPC message was
//! read) with `rpc.response.status_code` and the error status, and the network attributes.
//! The conventions' context-propagation rule is followed too: the trace context in
//! `params._meta` (`traceparent`, `tracestate`, unprefixed per SEP-414) is the parent, and an
//! HTTP-header context that differs is recorded as a link. The publish and delivery spans use
//! the messaging conventions (`messaging.operation.type`, `messaging.message.id`) plus
//! `mcp.method.name` of the notification the event becomes and `mcp_fleet.*` bus details.
//!
//! # No cost when off
//!
//! Every span has the `tracing` target [`TARGET`] (`mcp_fleet::trace`). A subscriber that does
//! not enable that target (the node's log layer filters it out unless `RUST_LOG` names it) makes
//! the callsites disabled through `tracing`'s interest cache: the span macros return
//! `Span::none()` without evaluating their fields, and every function here returns at its
//! first `is_disabled()` check. A dedicated target rather than a level keeps `RUST_LOG=debug`
//! from switching tracing on, and lets the exporter layer take exactly these spans.
//!
//! Without the cargo feature `otel` the same spans are plain `tracing` spans and nothing
//! OpenTelemetry-specific is compiled: no parent is adopted, no link added, no trace context
//! written into envelopes. With it, the W3C Trace Context propagator of `opentelemetry_sdk`
//! reads and writes the context (always W3C, whatever global propagator an application set:
//! MCP and the bus envelope both define the W3C keys), and `tracing-opentelemetry` turns the
//! spans into OpenTelemetry spans once the application installs its layer (see the node's
//! `telemetry` module).
//!
//! # Limits
//!
//! A request span ends when the response head is ready: the body of an SSE answer (a listen
//! stream, a call that streams notifications) is written after it ends.

use http::{HeaderMap, StatusCode, Version};
use mcp_fleet_bus::{BusError, EventEnvelope, EventKind};
use mcp_fleet_protocol::jsonrpc::Message;
use mcp_fleet_protocol::methods::RESOURCE_UPDATED;
use mcp_fleet_protocol::{ListKind, RequestId, RpcError};
use serde_json::Value;
use tracing::Span;
use tracing::field::Empty;

/// The `tracing` target of every span in this module: enable it (an OpenTelemetry layer
/// filtered to it) to trace, leave it disabled for no cost at all.
///
/// ```
/// use tracing_subscriber::filter::{LevelFilter, Targets};
/// use mcp_fleet_server::trace::TARGET;
/// // The exporter layer takes only these spans; the log layer drops them.
/// let exported = Targets::new().with_target(TARGET, LevelFilter::INFO);
/// let logged = Targets::new().with_default(LevelFilter::INFO).with_target(TARGET, LevelFilter::OFF);
/// assert!(exported.would_enable(TARGET, &tracing::Level::INFO));
/// assert!(!logged.would_enable(TARGET, &tracing::Level::INFO));
/// ```
pub const TARGET: &str = "mcp_fleet::trace";

/// The span of an operation requested over HTTP outside the MCP endpoint — the node's
/// `POST /admin/notify`, say: kind server, named `operation`, and (with the `otel` feature)
/// the child of the request's W3C `traceparent` header when it has one. Run the operation
/// inside it and the publishes it makes join the caller's trace.
///
/// ```
/// use tracing::Instrument;
/// # async fn publish() {}
/// # async fn run() {
/// let headers = http::HeaderMap::new();
/// let span = mcp_fleet_server::trace::incoming_span("admin notify", &headers);
/// publish().instrument(span).await;
/// # }
/// ```
pub fn incoming_span(operation: &str, headers: &HeaderMap) -> Span {
    let span = tracing::info_span!(target: TARGET, "mcp_fleet.incoming", otel.name = operation, otel.kind = "server");
    if !span.is_disabled() {
        otel::adopt(&span, None, headers);
    }
    span
}

/// The span of one request to the MCP endpoint, parented by its `traceparent` header until
/// [`received`] finds a context in `params._meta`. Not entered before then: entering starts the
/// OpenTelemetry span and fixes its parent.
pub(crate) fn request_span(headers: &HeaderMap, version: Version) -> Span {
    let span = tracing::info_span!(
        target: TARGET,
        "mcp.request",
        otel.name = Empty,
        otel.kind = "server",
        otel.status_description = Empty,
        mcp.method.name = Empty,
        mcp.protocol.version = Empty,
        jsonrpc.request.id = Empty,
        gen_ai.operation.name = Empty,
        gen_ai.tool.name = Empty,
        gen_ai.prompt.name = Empty,
        mcp.resource.uri = Empty,
        error.type = Empty,
        rpc.response.status_code = Empty,
        http.response.status_code = Empty,
        network.transport = "tcp",
        network.protocol.name = "http",
        network.protocol.version = http_version(version),
    );
    if !span.is_disabled() {
        otel::adopt(&span, None, headers);
    }
    span
}

/// A JSON-RPC message passed validation: name the span after it, record its attributes, and
/// adopt the trace context of its `params._meta` as the parent.
pub(crate) fn received(span: &Span, headers: &HeaderMap, message: &Message, protocol_version: Option<&str>) {
    if span.is_disabled() {
        return;
    }
    let method = message.method.as_str();
    let param = |key: &str| message.params.get(key).and_then(Value::as_str);
    let target = match method {
        "tools/call" | "prompts/get" => param("name"),
        _ => None,
    };
    match target {
        Some(target) => span.record("otel.name", format!("{method} {target}").as_str()),
        None => span.record("otel.name", method),
    };
    span.record("mcp.method.name", method);
    if let Some(version) = protocol_version {
        span.record("mcp.protocol.version", version);
    }
    if let Some(id) = &message.id {
        span.record("jsonrpc.request.id", request_id_text(id).as_str());
    }
    match method {
        "tools/call" => {
            span.record("gen_ai.operation.name", "execute_tool");
            span.record("gen_ai.tool.name", target);
        }
        "prompts/get" => {
            span.record("gen_ai.prompt.name", target);
        }
        "resources/read" => {
            span.record("mcp.resource.uri", param("uri"));
        }
        _ => {}
    }
    otel::adopt(span, message.params.get("_meta"), headers);
}

/// The request was answered with a JSON-RPC error.
pub(crate) fn record_error(span: &Span, error: &RpcError) {
    if span.is_disabled() {
        return;
    }
    let code = error.code.code().to_string();
    span.record("error.type", code.as_str());
    span.record("rpc.response.status_code", code.as_str());
    span.record("otel.status_description", error.message.as_str());
}

/// A call finished with a result: a tool result with `isError` (`is_tool_error`) is an error
/// of the call (`error.type = tool_error`), though the JSON-RPC exchange succeeded.
pub(crate) fn record_result(span: &Span, is_tool_error: bool) {
    if span.is_disabled() || !is_tool_error {
        return;
    }
    span.record("error.type", "tool_error");
    span.record("otel.status_description", "the tool reported an error");
}

/// The request was refused before a JSON-RPC message was read (path, Origin, authentication,
/// method, media type, body): the HTTP status is the error type.
pub(crate) fn record_refusal(span: &Span, status: StatusCode) {
    if span.is_disabled() {
        return;
    }
    span.record("error.type", status.as_str());
    span.record("otel.status_description", status.canonical_reason().unwrap_or("refused"));
}

/// The status of the response head.
pub(crate) fn record_status(span: &Span, status: StatusCode) {
    span.record("http.response.status_code", status.as_u16());
}

/// The span of one publish of `event`, a child of the current span. Stamp the event with
/// [`stamp`] before it leaves, and publish inside this span.
pub(crate) fn publish_span(event: &EventEnvelope) -> Span {
    tracing::info_span!(
        target: TARGET,
        "mcp_fleet.publish",
        otel.name = format!("publish {}", event.kind.as_str()).as_str(),
        otel.kind = "producer",
        otel.status_description = Empty,
        error.type = Empty,
        messaging.operation.name = "publish",
        messaging.operation.type = "send",
        messaging.message.id = event.event_id.as_str(),
        mcp.method.name = notification_method(event.kind),
        mcp.resource.uri = event.uri.as_deref(),
        mcp_fleet.scope = event.scope.as_deref(),
    )
}

/// Write `span`'s trace context into `event` (with the `otel` feature, when `span` is traced),
/// so the nodes that deliver it can link to the publish.
pub(crate) fn stamp(span: &Span, event: &mut EventEnvelope) {
    if !span.is_disabled() {
        event.trace_parent = otel::traceparent(span);
    }
}

/// The publish failed.
pub(crate) fn record_publish_error(span: &Span, error: &BusError) {
    if span.is_disabled() {
        return;
    }
    let kind = match error {
        BusError::Unavailable(_) => "unavailable",
        BusError::Config(_) => "config",
        BusError::Backend(_) => "backend",
        BusError::Timeout(_) => "timeout",
    };
    span.record("error.type", kind);
    span.record("otel.status_description", error.to_string().as_str());
}

/// The span of one event delivered from the bus to this node's listen router: the root of its
/// own trace, linked to the publish through the envelope's `traceparent`.
pub(crate) fn delivery_span(event: &EventEnvelope) -> Span {
    let span = tracing::info_span!(
        target: TARGET,
        parent: None,
        "mcp_fleet.deliver",
        otel.name = format!("process {}", event.kind.as_str()).as_str(),
        otel.kind = "consumer",
        messaging.operation.name = "process",
        messaging.operation.type = "process",
        messaging.message.id = event.event_id.as_str(),
        mcp.method.name = notification_method(event.kind),
        mcp.resource.uri = event.uri.as_deref(),
        mcp_fleet.scope = event.scope.as_deref(),
        mcp_fleet.event.origin = event.origin.as_str(),
        mcp_fleet.event.epoch = event.epoch,
        mcp_fleet.event.version = event.version,
        mcp_fleet.streams = Empty,
    );
    if !span.is_disabled()
        && let Some(traceparent) = &event.trace_parent
    {
        otel::link(&span, traceparent);
    }
    span
}

/// How many listen streams the delivery reached.
pub(crate) fn record_delivered(span: &Span, streams: usize) {
    span.record("mcp_fleet.streams", streams as u64);
}

/// The W3C trace id (32 hex digits) of `span`, when it is an exported OpenTelemetry span (the
/// audit trail's `traceId`).
pub(crate) fn trace_id(span: &Span) -> Option<String> {
    if span.is_disabled() {
        return None;
    }
    // `traceparent` is `<version>-<trace id>-<span id>-<flags>`.
    otel::traceparent(span).and_then(|tp| tp.split('-').nth(1).map(str::to_owned))
}

/// The notification an event becomes.
fn notification_method(kind: EventKind) -> &'static str {
    match kind {
        EventKind::ToolsListChanged => ListKind::Tools.list_changed(),
        EventKind::PromptsListChanged => ListKind::Prompts.list_changed(),
        EventKind::ResourcesListChanged => ListKind::Resources.list_changed(),
        EventKind::ResourceUpdated => RESOURCE_UPDATED,
        // Not a notification: it changes what a 2025-era session's GET stream hears.
        EventKind::SessionChanged => "session",
        EventKind::TaskChanged => mcp_fleet_protocol::tasks::TASK_NOTIFICATION,
        EventKind::Occurred => "notifications/events/event",
    }
}

/// `jsonrpc.request.id`: the id's own text (a string without its quotes).
fn request_id_text(id: &RequestId) -> String {
    match id {
        RequestId::Number(n) => n.to_string(),
        RequestId::String(s) => s.clone(),
    }
}

/// `network.protocol.version`.
fn http_version(version: Version) -> &'static str {
    match version {
        Version::HTTP_09 => "0.9",
        Version::HTTP_10 => "1.0",
        Version::HTTP_2 => "2",
        Version::HTTP_3 => "3",
        _ => "1.1",
    }
}

/// The OpenTelemetry side: W3C trace context in and out of spans.
#[cfg(feature = "otel")]
mod otel {
    use std::collections::HashMap;

    use http::HeaderMap;
    use opentelemetry::propagation::{Extractor, TextMapPropagator};
    use opentelemetry::trace::{SpanContext, TraceContextExt};
    use opentelemetry_sdk::propagation::TraceContextPropagator;
    use serde_json::{Map, Value};
    use tracing::Span;
    use tracing_opentelemetry::OpenTelemetrySpanExt;

    /// The W3C key of the trace context.
    const TRACEPARENT: &str = "traceparent";

    /// Make the trace context of `meta` (a request's `params._meta`), else of `headers`, the
    /// parent of `span`; a header context that differs from the `_meta` one becomes a link
    /// (MCP semantic conventions: the MCP context is the parent, the transport's a link).
    pub(super) fn adopt(span: &Span, meta: Option<&Value>, headers: &HeaderMap) {
        let from_headers = TraceContextPropagator::new().extract(&Headers(headers));
        let from_meta = meta.and_then(Value::as_object).map(|m| TraceContextPropagator::new().extract(&Meta(m)));
        let header_span = from_headers.span().span_context().clone();
        match from_meta {
            Some(cx) if cx.span().span_context().is_valid() => {
                let meta_span = cx.span().span_context().clone();
                // Fails only when the span already started or no OpenTelemetry layer sees it;
                // either way there is no parent left to set.
                let _ = span.set_parent(cx);
                if header_span.is_valid() && header_span != meta_span {
                    span.add_link(header_span);
                }
            }
            _ if header_span.is_valid() => {
                let _ = span.set_parent(from_headers);
            }
            _ => {}
        }
    }

    /// `span`'s W3C `traceparent`, when it is an OpenTelemetry span.
    pub(super) fn traceparent(span: &Span) -> Option<String> {
        let cx = span.context();
        if !cx.span().span_context().is_valid() {
            return None;
        }
        let mut carrier = HashMap::new();
        TraceContextPropagator::new().inject_context(&cx, &mut carrier);
        carrier.remove(TRACEPARENT)
    }

    /// Link `span` to the span a `traceparent` names (nothing if it is not valid W3C).
    pub(super) fn link(span: &Span, traceparent: &str) {
        let carrier = HashMap::from([(TRACEPARENT.to_owned(), traceparent.to_owned())]);
        let cx = TraceContextPropagator::new().extract(&carrier);
        let linked: SpanContext = cx.span().span_context().clone();
        if linked.is_valid() {
            span.add_link(linked);
        }
    }

    /// HTTP headers as a propagation carrier.
    struct Headers<'a>(&'a HeaderMap);

    impl Extractor for Headers<'_> {
        fn get(&self, key: &str) -> Option<&str> {
            self.0.get(key).and_then(|v| v.to_str().ok())
        }

        fn keys(&self) -> Vec<&str> {
            self.0.keys().map(http::HeaderName::as_str).collect()
        }
    }

    /// A request's `params._meta` as a propagation carrier (string values only).
    struct Meta<'a>(&'a Map<String, Value>);

    impl Extractor for Meta<'_> {
        fn get(&self, key: &str) -> Option<&str> {
            self.0.get(key).and_then(Value::as_str)
        }

        fn keys(&self) -> Vec<&str> {
            self.0.keys().map(String::as_str).collect()
        }
    }
}

/// Without the `otel` feature: spans stay plain `tracing` spans.
#[cfg(not(feature = "otel"))]
mod otel {
    use http::HeaderMap;
    use serde_json::Value;
    use tracing::Span;

    pub(super) fn adopt(_span: &Span, _meta: Option<&Value>, _headers: &HeaderMap) {}

    pub(super) fn traceparent(_span: &Span) -> Option<String> {
        None
    }

    pub(super) fn link(_span: &Span, _traceparent: &str) {}
}

#[cfg(all(test, feature = "otel"))]
mod tests;
