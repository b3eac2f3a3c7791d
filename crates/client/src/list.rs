//! [`ListKind`]: the four paginated lists of MCP 2026-07-28 and how each is named on the wire
//! (its method, its result field, the listen filter field and notification that invalidate it).

/// One paginated list a host keeps a snapshot of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ListKind {
    /// `tools/list`.
    Tools,
    /// `prompts/list`.
    Prompts,
    /// `resources/list`.
    Resources,
    /// `resources/templates/list`.
    ResourceTemplates,
}

impl ListKind {
    /// Every list, in a fixed order.
    pub const ALL: [ListKind; 4] =
        [ListKind::Tools, ListKind::Prompts, ListKind::Resources, ListKind::ResourceTemplates];

    /// The JSON-RPC method that reads one page.
    pub fn method(self) -> &'static str {
        match self {
            ListKind::Tools => "tools/list",
            ListKind::Prompts => "prompts/list",
            ListKind::Resources => "resources/list",
            ListKind::ResourceTemplates => "resources/templates/list",
        }
    }

    /// The result field holding the page's items.
    pub fn result_key(self) -> &'static str {
        match self {
            ListKind::Tools => "tools",
            ListKind::Prompts => "prompts",
            ListKind::Resources => "resources",
            ListKind::ResourceTemplates => "resourceTemplates",
        }
    }

    /// The `subscriptions/listen` filter field whose notification invalidates this list
    /// (templates have no notification of their own: `resources/list_changed` covers both).
    pub fn filter_field(self) -> &'static str {
        match self {
            ListKind::Tools => "toolsListChanged",
            ListKind::Prompts => "promptsListChanged",
            ListKind::Resources | ListKind::ResourceTemplates => "resourcesListChanged",
        }
    }

    /// The list a `notifications/*/list_changed` method names (`Resources` for the resources
    /// notification, which also invalidates [`ListKind::ResourceTemplates`]).
    pub fn from_notification(method: &str) -> Option<ListKind> {
        match method {
            "notifications/tools/list_changed" => Some(ListKind::Tools),
            "notifications/prompts/list_changed" => Some(ListKind::Prompts),
            "notifications/resources/list_changed" => Some(ListKind::Resources),
            _ => None,
        }
    }

    /// Whether a `list_changed` notification for `notified` invalidates this list.
    pub fn is_invalidated_by(self, notified: ListKind) -> bool {
        self == notified || (self == ListKind::ResourceTemplates && notified == ListKind::Resources)
    }

    /// Short name: `tools`, `prompts`, `resources`, `templates`.
    pub fn as_str(self) -> &'static str {
        match self {
            ListKind::Tools => "tools",
            ListKind::Prompts => "prompts",
            ListKind::Resources => "resources",
            ListKind::ResourceTemplates => "templates",
        }
    }

    /// Parse a short name (see [`ListKind::as_str`]).
    pub fn parse(name: &str) -> Option<ListKind> {
        ListKind::ALL.into_iter().find(|k| k.as_str() == name)
    }
}

#[cfg(test)]
mod tests {
    use super::ListKind;

    #[test]
    fn resources_list_changed_invalidates_resources_and_templates_only() {
        let notified = ListKind::from_notification("notifications/resources/list_changed").unwrap();
        let hit: Vec<_> = ListKind::ALL.into_iter().filter(|k| k.is_invalidated_by(notified)).collect();
        assert_eq!(hit, [ListKind::Resources, ListKind::ResourceTemplates]);
        assert_eq!(ListKind::from_notification("notifications/resources/updated"), None);
        for k in ListKind::ALL {
            assert_eq!(ListKind::parse(k.as_str()), Some(k));
        }
    }
}
