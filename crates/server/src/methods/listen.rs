//! `subscriptions/listen` (spec digest §17): parse the filter, narrow it to what this server
//! supports, take one of the principal's stream slots, and register the stream with the router
//! before its ack is written.

use mcp_fleet_protocol::tasks::{declares_tasks, required_capability};
use mcp_fleet_protocol::{ListenSupport, RpcError, SubscriptionFilter};

use super::{MethodRequest, Prepared};
use crate::auth::{ReservedStream, StreamSlot, stream_quota_error};
use crate::context::ClientAddr;
use crate::listen::Opener;
use crate::metrics::ListenRefusal;

/// Everything listen-related is supported: the capabilities advertise all of it (task ids when
/// the tasks extension is on).
const SUPPORT: ListenSupport = ListenSupport {
    tools_list_changed: true,
    prompts_list_changed: true,
    resources_list_changed: true,
    resource_subscribe: true,
    tasks: false,
};

pub(super) fn open(req: &MethodRequest<'_>) -> Result<Prepared, RpcError> {
    let router = &req.shared.router;
    let support = ListenSupport { tasks: req.shared.tasks.is_some(), ..SUPPORT };
    let filter = SubscriptionFilter::from_params(&req.params, router.limits().max_uris_per_listen)?.honoured(support);
    // The tasks extension: "servers MUST return `-32021` for non-declaring clients requesting
    // task notifications on `subscriptions/listen`" (before the ack, so with its 400).
    if !filter.task_ids.is_empty() && !declares_tasks(&req.meta) {
        return Err(RpcError::missing_capability(required_capability()));
    }
    // Only ids this server could have minted are followed: anything else names no task, and
    // an id of any length would be held (twice) for as long as the stream lives.
    if let Some(at) = filter.task_ids.iter().position(|id| !crate::tasks::is_task_id(id)) {
        let message =
            format!("params.notifications.taskIds[{at}] is not a task id of this server (32 lowercase hex digits)");
        let error = RpcError::invalid_params(message).in_band();
        return Err(router.budget().refuse(ListenRefusal::BadTaskId, error));
    }
    let principal = req.ctx.principal.as_ref();
    let key = principal.map(crate::context::Principal::limit_key);
    let opener = match &key {
        Some(key) => Opener::Principal(key),
        None => Opener::Anonymous(req.ctx.parts.extensions.get::<ClientAddr>().map(|a| a.0.ip())),
    };
    let catalog = &req.catalog;
    let known = |uri: &str| {
        catalog.resources.get(uri).is_some() || catalog.templates.enabled().any(|t| t.pattern.matches(uri).is_some())
    };
    let budget = router.budget().admit(&filter, opener, known)?;
    let permit = stream_permit(req, key.as_deref())?;
    let scope = principal.and_then(|p| p.tenant.clone());
    let interest = req.shared.interest.listen(scope.as_deref(), &filter);
    let tasks = filter.task_ids.clone();
    let owner = (scope, crate::tasks::binding(principal));
    let body = router.register(owner, filter, req.id.clone(), req.server.info().clone())?;
    if let (Some(store), false) = (&req.shared.tasks, tasks.is_empty()) {
        // Their current state at once: a change made before the stream registered is not lost.
        store.signals.send(crate::tasks::TaskSignal::Followed(tasks));
    }
    Ok(Prepared::Listen(body.holding(permit, budget).following(interest)))
}

/// The principal's slot for one more open stream (a listen, an events stream). Without an
/// authenticator there is no one to tell apart: the node's caps are the only ones. In fleet
/// mode the service reserved the slot already.
pub(super) fn stream_permit(req: &MethodRequest<'_>, key: Option<&str>) -> Result<Option<StreamSlot>, RpcError> {
    let reserved = req.ctx.parts.extensions.get::<ReservedStream>().and_then(ReservedStream::take);
    Ok(match (key, reserved) {
        (_, Some(slot)) => Some(slot),
        (Some(key), None) => {
            Some(req.shared.limits.acquire_local(key).map_err(|r| stream_quota_error(&req.shared.metrics, r))?)
        }
        (None, None) => None,
    })
}
