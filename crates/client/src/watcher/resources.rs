//! One subscribed resource: its [`WatchedResource`] (the [`Rediscovery`] machine reused, one
//! read in flight per URI) and its `resources/read`s.

use std::sync::Arc;

use serde_json::{Value, json};
use tokio::sync::watch;

use super::CatalogWatcher;
use super::work::{Flow, Work};
use crate::error::{ClientError, ErrorClass};
use crate::rediscovery::{Action, Rediscovery};

pub(super) struct WatchedResource {
    pub(super) uri: String,
    pub(super) state: Rediscovery<Arc<Value>>,
    pub(super) published: watch::Sender<Option<Arc<Value>>>,
}

impl WatchedResource {
    pub(super) fn new(uri: &str) -> WatchedResource {
        WatchedResource { uri: uri.to_owned(), state: Rediscovery::new(), published: watch::channel(None).0 }
    }
}

impl CatalogWatcher {
    pub(super) fn on_read(&mut self, resource: usize, covers: u64, outcome: Result<Value, ClientError>) -> Flow {
        let entry = &mut self.resources[resource];
        let action = match outcome {
            Ok(contents) => {
                let contents = Arc::new(contents);
                let action = entry.state.on_fetched(covers, contents.clone());
                entry.published.send_replace(Some(contents));
                action
            }
            Err(error) if error.class() == ErrorClass::Unauthorized => return Flow::Unauthorized,
            Err(error) if error.class() == ErrorClass::MethodNotFound => {
                entry.state.abandon();
                return Flow::Continue;
            }
            Err(_) => entry.state.on_fetch_failed(covers),
        };
        self.apply_read(resource, action);
        Flow::Continue
    }

    pub(super) fn apply_read(&mut self, resource: usize, action: Action) {
        match action {
            Action::Idle => {}
            Action::Fetch { covers } => {
                let (rpc, uri) = (self.requests.clone(), self.resources[resource].uri.clone());
                self.work.push(Box::pin(async move {
                    let outcome = rpc.call("resources/read", json!({"uri": uri})).await;
                    Work::Read { resource, covers, outcome }
                }));
            }
            Action::Retry { failures, token } => {
                let delay = self.options.retry.delay(failures.saturating_sub(1));
                self.work.push(Box::pin(async move {
                    tokio::time::sleep(delay).await;
                    Work::ReadRetryDue { resource, token }
                }));
            }
        }
    }
}
