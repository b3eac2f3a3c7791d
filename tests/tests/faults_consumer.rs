//! The node's own bus consumer forced to end: its subscription stream ends, or the task that
//! polls it panics. The supervisor must notice, subscribe again, report the gap, and the fleet
//! must deliver every accepted change (or invalidate it) as in every other fault — on a private
//! Redis (never the shared 6379), with the usual scenarios of `mcp_fleet_tests::faults`.

use std::sync::Arc;

use mcp_fleet_bus_redis::{RedisBus, RedisBusOptions};
use mcp_fleet_tests::faults::endable::{EndableBus, Ending};
use mcp_fleet_tests::faults::procs::{RedisServer, TempDir};
use mcp_fleet_tests::faults::{Fault, FaultFleet, run_scenarios};

/// Ends every node's consumer, alternating a plain end and a panic.
struct ConsumerForcedToEnd {
    switches: Vec<Arc<EndableBus>>,
    next: Ending,
}

impl Fault for ConsumerForcedToEnd {
    async fn inject(&mut self, _: &FaultFleet) {
        for switch in &self.switches {
            switch.force(self.next);
        }
        self.next = if self.next == Ending::End { Ending::Panic } else { Ending::End };
    }

    async fn settle(&mut self, _: &FaultFleet) {}
}

#[tokio::test]
async fn the_consumer_forced_to_end_or_to_panic() {
    let dir = TempDir::new("consumer-end");
    let server = RedisServer::start(dir.path(), "redis", None).await;
    let (mut buses, mut switches) = (Vec::new(), Vec::new());
    for i in 0..3 {
        let options = RedisBusOptions::new(&server.url(), &format!("node-{i}")).expect("url").with_stream_key("faults");
        let (bus, switch) = EndableBus::new(Arc::new(RedisBus::connect(options).await.expect("connect")));
        buses.push(bus);
        switches.push(switch);
    }
    let fleet = FaultFleet::start(buses).await;
    run_scenarios("consumer forced to end", &fleet, &mut ConsumerForcedToEnd { switches, next: Ending::End }).await;
    // Four forced ends on each of three nodes: each restarted and reported as a gap.
    assert_eq!(fleet.counter("mcp_fleet_bus_consumer_restarts"), 3 * 4, "{}", fleet.counters_line());
    assert!(fleet.counter("mcp_fleet_bus_gaps") >= 3 * 4, "{}", fleet.counters_line());
    fleet.shutdown().await;
}
