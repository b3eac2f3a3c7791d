//! `subscriptions/listen` (spec digest §17): parse the filter, narrow it to what this server
//! supports, and register the stream with the router before its ack is written.

use mcp_fleet_protocol::{ListenSupport, RpcError, SubscriptionFilter};

use super::{MethodRequest, Prepared};

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
    let scope = req.ctx.principal.as_ref().and_then(|p| p.scope.clone());
    router.register(scope, filter, req.id.clone(), req.server.info().clone()).map(Prepared::Listen)
}
