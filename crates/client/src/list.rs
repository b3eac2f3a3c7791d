//! The four paginated lists are the protocol crate's [`ListKind`] (one spelling of their wire
//! names for server and client alike); this module adds only what a host needs on top: the
//! short names a command line uses, and which list a `list_changed` notification invalidates.
//!
//! Which lists a listen filter follows is [`listen`](crate::listen)'s.

pub use mcp_fleet_protocol::ListKind;

/// Short name: `tools`, `prompts`, `resources`, `templates`.
///
/// ```
/// use mcp_fleet_client::{ListKind, list};
/// assert_eq!(list::short_name(ListKind::ResourceTemplates), "templates");
/// assert_eq!(list::parse_short_name("prompts"), Some(ListKind::Prompts));
/// ```
pub fn short_name(kind: ListKind) -> &'static str {
    match kind {
        ListKind::Tools => "tools",
        ListKind::Prompts => "prompts",
        ListKind::Resources => "resources",
        ListKind::ResourceTemplates => "templates",
    }
}

/// The list a short name (see [`short_name`]) names.
pub fn parse_short_name(name: &str) -> Option<ListKind> {
    ListKind::ALL.into_iter().find(|k| short_name(*k) == name)
}

/// The list a `notifications/*/list_changed` method announces (`Resources` for the resources
/// notification, which also invalidates [`ListKind::ResourceTemplates`]).
pub fn notified_list(method: &str) -> Option<ListKind> {
    ListKind::ANNOUNCED.into_iter().find(|k| k.list_changed() == method)
}

/// Whether a `list_changed` announcing `notified` invalidates `kind`.
pub fn is_invalidated_by(kind: ListKind, notified: ListKind) -> bool {
    kind.announced_as() == notified
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resources_list_changed_invalidates_resources_and_templates_only() {
        let notified = notified_list("notifications/resources/list_changed");
        assert_eq!(notified, Some(ListKind::Resources));
        let hit: Vec<_> =
            ListKind::ALL.into_iter().filter(|k| notified.is_some_and(|n| is_invalidated_by(*k, n))).collect();
        assert_eq!(hit, [ListKind::Resources, ListKind::ResourceTemplates]);
        assert_eq!(notified_list("notifications/resources/updated"), None);
        for k in ListKind::ALL {
            assert_eq!(parse_short_name(short_name(k)), Some(k));
        }
    }
}
