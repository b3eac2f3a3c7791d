//! The drain's cut of a call: a call still running at the shutdown deadline is answered with
//! a `-32603` naming the execution epoch (and node) that ends (`data.reason: "drained"`),
//! written before the serve loops abort the connections — never a connection reset, and never
//! retried elsewhere (the client decides; the error says which code was interrupted).

use std::sync::Arc;

use mcp_fleet_protocol::RpcError;
use serde_json::json;

use super::{CallFuture, CallResult};
use crate::shutdown::{CutNames, Shutdown};

/// `call`, ended at the drain's deadline with [`drained`] if it is still running then. Not
/// boxed: the caller boxes it once, together with whatever else it wraps around the call.
pub(crate) async fn cut_at_deadline(
    call: CallFuture,
    mut shutdown: Shutdown,
    names: Arc<CutNames>,
) -> Result<CallResult, RpcError> {
    tokio::select! {
        biased;
        answer = call => answer,
        () = shutdown.cut() => {
            let CutNames { epoch, node } = &*names;
            tracing::warn!(%epoch, "a call was still running at the shutdown deadline; answering it with the drain error");
            Err(drained(epoch, node))
        }
    }
}

/// The error of a call cut by the drain: it names the execution epoch (and node) that ended.
pub(crate) fn drained(epoch: &str, node: &str) -> RpcError {
    RpcError::internal(format!(
        "The replica {node} shut down (execution epoch {epoch} ended) before the call finished; \
         it was not retried elsewhere"
    ))
    .with_data(json!({"reason": "drained", "epoch": epoch, "node": node}))
}
