//! [`TaskSupport`]: whether a tool's calls may become tasks (the tasks extension), kept with
//! the tool's catalog entry. The tasks module reads it; the catalog names nothing of tasks.

/// Whether a tool's calls may become tasks (the tasks extension). Set with
/// [`EntryHandle::task_support`](crate::catalog::EntryHandle::task_support) or
/// [`CatalogEdit::set_task_support`](crate::catalog::CatalogEdit::set_task_support).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TaskSupport {
    /// Never: every call answers synchronously. The default.
    #[default]
    Forbidden,
    /// For clients that declared the extension on the request, the call becomes a task when
    /// it has not finished after [`TaskOptions::create_after`](crate::tasks::TaskOptions::create_after), or when its handler asks to
    /// ([`CallContext::run_as_task`](crate::CallContext::run_as_task)); other clients get the
    /// synchronous answer.
    Optional,
    /// As `Optional` for clients that declared the extension; others get 400 `-32021` naming
    /// the extension before the handler runs (the tool cannot serve them without a task).
    Required,
}
