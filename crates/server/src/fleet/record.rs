//! What a node announces to the fleet ([`MemberRecord`], the membership payload): per catalog
//! scope, the content revision of each list, plus its open streams and its execution identity. Versioned JSON, read
//! leniently (unknown fields ignored) so replicas of different versions understand each other.

use std::collections::BTreeMap;

use mcp_fleet_bus::EventKind;
use mcp_fleet_protocol::ListKind;
use mcp_fleet_protocol::cursor::revision_hex;
use serde::{Deserialize, Serialize};

use super::convergence::Revision;
use crate::identity::ExecutionIdentity;

/// The key of the global (unscoped) catalog in [`MemberRecord::catalogs`].
pub(crate) const GLOBAL_SCOPE: &str = "";

/// The revisions of one catalog, one per list, as hex strings.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CatalogRevisions {
    /// `tools/list`.
    pub tools: String,
    /// `prompts/list`.
    pub prompts: String,
    /// `resources/list`.
    pub resources: String,
    /// `resources/templates/list`.
    #[serde(rename = "resourceTemplates")]
    pub resource_templates: String,
}

impl CatalogRevisions {
    /// The revisions of `lists`, indexed like [`ListKind::ALL`].
    pub(crate) fn of(lists: [Revision; 4]) -> Self {
        let hex = |kind: ListKind| revision_hex(lists[kind.index()]);
        CatalogRevisions {
            tools: hex(ListKind::Tools),
            prompts: hex(ListKind::Prompts),
            resources: hex(ListKind::Resources),
            resource_templates: hex(ListKind::ResourceTemplates),
        }
    }

    /// The four revisions as `(list, revision)` labels, for the metrics.
    pub(crate) fn labelled(&self) -> [(&'static str, String); 4] {
        [
            ("tools", self.tools.clone()),
            ("prompts", self.prompts.clone()),
            ("resources", self.resources.clone()),
            ("resourceTemplates", self.resource_templates.clone()),
        ]
    }

    /// The revision a change notification of `list` announces: its own, except resources,
    /// whose notification covers templates too (both revisions, combined).
    pub(crate) fn announced(&self, list: ListKind) -> Option<Revision> {
        let parse = |hex: &str| u64::from_str_radix(hex, 16).ok();
        match list {
            ListKind::Tools => parse(&self.tools),
            ListKind::Prompts => parse(&self.prompts),
            ListKind::Resources | ListKind::ResourceTemplates => {
                let (r, t) = (parse(&self.resources)?, parse(&self.resource_templates)?);
                Some(r.rotate_left(1) ^ t)
            }
        }
    }
}

/// One node's membership payload.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct MemberRecord {
    /// Format of this record.
    #[serde(default)]
    pub(crate) v: u32,
    /// Scope (`""` for the global catalog) → its revisions.
    #[serde(default)]
    pub(crate) catalogs: BTreeMap<String, CatalogRevisions>,
    /// Open listen streams on the node.
    #[serde(default)]
    pub(crate) streams: usize,
    /// Which code the node runs (absent in records of older versions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) identity: Option<ExecutionIdentity>,
}

impl MemberRecord {
    /// Current format.
    pub(crate) const FORMAT: u32 = 1;

    /// Parse a payload; `None` if it is not a record (another version's, or garbage).
    pub(crate) fn parse(payload: &str) -> Option<MemberRecord> {
        serde_json::from_str(payload).ok()
    }

    /// The payload to announce.
    pub(crate) fn encode(&self) -> String {
        // Strings, numbers and maps with string keys: serializing cannot fail.
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// The bus event announcing a change of `list` (templates are announced as resource lists).
pub(crate) fn list_event(list: ListKind) -> EventKind {
    match list.announced_as() {
        ListKind::Tools => EventKind::ToolsListChanged,
        ListKind::Prompts => EventKind::PromptsListChanged,
        ListKind::Resources | ListKind::ResourceTemplates => EventKind::ResourcesListChanged,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_and_unknown_fields_are_ignored() {
        let identity = Some(ExecutionIdentity::minted("1.2.3"));
        let mut record = MemberRecord { v: MemberRecord::FORMAT, streams: 3, identity, ..Default::default() };
        record.catalogs.insert(GLOBAL_SCOPE.into(), CatalogRevisions::of([1, 2, 3, 4]));
        assert_eq!(MemberRecord::parse(&record.encode()), Some(record.clone()));
        let newer = r#"{"v":2,"catalogs":{"":{"tools":"01","prompts":"02","resources":"03","resourceTemplates":"04","x":1}},"future":[]}"#;
        assert_eq!(MemberRecord::parse(newer).unwrap().catalogs[""].tools, "01");
        assert_eq!(MemberRecord::parse("not json"), None);
    }

    #[test]
    fn the_resources_notification_covers_templates_too() {
        let a = CatalogRevisions::of([1, 2, 3, 4]);
        let b = CatalogRevisions::of([1, 2, 9, 4]);
        assert_ne!(a.announced(ListKind::Resources), b.announced(ListKind::Resources));
        assert_eq!(a.announced(ListKind::Tools), b.announced(ListKind::Tools));
    }
}
