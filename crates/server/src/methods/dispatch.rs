//! Dispatch: ladder steps 10–12 (method exists, declared client capabilities, `Mcp-Param-*`)
//! and the hand-off to each method family, producing a [`Prepared`] answer.

use futures_util::future::BoxFuture;
use futures_util::{FutureExt, TryFutureExt};
use http::HeaderMap;
use mcp_fleet_protocol::envelope::RequestMeta;
use mcp_fleet_protocol::{ListKind, Method, RequestId, RpcError};
use serde_json::{Map, Value};
use tokio::sync::mpsc;

use crate::audit::{CallFacts, CallStart};
use crate::catalog::{Catalog, McpServer};
use crate::context::RequestContext;
use crate::listen::ListenBody;
use crate::services::Services;

use super::answer::CallResult;
use super::{completion, discover, listen, lists, prompts, resources, tools};

/// A call's eventual result object (already stamped), or its error.
pub(crate) type CallFuture = BoxFuture<'static, Result<CallResult, RpcError>>;

/// How a request will be answered when it is not refused. A refusal is the `Err(RpcError)`
/// of [`prepare`], whose status (in-band 200 or the code's own) decides the response.
pub(crate) enum Prepared {
    /// Answered right away (discover, lists).
    Immediate(Value),
    /// A handler to run; its request-scoped notifications (if it may send any) arrive on
    /// `notifications`, which switches the response to SSE. Its errors are already mapped
    /// with [`RpcError::from_handler`].
    Call { future: CallFuture, notifications: Option<crate::context::NotificationReceiver> },
    /// An open listen stream.
    Listen(ListenBody),
}

impl Prepared {
    /// A call of `future`, whose errors take the status a handler's error gets.
    pub(crate) fn call(
        future: impl Future<Output = Result<Value, RpcError>> + Send + 'static,
        notifications: Option<crate::context::NotificationReceiver>,
    ) -> Prepared {
        Prepared::call_written(future.map_ok(CallResult::Value), notifications)
    }

    /// [`Prepared::call`] of a future that answers a [`CallResult`] itself.
    pub(crate) fn call_written(
        future: impl Future<Output = Result<CallResult, RpcError>> + Send + 'static,
        notifications: Option<crate::context::NotificationReceiver>,
    ) -> Prepared {
        Prepared::Call { future: future.map_err(RpcError::from_handler).boxed(), notifications }
    }
}

/// Everything a method needs about one request.
pub(crate) struct MethodRequest<'a> {
    pub(crate) shared: &'a Services,
    pub(crate) server: McpServer,
    pub(crate) catalog: std::sync::Arc<Catalog>,
    pub(crate) ctx: RequestContext,
    pub(crate) id: RequestId,
    pub(crate) method: String,
    pub(crate) params: Map<String, Value>,
    pub(crate) meta: RequestMeta,
    pub(crate) headers: &'a HeaderMap,
    /// A 2025-era request (see `crate::era2025`): no `Mcp-*` request headers to mirror.
    pub(crate) era2025: bool,
}

/// Ladder steps 10–12, then dispatch. `Err` is a rejection, in-band or not (its status says).
pub(crate) fn prepare(mut req: MethodRequest<'_>) -> Result<Prepared, RpcError> {
    let Some(family) = Family::of(&req.method, &req.catalog, req.shared) else {
        return Err(RpcError::method_not_found(&req.method));
    };
    match family {
        Family::Discover => Ok(Prepared::Immediate(discover::discover(&req))),
        Family::List(list) => lists::list(&req, list).map(Prepared::Immediate),
        Family::CallTool => ended(&mut req, Method::ToolsCall, tools::prepare_call),
        Family::ReadResource => ended(&mut req, Method::ResourcesRead, resources::prepare_read),
        Family::GetPrompt => ended(&mut req, Method::PromptsGet, prompts::prepare_get),
        Family::Complete => completion::prepare(&req),
        Family::Listen => listen::open(&req),
        Family::Task(method) => super::tasks::prepare(&req, method),
        #[cfg(feature = "events")]
        Family::Events(method) => super::events::prepare(&req, method),
    }
}

/// A call (`tools/call`, `resources/read`, `prompts/get`) prepared by `prepare`, and the two
/// ends every such call has whatever its method: its record in the audit trail, once it is
/// answered (or refused, or dropped), and the drain's deadline, at which a call still running
/// is answered with the error naming the epoch that ends (`endpoint::drain`).
fn ended(
    req: &mut MethodRequest<'_>,
    method: Method,
    prepare: fn(&mut MethodRequest<'_>) -> Result<Prepared, RpcError>,
) -> Result<Prepared, RpcError> {
    let audit = req.shared.audit.start(|| call_facts(req, method));
    let finish = |audit: Option<CallStart>, answer: Result<&Value, &RpcError>| {
        if let Some(audit) = audit {
            audit.finish(answer);
        }
    };
    match prepare(req) {
        Err(error) => {
            finish(audit, Err(&error));
            Err(error)
        }
        Ok(Prepared::Immediate(result)) => {
            finish(audit, Ok(&result));
            Ok(Prepared::Immediate(result))
        }
        Ok(Prepared::Call { future, notifications }) => {
            let shared = req.shared;
            let cut = super::cut::cut_at_deadline(future, shared.shutdown.subscribe(), shared.cut_names.clone());
            // One box for the cut and the audit record together.
            let future = match audit {
                None => cut.boxed(),
                Some(audit) => async move {
                    let answer = cut.await;
                    audit.end(super::answer::audit_ending(answer.as_ref()));
                    answer
                }
                .boxed(),
            };
            Ok(Prepared::Call { future, notifications })
        }
        Ok(listen @ Prepared::Listen(_)) => Ok(listen),
    }
}

/// What the audit trail knows of a call before it runs.
fn call_facts<'a>(req: &'a MethodRequest<'_>, method: Method) -> CallFacts<'a> {
    let (target, kind) = match method {
        Method::ResourcesRead => ("uri", ListKind::Resources),
        Method::PromptsGet => ("name", ListKind::Prompts),
        _ => ("name", ListKind::Tools),
    };
    let revision = req.shared.revision_salt.apply(kind, req.catalog.list(kind).1);
    CallFacts {
        method: method.as_str(),
        name: req.params.get(target).and_then(Value::as_str).unwrap_or_default().to_owned(),
        principal: req.ctx.principal.as_ref(),
        catalog_revision: mcp_fleet_protocol::cursor::revision_hex(revision),
        arguments: (method != Method::ResourcesRead).then(|| req.params.get("arguments").unwrap_or(&EMPTY_ARGUMENTS)),
    }
}

/// The arguments of a call that sent none: `{}` (so its digest is that of an empty object).
static EMPTY_ARGUMENTS: std::sync::LazyLock<Value> = std::sync::LazyLock::new(|| Value::Object(Map::new()));

#[derive(Debug, Clone, Copy)]
enum Family {
    Discover,
    List(ListKind),
    CallTool,
    ReadResource,
    GetPrompt,
    Complete,
    Listen,
    /// `tasks/get`, `tasks/update`, `tasks/cancel` (the tasks extension).
    Task(Method),
    /// `events/list`, `events/poll`, `events/stream` (the events extension, when the handler
    /// serves it).
    #[cfg(feature = "events")]
    Events(Method),
}

impl Family {
    /// Methods this server answers (a capability-gated one only when advertised).
    fn of(method: &str, catalog: &Catalog, shared: &Services) -> Option<Family> {
        let method = Method::parse(method)?;
        Some(match method {
            Method::Discover => Family::Discover,
            Method::ToolsCall => Family::CallTool,
            Method::ResourcesRead => Family::ReadResource,
            Method::PromptsGet => Family::GetPrompt,
            Method::CompletionComplete if catalog.completes() => Family::Complete,
            Method::CompletionComplete => return None,
            Method::SubscriptionsListen => Family::Listen,
            Method::TasksGet | Method::TasksUpdate | Method::TasksCancel => Family::Task(method),
            #[cfg(feature = "events")]
            Method::EventsList | Method::EventsPoll | Method::EventsStream if shared.events.is_some() => {
                Family::Events(method)
            }
            #[cfg(feature = "events")]
            Method::EventsSubscribe | Method::EventsUnsubscribe
                if shared.events.as_ref().is_some_and(|e| e.webhooks.get().is_some()) =>
            {
                Family::Events(method)
            }
            Method::EventsList
            | Method::EventsPoll
            | Method::EventsStream
            | Method::EventsSubscribe
            | Method::EventsUnsubscribe => {
                let _ = shared;
                return None;
            }
            Method::ToolsList | Method::ResourcesList | Method::ResourceTemplatesList | Method::PromptsList => {
                Family::List(method.list()?)
            }
        })
    }
}

/// Bound of a call's request-scoped notification queue: a handler that outpaces its client
/// waits instead of growing memory.
const CALL_NOTIFICATION_QUEUE: usize = 64;

impl MethodRequest<'_> {
    /// The call context for a handler, with a notification channel when the request opted in
    /// to progress or log messages and the response may switch to SSE.
    ///
    /// The envelope moves into the context (the request's is left empty: nothing reads it
    /// after this).
    pub(crate) fn call_context(
        &mut self,
    ) -> (crate::context::CallContext, Option<crate::context::NotificationReceiver>) {
        let wants = self.meta.progress_token.is_some() || self.meta.log_level.is_some();
        let (tx, rx) = if wants && self.shared.options.response_mode == crate::options::ResponseMode::Auto {
            let (tx, rx) = mpsc::channel(CALL_NOTIFICATION_QUEUE);
            (Some(tx), Some(rx))
        } else {
            (None, None)
        };
        let mut ctx = crate::context::CallContext::new(std::mem::take(&mut self.meta), &self.ctx, tx);
        ctx.shutdown = Some(self.shared.shutdown.subscribe());
        (ctx, rx)
    }

    /// A required string parameter (`name`, `uri`), or an in-band `-32602`.
    pub(crate) fn string_param(&self, key: &str) -> Result<String, RpcError> {
        match self.params.get(key) {
            Some(Value::String(s)) => Ok(s.clone()),
            _ => Err(RpcError::invalid_params(format!("params.{key} must be a string")).in_band()),
        }
    }

    /// An optional object parameter (`arguments`), empty when absent.
    pub(crate) fn object_param(&self, key: &str) -> Result<Map<String, Value>, RpcError> {
        match self.params.get(key) {
            None | Some(Value::Null) => Ok(Map::new()),
            Some(Value::Object(o)) => Ok(o.clone()),
            Some(_) => Err(RpcError::invalid_params(format!("params.{key} must be an object")).in_band()),
        }
    }
}
