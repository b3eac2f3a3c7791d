//! The fleet's task store behind a [`TaskHandle`](crate::tasks::TaskHandle): `Tasks` answers the
//! handle's [`TaskControl`] — status, status message, completion, failure — on any replica.

use futures_util::FutureExt as _;
use futures_util::future::BoxFuture;
use mcp_fleet_protocol::RpcError;
use mcp_fleet_protocol::tasks::TaskStatus;
use mcp_fleet_protocol::types::CallToolResult;

use super::record::TaskRecord;
use super::shared::{Tasks, now_ms};
use crate::error::ServerError;
use crate::task_handle::TaskControl;

impl TaskControl for Tasks {
    fn status<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<TaskStatus>, ServerError>> {
        async move { Ok(self.store.load(id).await?.map(|r| r.status)) }.boxed()
    }

    fn set_status_message<'a>(&'a self, id: &'a str, message: String) -> BoxFuture<'a, Result<bool, ServerError>> {
        self.apply(id, move |t| t.set_message(message.clone(), now_ms())).boxed()
    }

    fn complete<'a>(&'a self, id: &'a str, result: CallToolResult) -> BoxFuture<'a, Result<bool, ServerError>> {
        async move {
            match self.stored_result(result) {
                Ok(value) => self.apply(id, |t| t.complete(value.clone(), now_ms())).await,
                Err(error) => self.apply(id, |t| t.fail(&error, now_ms())).await,
            }
        }
        .boxed()
    }

    fn fail<'a>(&'a self, id: &'a str, error: RpcError) -> BoxFuture<'a, Result<bool, ServerError>> {
        self.apply(id, move |t| t.fail(&error, now_ms())).boxed()
    }
}

impl Tasks {
    /// Change task `id` with `change`: whether it changed; `NotFound` once the store forgot it.
    async fn apply(&self, id: &str, change: impl FnMut(&mut TaskRecord) -> bool) -> Result<bool, ServerError> {
        match self.change(id, change).await? {
            Some(updated) => Ok(updated.changed),
            None => Err(ServerError::NotFound(id.to_owned())),
        }
    }
}
