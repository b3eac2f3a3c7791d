//! The requests a 2026-07-28 server answers ([`Method`]) and the four paginated lists
//! ([`ListKind`]): one place for their wire names, so dispatch, metrics labels, pagination
//! cursors and change notifications cannot disagree.

/// A request method this server answers (spec digest §8).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Method {
    /// `server/discover`.
    Discover,
    /// `tools/list`.
    ToolsList,
    /// `tools/call`.
    ToolsCall,
    /// `resources/list`.
    ResourcesList,
    /// `resources/templates/list`.
    ResourceTemplatesList,
    /// `resources/read`.
    ResourcesRead,
    /// `prompts/list`.
    PromptsList,
    /// `prompts/get`.
    PromptsGet,
    /// `completion/complete` (only when the server advertises `completions`).
    CompletionComplete,
    /// `subscriptions/listen`.
    SubscriptionsListen,
    /// `tasks/get` (the `io.modelcontextprotocol/tasks` extension, see [`crate::tasks`]).
    TasksGet,
    /// `tasks/update` (the tasks extension).
    TasksUpdate,
    /// `tasks/cancel` (the tasks extension).
    TasksCancel,
    /// `events/list` (the experimental events extension, only when the server serves it).
    EventsList,
    /// `events/poll` (the events extension).
    EventsPoll,
    /// `events/stream` (the events extension).
    EventsStream,
    /// `events/subscribe` (the events extension's webhooks).
    EventsSubscribe,
    /// `events/unsubscribe` (the events extension's webhooks).
    EventsUnsubscribe,
}

impl Method {
    /// Every method, in a fixed order.
    pub const ALL: [Method; 18] = [
        Method::Discover,
        Method::ToolsList,
        Method::ToolsCall,
        Method::ResourcesList,
        Method::ResourceTemplatesList,
        Method::ResourcesRead,
        Method::PromptsList,
        Method::PromptsGet,
        Method::CompletionComplete,
        Method::SubscriptionsListen,
        Method::TasksGet,
        Method::TasksUpdate,
        Method::TasksCancel,
        Method::EventsList,
        Method::EventsPoll,
        Method::EventsStream,
        Method::EventsSubscribe,
        Method::EventsUnsubscribe,
    ];

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Discover => "server/discover",
            Method::ToolsList => "tools/list",
            Method::ToolsCall => "tools/call",
            Method::ResourcesList => "resources/list",
            Method::ResourceTemplatesList => "resources/templates/list",
            Method::ResourcesRead => "resources/read",
            Method::PromptsList => "prompts/list",
            Method::PromptsGet => "prompts/get",
            Method::CompletionComplete => "completion/complete",
            Method::SubscriptionsListen => "subscriptions/listen",
            Method::TasksGet => "tasks/get",
            Method::TasksUpdate => "tasks/update",
            Method::TasksCancel => "tasks/cancel",
            Method::EventsList => "events/list",
            Method::EventsPoll => "events/poll",
            Method::EventsStream => "events/stream",
            Method::EventsSubscribe => "events/subscribe",
            Method::EventsUnsubscribe => "events/unsubscribe",
        }
    }

    /// The method called `name`, if this server answers it.
    ///
    /// ```
    /// use mcp_fleet_protocol::methods::{ListKind, Method};
    /// assert_eq!(Method::parse("resources/templates/list"), Some(Method::ResourceTemplatesList));
    /// assert_eq!(Method::parse("tools/list").and_then(Method::list), Some(ListKind::Tools));
    /// assert_eq!(Method::parse("initialize"), None);
    /// ```
    pub fn parse(name: &str) -> Option<Method> {
        Method::ALL.into_iter().find(|m| m.as_str() == name)
    }

    /// The list a `*/list` method pages through.
    pub fn list(self) -> Option<ListKind> {
        ListKind::ALL.into_iter().find(|l| l.method() == self)
    }
}

/// One of the four paginated lists a server publishes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ListKind {
    /// Tools.
    Tools,
    /// Static resources.
    Resources,
    /// Resource templates (their changes are announced as resource-list changes).
    ResourceTemplates,
    /// Prompts.
    Prompts,
}

impl ListKind {
    /// All four, in a fixed order (also their index order, see [`ListKind::index`]).
    pub const ALL: [ListKind; 4] =
        [ListKind::Tools, ListKind::Resources, ListKind::ResourceTemplates, ListKind::Prompts];

    /// The lists with a `list_changed` notification of their own (templates share the
    /// resources', see [`ListKind::announced_as`]).
    pub const ANNOUNCED: [ListKind; 3] = [ListKind::Tools, ListKind::Prompts, ListKind::Resources];

    /// The method that pages through it.
    pub fn method(self) -> Method {
        match self {
            ListKind::Tools => Method::ToolsList,
            ListKind::Resources => Method::ResourcesList,
            ListKind::ResourceTemplates => Method::ResourceTemplatesList,
            ListKind::Prompts => Method::PromptsList,
        }
    }

    /// The result member holding a page (`tools`, `resources`, `resourceTemplates`, `prompts`),
    /// also the list's name in cursors.
    pub fn result_key(self) -> &'static str {
        match self {
            ListKind::Tools => "tools",
            ListKind::Resources => "resources",
            ListKind::ResourceTemplates => "resourceTemplates",
            ListKind::Prompts => "prompts",
        }
    }

    /// The notification announcing a change of this list (templates share the resources').
    pub fn list_changed(self) -> &'static str {
        match self {
            ListKind::Tools => "notifications/tools/list_changed",
            ListKind::Resources | ListKind::ResourceTemplates => "notifications/resources/list_changed",
            ListKind::Prompts => "notifications/prompts/list_changed",
        }
    }

    /// The list whose `list_changed` notification announces this one's changes (templates →
    /// resources).
    pub fn announced_as(self) -> ListKind {
        match self {
            ListKind::ResourceTemplates => ListKind::Resources,
            other => other,
        }
    }

    /// Position in [`ListKind::ALL`], for arrays indexed by list.
    pub fn index(self) -> usize {
        self as usize
    }
}

/// The notification telling a subscriber that one resource's contents changed.
pub const RESOURCE_UPDATED: &str = "notifications/resources/updated";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_lists_know_their_methods() {
        for method in Method::ALL {
            assert_eq!(Method::parse(method.as_str()), Some(method));
        }
        for list in ListKind::ALL {
            assert_eq!(list.method().list(), Some(list));
            assert_eq!(ListKind::ALL[list.index()], list);
        }
        assert_eq!(Method::ToolsCall.list(), None);
        assert_eq!(ListKind::ResourceTemplates.list_changed(), ListKind::Resources.list_changed());
    }
}
