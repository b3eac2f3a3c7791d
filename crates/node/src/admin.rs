//! The admin endpoint: `POST /admin/notify` publishes a change event (what a config reloader
//! calls), `GET /metrics` exports metrics, `GET /healthz` reports the bus state.

use std::convert::Infallible;

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use mcp_fleet_server::McpHandler;
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

/// Serve the admin endpoint until `stop` resolves.
pub(crate) async fn serve(listener: TcpListener, handler: McpHandler, stop: impl std::future::Future<Output = ()>) {
    tokio::pin!(stop);
    loop {
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    tracing::warn!(error = %e, "admin accept failed");
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = &mut stop => return,
        };
        let handler = handler.clone();
        tokio::spawn(async move {
            let service = service_fn(move |req| {
                let handler = handler.clone();
                async move { Ok::<_, Infallible>(route(&handler, req).await) }
            });
            let builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
            let _ = builder.serve_connection(TokioIo::new(stream), service).await;
        });
    }
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
    let notifier = match request.scope {
        Some(scope) => handler.notify().scope(scope),
        None => handler.notify(),
    };
    let published = match (request.kind.as_str(), request.uri) {
        ("tools", None) => notifier.tools_changed().await,
        ("prompts", None) => notifier.prompts_changed().await,
        ("resources", None) => notifier.resources_changed().await,
        ("resource", Some(uri)) => notifier.resource_updated(uri).await,
        ("resource", None) => return error(StatusCode::BAD_REQUEST, "kind \"resource\" needs a uri"),
        ("tools" | "prompts" | "resources", Some(_)) => {
            return error(StatusCode::BAD_REQUEST, "only kind \"resource\" takes a uri");
        }
        (other, _) => {
            return error(
                StatusCode::BAD_REQUEST,
                &format!("unknown kind {other:?}: tools, prompts, resources or resource"),
            );
        }
    };
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
