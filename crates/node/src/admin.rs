//! The admin endpoint: probes, metrics, and the operations a config reloader calls.
//!
//! | Route | What | Auth |
//! |---|---|---|
//! | `GET /livez` (`/healthz`) | the process answers: no dependency, so a bus blip never restarts a pod | open |
//! | `GET /readyz` | serving, not draining, bus consumer not down past the grace period | open |
//! | `GET /metrics` | OpenMetrics: counters, this node's id, revision hashes; no credentials, and no tenant names from the node's own catalog (one global catalog) | open |
//! | `GET /admin/fleet` | the fleet as this node sees it: members, their catalog revisions, last seen, open streams; per list whether the fleet converged; the bus URL, redacted | bearer token |
//! | `POST /admin/notify` | publish a change event | bearer token |
//!
//! It serves from the first moment of the process (before the bus is connected), answering
//! `/readyz` with 503 until the handler exists.
//!
//! "Bearer token" means: when one is configured. Without one every route is open, which is
//! why [`check_exposure`] refuses an admin address beyond loopback without a token unless the
//! operator said `--admin-insecure`.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use mcp_fleet_catalog_file::ReloadStats;
use mcp_fleet_server::McpHandler;
use mcp_fleet_server::bus::{Change, EventKind};
use serde::Deserialize;
use serde_json::json;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;
use tokio::net::TcpListener;
use tracing::Instrument;

use crate::catalog;
use crate::state::NodeState;

/// Largest admin request body.
const MAX_ADMIN_BODY: usize = 64 * 1024;

/// The admin endpoint's configuration and state.
#[derive(Clone)]
pub(crate) struct Admin {
    pub(crate) state: NodeState,
    /// Bearer token for `POST /admin/*` and `GET /admin/fleet`; `None` accepts any caller.
    pub(crate) token: Option<AdminToken>,
    /// The catalog file's reload counters (with `--catalog`), exported with the metrics.
    pub(crate) catalog_stats: Option<Arc<ReloadStats>>,
    /// The bus URL as `/admin/fleet` shows it: redacted.
    pub(crate) bus: Arc<str>,
}

/// The admin token, kept only as its SHA-256 digest. A caller's token is hashed too and the
/// two 32-byte digests compared in constant time, so the time a refusal takes depends neither
/// on how much of the token a guess got right nor on how long the real token is (comparing
/// the tokens themselves returns early on a length mismatch: a length oracle).
#[derive(Clone)]
pub(crate) struct AdminToken {
    digest: [u8; 32],
}

impl AdminToken {
    pub(crate) fn new(token: &str) -> AdminToken {
        AdminToken { digest: Sha256::digest(token.as_bytes()).into() }
    }

    /// Whether `given` is the token.
    pub(crate) fn matches(&self, given: &str) -> bool {
        let given: [u8; 32] = Sha256::digest(given.as_bytes()).into();
        bool::from(given.ct_eq(&self.digest))
    }
}

/// Why the admin endpoint may not start as configured.
#[derive(thiserror::Error)]
pub(crate) enum AdminError {
    /// Beyond loopback without a token.
    #[error(
        "--admin-listen {0} is reachable beyond loopback and has no token: anyone who reaches it could publish \
         fleet-wide change events. Set --admin-token-file (or --admin-token), listen on 127.0.0.1, or pass \
         --admin-insecure for a lab"
    )]
    Exposed(SocketAddr),
    /// A token that is empty (or only blanks): no caller could ever present it, so the admin
    /// operations would be locked — or, read as "no token", silently open.
    #[error(
        "{0} is empty: the admin operations need a token a caller can present. Give one, or leave the flag out \
         (then the admin port must be on loopback, or --admin-insecure)"
    )]
    EmptyToken(String),
    /// The token file could not be read.
    #[error("admin token file {path}: {source}")]
    TokenFile { path: PathBuf, source: std::io::Error },
}

/// The admin token, from `--admin-token` (`flag`) or `--admin-token-file` (`file`, surrounding
/// whitespace ignored); `None` when neither is given. One that is empty is refused: a mounted
/// Secret that came out empty must stop the node, not leave its admin port unusable or open.
pub(crate) fn read_token(flag: Option<&str>, file: Option<&Path>) -> Result<Option<String>, AdminError> {
    let (token, source) = match (flag, file) {
        (Some(token), _) => (token.to_owned(), "--admin-token".to_owned()),
        (None, Some(path)) => {
            let text = std::fs::read_to_string(path)
                .map_err(|source| AdminError::TokenFile { path: path.to_owned(), source })?;
            (text.trim().to_owned(), format!("the admin token file {}", path.display()))
        }
        (None, None) => return Ok(None),
    };
    if token.trim().is_empty() {
        return Err(AdminError::EmptyToken(source));
    }
    Ok(Some(token))
}

/// The sentence, not the variant: `main` prints its error with `Debug`.
impl std::fmt::Debug for AdminError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(self, f)
    }
}

/// Refuse an admin endpoint on `addr` without a token unless it is on loopback or the
/// operator passed `insecure`; warn whenever it runs without one.
pub(crate) fn check_exposure(addr: SocketAddr, has_token: bool, insecure: bool) -> Result<(), AdminError> {
    if has_token {
        return Ok(());
    }
    if !addr.ip().is_loopback() {
        if !insecure {
            tracing::error!("{}", AdminError::Exposed(addr));
            return Err(AdminError::Exposed(addr));
        }
        tracing::warn!(%addr, "the admin endpoint listens beyond loopback without a token (--admin-insecure): anyone who reaches it can publish change events and read the fleet");
    } else {
        tracing::warn!(
            "the admin endpoint has no token: any local process can publish change events (set --admin-token or --admin-token-file)"
        );
    }
    Ok(())
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct NotifyRequest {
    kind: String,
    uri: Option<String>,
    scope: Option<String>,
}

impl Admin {
    /// Serve the admin endpoint until `stop` resolves, then drain within `deadline`.
    pub(crate) async fn serve(self, listener: TcpListener, stop: impl Future<Output = ()>, deadline: Duration) {
        let service = move |req: Request<Incoming>| {
            let admin = self.clone();
            async move { Ok::<_, Infallible>(admin.route(req).await) }
        };
        mcp_fleet_server::serve_http(listener, service, stop, deadline).await;
    }

    async fn route<B>(&self, req: Request<B>) -> Response<Full<Bytes>>
    where
        B: http_body::Body<Data = Bytes>,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        match (req.method(), req.uri().path()) {
            (&Method::GET, "/livez" | "/healthz") => {
                reply(StatusCode::OK, "application/json", r#"{"live":true}"#.into())
            }
            (&Method::GET, "/readyz") => self.readyz(),
            (&Method::GET, "/metrics") => self.metrics(),
            (&Method::GET, "/admin/fleet") => match self.authorize(req.headers()) {
                Err(refused) => *refused,
                Ok(()) => self.fleet(),
            },
            (&Method::POST, path) if path.starts_with("/admin/") => match self.authorize(req.headers()) {
                Err(refused) => *refused,
                Ok(()) => self.operation(req).await,
            },
            _ => reply(StatusCode::NOT_FOUND, "text/plain", "not found".into()),
        }
    }

    fn readyz(&self) -> Response<Full<Bytes>> {
        let code = if self.state.readiness().is_ok() { StatusCode::OK } else { StatusCode::SERVICE_UNAVAILABLE };
        reply(code, "application/json", self.state.describe().to_string())
    }

    fn metrics(&self) -> Response<Full<Bytes>> {
        match self.state.handler() {
            Some(handler) => {
                let mut text = handler.metrics_text();
                if let Some(stats) = &self.catalog_stats {
                    text = catalog::splice_metrics(text, &catalog::metrics_text(stats));
                }
                reply(StatusCode::OK, "application/openmetrics-text; version=1.0.0", text)
            }
            None => reply(
                StatusCode::SERVICE_UNAVAILABLE,
                "text/plain",
                "starting: the event bus is not connected yet".into(),
            ),
        }
    }

    fn fleet(&self) -> Response<Full<Bytes>> {
        let Some(handler) = self.state.handler() else {
            return error(StatusCode::SERVICE_UNAVAILABLE, "starting: the event bus is not connected yet");
        };
        match serde_json::to_value(handler.fleet()) {
            Ok(mut body) => {
                body["bus"] = json!(self.bus);
                reply(StatusCode::OK, "application/json", body.to_string())
            }
            Err(e) => error(StatusCode::INTERNAL_SERVER_ERROR, &format!("could not encode the fleet: {e}")),
        }
    }

    /// `Authorization: Bearer <token>`, checked by [`AdminToken::matches`] (no timing oracle
    /// on the token's prefix or length).
    fn authorize(&self, headers: &http::HeaderMap) -> Result<(), Box<Response<Full<Bytes>>>> {
        let Some(expected) = &self.token else { return Ok(()) };
        let given = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .map(str::trim);
        match given {
            Some(given) if expected.matches(given) => Ok(()),
            _ => {
                let mut resp =
                    error(StatusCode::UNAUTHORIZED, "admin operations need Authorization: Bearer <admin token>");
                resp.headers_mut().insert(
                    header::WWW_AUTHENTICATE,
                    http::HeaderValue::from_static("Bearer realm=\"mcp-fleet-admin\""),
                );
                Err(Box::new(resp))
            }
        }
    }

    async fn operation<B>(&self, req: Request<B>) -> Response<Full<Bytes>>
    where
        B: http_body::Body<Data = Bytes>,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let Some(handler) = self.state.handler() else {
            return error(StatusCode::SERVICE_UNAVAILABLE, "starting: the event bus is not connected yet");
        };
        match req.uri().path() {
            "/admin/notify" => {
                // The caller's traceparent header, if any, becomes the publish's trace.
                let span = mcp_fleet_server::trace::incoming_span("POST /admin/notify", req.headers());
                notify(handler, req).instrument(span).await
            }
            _ => reply(StatusCode::NOT_FOUND, "text/plain", "not found".into()),
        }
    }
}

async fn notify<B>(handler: &McpHandler, req: Request<B>) -> Response<Full<Bytes>>
where
    B: http_body::Body<Data = Bytes>,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
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
    match handler.notify().publish(Change { scope: request.scope, kind, uri: request.uri, session: None }).await {
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

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_fleet_server::{HandlerOptions, McpServer, create_mcp_handler};

    fn admin(token: Option<&str>) -> Admin {
        Admin {
            state: NodeState::default(),
            token: token.map(AdminToken::new),
            catalog_stats: None,
            bus: Arc::from("redis://:***@redis/0"),
        }
    }

    fn request(method: Method, path: &str, auth: Option<&str>, body: &str) -> Request<Full<Bytes>> {
        let mut req = Request::builder().method(method).uri(path);
        if let Some(auth) = auth {
            req = req.header(header::AUTHORIZATION, auth);
        }
        req.body(Full::new(Bytes::from(body.to_owned()))).unwrap()
    }

    #[tokio::test]
    async fn before_the_bus_connects_the_node_is_live_but_not_ready() {
        let a = admin(None);
        assert_eq!(a.route(request(Method::GET, "/livez", None, "")).await.status(), StatusCode::OK);
        assert_eq!(a.route(request(Method::GET, "/healthz", None, "")).await.status(), StatusCode::OK);
        assert_eq!(a.route(request(Method::GET, "/readyz", None, "")).await.status(), StatusCode::SERVICE_UNAVAILABLE);
        let handler =
            create_mcp_handler(McpServer::builder("s", "1").build(), HandlerOptions::default()).await.unwrap();
        a.state.set_handler(handler.clone());
        assert_eq!(a.route(request(Method::GET, "/readyz", None, "")).await.status(), StatusCode::OK);
        handler.shutdown().await;
        let draining = a.route(request(Method::GET, "/readyz", None, "")).await;
        assert_eq!(draining.status(), StatusCode::SERVICE_UNAVAILABLE, "not ready while draining");
        assert_eq!(a.route(request(Method::GET, "/livez", None, "")).await.status(), StatusCode::OK);
    }

    #[test]
    fn an_empty_admin_token_is_refused_whether_given_or_read() {
        let dir = std::env::temp_dir().join(format!("mcp-fleet-admin-token-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (empty, blank, good) = (dir.join("empty"), dir.join("blank"), dir.join("good"));
        std::fs::write(&empty, "").unwrap();
        std::fs::write(&blank, " \n").unwrap();
        std::fs::write(&good, "t0k3n\n").unwrap();
        for (flag, file) in [(Some(""), None), (Some("  "), None), (None, Some(&empty)), (None, Some(&blank))] {
            let error = read_token(flag, file.map(PathBuf::as_path)).unwrap_err();
            assert!(matches!(error, AdminError::EmptyToken(_)) && error.to_string().contains("is empty"), "{error}");
        }
        assert!(read_token(None, Some(&empty)).unwrap_err().to_string().contains("file"), "names the file");
        assert_eq!(read_token(None, Some(&good)).unwrap().as_deref(), Some("t0k3n"));
        assert_eq!(read_token(Some("t"), None).unwrap().as_deref(), Some("t"));
        assert_eq!(read_token(None, None).unwrap(), None);
        assert!(matches!(read_token(None, Some(&dir.join("absent"))), Err(AdminError::TokenFile { .. })));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[tokio::test]
    async fn admin_operations_need_the_token_and_probes_and_metrics_do_not() {
        let a = admin(Some("s3cret"));
        let handler =
            create_mcp_handler(McpServer::builder("s", "1").build(), HandlerOptions::default()).await.unwrap();
        a.state.set_handler(handler);
        let notify = r#"{"kind":"tools"}"#;
        for auth in [None, Some("Bearer wrong"), Some("s3cret"), Some("Basic s3cret"), Some("Bearer s3cret-and-more")] {
            let resp = a.route(request(Method::POST, "/admin/notify", auth, notify)).await;
            assert_eq!(resp.status(), StatusCode::UNAUTHORIZED, "{auth:?}");
            assert!(resp.headers().contains_key(header::WWW_AUTHENTICATE));
        }
        let ok = a.route(request(Method::POST, "/admin/notify", Some("Bearer s3cret"), notify)).await;
        assert_eq!(ok.status(), StatusCode::OK);
        let unknown = a.route(request(Method::POST, "/admin/nope", None, "")).await;
        assert_eq!(unknown.status(), StatusCode::UNAUTHORIZED, "no route is revealed without the token");
        for open in ["/livez", "/readyz", "/metrics"] {
            assert_eq!(a.route(request(Method::GET, open, None, "")).await.status(), StatusCode::OK, "{open}");
        }
        let fleet = a.route(request(Method::GET, "/admin/fleet", None, "")).await;
        assert_eq!(fleet.status(), StatusCode::UNAUTHORIZED, "the fleet names members and tenants");
        let fleet = a.route(request(Method::GET, "/admin/fleet", Some("Bearer s3cret"), "")).await;
        let body: serde_json::Value =
            serde_json::from_slice(&fleet.into_body().collect().await.unwrap().to_bytes()).unwrap();
        assert_eq!(body["bus"], "redis://:***@redis/0");
    }

    #[test]
    fn the_token_check_compares_digests_whatever_the_length() {
        let token = AdminToken::new("s3cret");
        assert!(token.matches("s3cret"));
        for wrong in ["", "s", "s3cre", "s3cret ", "s3cret-and-more", "S3CRET", &"x".repeat(10_000)] {
            assert!(!token.matches(wrong), "{wrong:?}");
        }
    }

    #[test]
    fn an_admin_port_beyond_loopback_needs_a_token_or_insecure() {
        let everywhere: SocketAddr = "0.0.0.0:9090".parse().unwrap();
        let local: SocketAddr = "127.0.0.1:9090".parse().unwrap();
        let local6: SocketAddr = "[::1]:9090".parse().unwrap();
        assert!(matches!(check_exposure(everywhere, false, false), Err(AdminError::Exposed(_))));
        assert!(matches!(check_exposure("[::]:9090".parse().unwrap(), false, false), Err(AdminError::Exposed(_))));
        assert!(check_exposure(everywhere, false, true).is_ok(), "--admin-insecure");
        assert!(check_exposure(everywhere, true, false).is_ok());
        assert!(check_exposure(local, false, false).is_ok() && check_exposure(local6, false, false).is_ok());
    }

    #[tokio::test]
    async fn notify_rejects_bad_requests_with_a_clear_400() {
        let a = admin(None);
        let handler =
            create_mcp_handler(McpServer::builder("s", "1").build(), HandlerOptions::default()).await.unwrap();
        a.state.set_handler(handler);
        for body in [
            r#"{"kind":"weather"}"#,
            r#"{"kind":"resource"}"#,
            r#"{"kind":"tools","uri":"a://b"}"#,
            "not json",
            r#"{"kind":"tools","x":1}"#,
        ] {
            let resp = a.route(request(Method::POST, "/admin/notify", None, body)).await;
            assert_eq!(resp.status(), StatusCode::BAD_REQUEST, "{body}");
        }
        let ok = a
            .route(request(Method::POST, "/admin/notify", None, r#"{"kind":"resource","uri":"a://b","scope":"t"}"#))
            .await;
        let body = ok.into_body().collect().await.unwrap().to_bytes();
        let reply: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert!(reply["epoch"].as_u64().is_some() && reply["version"].as_u64().is_some(), "{reply}");
    }
}
