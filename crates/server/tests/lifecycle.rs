//! A handler's lifetime: its background tasks end with it (dropped or shut down), and a
//! `serve()` that starts after `shutdown()` returns at once instead of serving forever.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use futures_core::Stream;
use mcp_fleet_server::bus::testing::{WAIT, WrappedBus, eventually};
use mcp_fleet_server::bus::{BusItem, BusStream, MemoryBus, ServerEventBus};
use mcp_fleet_server::{HandlerOptions, McpServer, create_mcp_handler};

/// A memory bus that counts its open subscription streams.
fn counting_bus(open: &Arc<AtomicUsize>) -> Arc<dyn ServerEventBus> {
    let open = open.clone();
    Arc::new(WrappedBus::new(Arc::new(MemoryBus::new())).mapping_streams(move |inner| {
        open.fetch_add(1, Ordering::SeqCst);
        Box::pin(Counted { inner, open: open.clone() }) as BusStream
    }))
}

/// A stream that counts itself out when dropped.
struct Counted {
    inner: BusStream,
    open: Arc<AtomicUsize>,
}

impl Stream for Counted {
    type Item = BusItem;
    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<BusItem>> {
        self.inner.as_mut().poll_next(cx)
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.open.fetch_sub(1, Ordering::SeqCst);
    }
}

// Paused time: the 50 ms that a clone must keep the consumer running pass at once.
#[tokio::test(start_paused = true)]
async fn dropping_the_last_handler_clone_stops_its_background_tasks() {
    let open = Arc::new(AtomicUsize::new(0));
    let bus = counting_bus(&open);
    let handler =
        create_mcp_handler(McpServer::builder("s", "1").build(), HandlerOptions::default().bus(bus)).await.unwrap();
    assert_eq!(open.load(Ordering::SeqCst), 1, "the consumer subscribed");
    let clone = handler.clone();
    drop(handler);
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(open.load(Ordering::SeqCst), 1, "a clone keeps it running");
    drop(clone);
    eventually("the bus consumer stopped", WAIT, async || open.load(Ordering::SeqCst) == 0).await;
}

#[tokio::test]
async fn shutdown_stops_the_background_tasks_and_a_later_serve_returns_at_once() {
    let open = Arc::new(AtomicUsize::new(0));
    let bus = counting_bus(&open);
    let handler =
        create_mcp_handler(McpServer::builder("s", "1").build(), HandlerOptions::default().bus(bus)).await.unwrap();
    handler.shutdown().await;
    eventually("the bus consumer stopped", WAIT, async || open.load(Ordering::SeqCst) == 0).await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let served = tokio::time::timeout(Duration::from_secs(2), handler.serve(listener)).await;
    assert!(matches!(served, Ok(Ok(()))), "serve() after shutdown() returns at once");
}
