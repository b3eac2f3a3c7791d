//! A handler's lifetime: its background tasks end with it (dropped or shut down), and a
//! `serve()` that starts after `shutdown()` returns at once instead of serving forever.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use futures_core::Stream;
use mcp_fleet_server::bus::testing::WrappedBus;
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

async fn until_zero(open: &AtomicUsize) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while open.load(Ordering::SeqCst) != 0 {
        assert!(tokio::time::Instant::now() < deadline, "the bus consumer is still running");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
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
    until_zero(&open).await;
}

#[tokio::test]
async fn shutdown_stops_the_background_tasks_and_a_later_serve_returns_at_once() {
    let open = Arc::new(AtomicUsize::new(0));
    let bus = counting_bus(&open);
    let handler =
        create_mcp_handler(McpServer::builder("s", "1").build(), HandlerOptions::default().bus(bus)).await.unwrap();
    handler.shutdown().await;
    until_zero(&open).await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let served = tokio::time::timeout(Duration::from_secs(2), handler.serve(listener)).await;
    assert!(matches!(served, Ok(Ok(()))), "serve() after shutdown() returns at once");
}
