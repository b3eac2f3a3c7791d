//! The series read at scrape time rather than counted: which catalog revisions this node
//! serves, and the bus backend's own counters and connection state. Built per scrape from
//! what the handler hands [`Metrics::encode`](super::Metrics::encode).

use std::sync::Arc;
use std::sync::atomic::Ordering;

use mcp_fleet_bus::BusCounters;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::{ConstGauge, Gauge};

/// The revision this node serves of each list (`(list, revision)`, four of them), by scope:
/// what the fleet's registry of catalogs reads at scrape time, handed in as plain labels.
pub(crate) type ServedRevisions = std::collections::BTreeMap<String, [(&'static str, String); 4]>;

/// `mcp_fleet_catalog_revision_info{scope, list, revision} 1`: which revision of each list
/// this node serves, so an operator sees which replica serves what.
#[derive(Debug)]
pub(super) struct RevisionCollector(pub(super) ServedRevisions);

impl Collector for RevisionCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let family = Family::<[(&'static str, String); 3], Gauge>::default();
        for (scope, lists) in &self.0 {
            for (list, revision) in lists {
                let labels = [("scope", scope.clone()), ("list", (*list).to_owned()), ("revision", revision.clone())];
                family.get_or_create(&labels).set(1);
            }
        }
        let help = "The content revision of each catalog list this node serves (value 1)";
        family.encode(encoder.encode_descriptor("catalog_revision_info", help, None, family.metric_type())?)
    }
}

#[derive(Debug)]
pub(super) struct BusCollector {
    pub(super) counters: Arc<BusCounters>,
    pub(super) connected: bool,
}

impl Collector for BusCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let c = &self.counters;
        for (name, help, value) in [
            ("bus_published", "Events published through this node", &c.published),
            ("bus_received", "Events received from the broker", &c.received),
            ("bus_undecodable", "Broker payloads that could not be decoded", &c.undecodable),
            ("bus_backend_gaps", "Gaps reported by the backend", &c.gaps),
            ("bus_reconnects", "Reconnections to the broker", &c.reconnects),
            (
                "bus_backend_consumer_restarts",
                "Backend consumers re-created after a stall or failure",
                &c.consumer_restarts,
            ),
        ] {
            let counter = ConstCounter::new(value.load(Ordering::Relaxed));
            counter.encode(encoder.encode_descriptor(name, help, None, counter.metric_type())?)?;
        }
        let up = ConstGauge::new(i64::from(self.connected));
        up.encode(encoder.encode_descriptor(
            "bus_connected",
            "1 when this node's bus consumer is running and connected",
            None,
            up.metric_type(),
        )?)
    }
}
