//! [`FleetStatus`]: the fleet as this node sees it — members with their catalog revisions, and
//! for each list whether the fleet serves one revision — for an operator (`GET /admin/fleet`).

use serde::Serialize;

use super::record::CatalogRevisions;
use crate::identity::ExecutionIdentity;

/// The fleet as this node sees it ([`McpHandler::fleet`](crate::McpHandler::fleet)).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FleetStatus {
    /// This node's id.
    pub node_id: String,
    /// Which code this node runs.
    pub identity: ExecutionIdentity,
    /// The live members, this node included.
    pub members: Vec<FleetMember>,
    /// The builds the live members run, with how many run each (a rolling deploy shows two).
    pub builds: Vec<BuildCount>,
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
    /// Which code it runs (`None` for a member of a version that does not announce it).
    pub identity: Option<ExecutionIdentity>,
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

/// One build the fleet runs: members with the same executable digest, version, commit and
/// image.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BuildCount {
    /// SHA-256 of the executable (`None`: unknown, or a member that does not announce it).
    pub exe_sha256: Option<String>,
    /// Its version.
    pub version: Option<String>,
    /// Its commit, when known.
    pub commit: Option<String>,
    /// Its image, when known.
    pub image: Option<String>,
    /// Live members running it.
    pub members: usize,
}

impl BuildCount {
    /// The builds `members` run, most common first.
    pub(crate) fn of(members: &[FleetMember]) -> Vec<BuildCount> {
        let mut counts = std::collections::BTreeMap::<_, usize>::new();
        for member in members {
            let id = member.identity.as_ref();
            let key = (
                id.and_then(|i| i.exe_sha256.clone()),
                id.map(|i| i.version.clone()),
                id.and_then(|i| i.commit.clone()),
                id.and_then(|i| i.image.clone()),
            );
            *counts.entry(key).or_default() += 1;
        }
        let mut builds: Vec<BuildCount> = counts
            .into_iter()
            .map(|((exe_sha256, version, commit, image), members)| BuildCount {
                exe_sha256,
                version,
                commit,
                image,
                members,
            })
            .collect();
        builds.sort_by(|a, b| b.members.cmp(&a.members).then_with(|| a.cmp(b)));
        builds
    }
}
