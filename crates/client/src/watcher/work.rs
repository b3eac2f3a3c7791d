//! The watcher's background work and loop vocabulary: [`Work`] (what a finished future
//! reports), [`Step`] (what one turn of the loop got), [`Flow`] (whether it goes on), and the
//! cancellable timer and listener wait the loop polls.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use futures_util::future::{AbortHandle, abortable};
use serde_json::Value;

use crate::capabilities::ServerCapabilities;
use crate::error::ClientError;
use crate::list::ListKind;
use crate::listener::{ListenEvent, Listener};
use crate::snapshot::FetchReport;

pub(super) type WorkFuture = Pin<Box<dyn Future<Output = Work> + Send>>;

/// Work finished in the background of the watcher's task.
pub(super) enum Work {
    Fetched {
        list: usize,
        covers: u64,
        report: FetchReport,
    },
    /// A fetch was aborted (its connection was replaced) or a timer replaced: nothing to do.
    Cancelled,
    DiscoverDue {
        generation: u64,
    },
    Discovered(Result<ServerCapabilities, ClientError>),
    RetryDue {
        list: usize,
        token: u64,
    },
    VerifyDue {
        list: usize,
        generation: u64,
    },
    DebounceDue {
        list: usize,
    },
    Read {
        resource: usize,
        covers: u64,
        outcome: Result<Value, ClientError>,
    },
    ReadRetryDue {
        resource: usize,
        token: u64,
    },
}

/// What one turn of the loop got.
pub(super) enum Step {
    Stop,
    Listen(ListenEvent),
    Work(Work),
    Refresh(Option<ListKind>),
}

/// Whether the loop goes on after a step.
#[derive(PartialEq, Eq)]
pub(super) enum Flow {
    Continue,
    /// Credentials were refused: every list shows `unauthorized`, nothing is retried.
    Unauthorized,
}

/// A timer yielding `work` after `after`, cancellable through the handle (then it yields
/// [`Work::Cancelled`] at once).
pub(super) fn timer(after: Duration, work: Work) -> (WorkFuture, AbortHandle) {
    let (sleep, handle) = abortable(tokio::time::sleep(after));
    let due = Box::pin(async move {
        match sleep.await {
            Ok(()) => work,
            Err(_aborted) => Work::Cancelled,
        }
    });
    (due, handle)
}

/// The listener's next event; pending forever without a listener (polling only).
pub(super) async fn next_event(listener: &mut Option<Box<Listener>>) -> ListenEvent {
    match listener {
        Some(listener) => listener.next_event().await,
        None => std::future::pending().await,
    }
}
