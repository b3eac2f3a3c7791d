//! The admin endpoint: `POST /admin/notify` publishes a change event (what a config reloader
//! calls), `GET /metrics` exports metrics, `GET /healthz` reports the bus state.

use std::convert::Infallible;
use std::future::Future;
use std::time::Duration;

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use mcp_fleet_server::McpHandler;
use mcp_fleet_server::bus::{Change, EventKind};
use serde::Deserialize;
use serde_json::json;
use tokio::net::TcpListener;

/// Largest admin request body.
const MAX_ADMIN_BODY: usize = 64 * 1024;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct NotifyRequest {
    kind: String,
    uri: Option<String>,
    scope: Option<String>,
}

/// Serve the admin endpoint until `stop` resolves, then drain within `deadline`.
pub(crate) async fn serve(
    listener: TcpListener,
    handler: McpHandler,
    stop: impl Future<Output = ()>,
    deadline: Duration,
) {
    let service = move |req: Request<Incoming>| {
        let handler = handler.clone();
        async move { Ok::<_, Infallible>(route(&handler, req).await) }
    };
    mcp_fleet_server::serve_http(listener, service, stop, deadline).await;
}

async fn route(handler: &McpHandler, req: Request<Incoming>) -> Response<Full<Bytes>> {
    match (req.method(), req.uri().path()) {
        (&Method::POST, "/admin/notify") => notify(handler, req).await,
        (&Method::GET, "/metrics") => {
            reply(StatusCode::OK, "application/openmetrics-text; version=1.0.0", handler.metrics_text())
        }
        (&Method::GET, "/healthz") => {
            let bus = handler.bus_health();
            let code = if bus.connected { StatusCode::OK } else { StatusCode::SERVICE_UNAVAILABLE };
            reply(
                code,
                "application/json",
                json!({"busConnected": bus.connected, "openStreams": handler.open_streams()}).to_string(),
            )
        }
        _ => reply(StatusCode::NOT_FOUND, "text/plain", "not found".into()),
    }
}

async fn notify(handler: &McpHandler, req: Request<Incoming>) -> Response<Full<Bytes>> {
    let body = match Limited::new(req.into_body(), MAX_ADMIN_BODY).collect().await {
        Ok(b) => b.to_bytes(),
        Err(e) => return error(StatusCode::BAD_REQUEST, &format!("could not read body: {e}")),
    };
    let request: NotifyRequest = match serde_json::from_slice(&body) {
        Ok(r) => r,
        Err(e) => return error(StatusCode::BAD_REQUEST, &format!("invalid notify request: {e}")),
    };
    let Some(kind) = EventKind::parse(&request.kind) else {
        let known: Vec<&str> = EventKind::ALL.iter().map(|k| k.as_str()).collect();
        return error(
            StatusCode::BAD_REQUEST,
            &format!("unknown kind {:?}: one of {}", request.kind, known.join(", ")),
        );
    };
    match (kind, &request.uri) {
        (EventKind::ResourceUpdated, None) => return error(StatusCode::BAD_REQUEST, "kind \"resource\" needs a uri"),
        (EventKind::ResourceUpdated, Some(_)) | (_, None) => {}
        (_, Some(_)) => return error(StatusCode::BAD_REQUEST, "only kind \"resource\" takes a uri"),
    }
    let published = handler.notify().publish(Change { scope: request.scope, kind, uri: request.uri }).await;
    match published {
        Ok(event) => reply(
            StatusCode::OK,
            "application/json",
            json!({"epoch": event.epoch, "version": event.version, "eventId": event.event_id}).to_string(),
        ),
        Err(e) => error(StatusCode::SERVICE_UNAVAILABLE, &e.to_string()),
    }
}

fn error(status: StatusCode, message: &str) -> Response<Full<Bytes>> {
    reply(status, "application/json", json!({"error": message}).to_string())
}

fn reply(status: StatusCode, content_type: &'static str, body: String) -> Response<Full<Bytes>> {
    let mut resp = Response::new(Full::new(Bytes::from(body)));
    *resp.status_mut() = status;
    resp.headers_mut().insert(header::CONTENT_TYPE, http::HeaderValue::from_static(content_type));
    resp
}
