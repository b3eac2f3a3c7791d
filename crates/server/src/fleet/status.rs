//! [`FleetStatus`]: the fleet as this node sees it — members with their catalog revisions, and
//! for each list whether the fleet serves one revision — for an operator (`GET /admin/fleet`).

use serde::Serialize;

use super::record::CatalogRevisions;

/// The fleet as this node sees it ([`McpHandler::fleet`](crate::McpHandler::fleet)).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FleetStatus {
    /// This node's id.
    pub node_id: String,
    /// The live members, this node included.
    pub members: Vec<FleetMember>,
    /// One entry per (scope, announced list) this node serves.
    pub lists: Vec<ListConvergence>,
}

/// One live member.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FleetMember {
    /// Its node id.
    pub node_id: String,
    /// Scope (`""` for the global catalog) → its lists' revisions.
    pub catalogs: std::collections::BTreeMap<String, CatalogRevisions>,
    /// Its open listen streams, as it last announced.
    pub open_streams: usize,
    /// Milliseconds since its last announcement reached the bus (as read at the last poll).
    pub last_seen_ms_ago: u64,
    /// Milliseconds until its announcement expires (it heartbeats well before).
    pub expires_in_ms: u64,
    /// Whether it is this node.
    pub is_self: bool,
}

/// Whether the fleet serves one revision of a list.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ListConvergence {
    /// The catalog's scope (`""`: global).
    pub scope: String,
    /// `tools`, `prompts` or `resources` (which covers resource templates).
    pub list: &'static str,
    /// This node's revision (hex).
    pub revision: String,
    /// Every member that knows this catalog serves the same revision.
    pub converged: bool,
    /// How long the members have disagreed, in seconds.
    pub split_for_secs: Option<f64>,
    /// Members whose revision differs from this node's.
    pub differing: Vec<String>,
}
