//! `subscriptions/listen` (spec digest §17): parse the filter, narrow it to what this server
//! supports, take one of the principal's stream slots, and register the stream with the router
//! before its ack is written.

use mcp_fleet_protocol::{ListenSupport, RpcError, SubscriptionFilter};

use super::{MethodRequest, Prepared};
use crate::auth::{ReservedStream, stream_quota_error};
use crate::context::ClientAddr;
use crate::listen::Opener;

/// Everything listen-related is supported: the capabilities advertise all of it.
const SUPPORT: ListenSupport = ListenSupport {
    tools_list_changed: true,
    prompts_list_changed: true,
    resources_list_changed: true,
    resource_subscribe: true,
};

pub(super) fn open(req: &MethodRequest<'_>) -> Result<Prepared, RpcError> {
    let router = &req.shared.router;
    let filter = SubscriptionFilter::from_params(&req.params, router.limits().max_uris_per_listen)?.honoured(SUPPORT);
    let principal = req.ctx.principal.as_ref();
    let key = principal.map(crate::Principal::limit_key);
    let opener = match &key {
        Some(key) => Opener::Principal(key),
        None => Opener::Anonymous(req.ctx.parts.extensions.get::<ClientAddr>().map(|a| a.0.ip())),
    };
    let catalog = &req.catalog;
    let known = |uri: &str| {
        catalog.resources.get(uri).is_some() || catalog.templates.enabled().any(|t| t.pattern.matches(uri).is_some())
    };
    let budget = router.budget().admit(&filter.resource_subscriptions, opener, known)?;
    // Without an authenticator there is no one to tell apart: the node's cap and the address
    // budget are the only ones. In fleet mode the service reserved the slot already.
    let reserved = req.ctx.parts.extensions.get::<ReservedStream>().and_then(ReservedStream::take);
    let permit = match (&key, reserved) {
        (_, Some(slot)) => Some(slot),
        (Some(key), None) => {
            Some(req.shared.limits.acquire_local(key).map_err(|r| stream_quota_error(&req.shared.metrics, r))?)
        }
        (None, None) => None,
    };
    let scope = principal.and_then(|p| p.scope.clone());
    let body = router.register(scope, filter, req.id.clone(), req.server.info().clone())?;
    Ok(Prepared::Listen(body.holding(permit, budget)))
}
