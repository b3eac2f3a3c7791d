//! The label sets of the metrics' families, and [`ListenRefusal`], the one spelling of each
//! reason a listen request is refused for. The series themselves live in `node.rs` and the
//! groups beside it; this file only names them.

use prometheus_client::encoding::EncodeLabelSet;

/// Why a listen request was refused: the router's (`deaf`, `node_limit`), the auth gate's
/// (`principal_limit`) and the byte and address budgets' (`listen/budget.rs`). The one
/// spelling of each reason, at the refusal sites and in `listen_streams_refused{reason}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ListenRefusal {
    /// The node does not hear the bus.
    Deaf,
    /// The node's `max_streams`.
    NodeLimit,
    /// The principal's `max_streams_per_principal`.
    PrincipalLimit,
    /// A subscribed URI longer than `max_uri_bytes`.
    UriTooLong,
    /// A followed task id that is not one this server could have minted.
    BadTaskId,
    /// A subscribed URI naming nothing (`listen_uris_must_exist`).
    UnknownUri,
    /// The stream's `max_subscription_bytes_per_stream`.
    StreamBytes,
    /// The principal's `max_subscription_bytes_per_principal`.
    PrincipalBytes,
    /// An anonymous address's `max_streams_per_address`.
    AddressLimit,
}

impl ListenRefusal {
    /// Every reason, for the series known in advance.
    pub(super) const ALL: [ListenRefusal; 9] = [
        ListenRefusal::Deaf,
        ListenRefusal::NodeLimit,
        ListenRefusal::PrincipalLimit,
        ListenRefusal::UriTooLong,
        ListenRefusal::BadTaskId,
        ListenRefusal::UnknownUri,
        ListenRefusal::StreamBytes,
        ListenRefusal::PrincipalBytes,
        ListenRefusal::AddressLimit,
    ];

    /// The `reason` label.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            ListenRefusal::Deaf => "deaf",
            ListenRefusal::NodeLimit => "node_limit",
            ListenRefusal::PrincipalLimit => "principal_limit",
            ListenRefusal::UriTooLong => "uri_too_long",
            ListenRefusal::BadTaskId => "bad_task_id",
            ListenRefusal::UnknownUri => "unknown_uri",
            ListenRefusal::StreamBytes => "stream_bytes",
            ListenRefusal::PrincipalBytes => "principal_bytes",
            ListenRefusal::AddressLimit => "address_limit",
        }
    }
}

/// Label of [`Metrics::listen_refused`](super::Metrics::listen_refused).
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub(crate) struct ReasonLabel {
    pub(crate) reason: &'static str,
}

/// Labels of [`Metrics::request_duration`](super::Metrics::request_duration).
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub(crate) struct MethodLabel {
    /// The JSON-RPC method (as in [`RequestLabels::method`]).
    pub(crate) method: &'static str,
}

/// Labels of [`Metrics::requests`](super::Metrics::requests).
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub(crate) struct RequestLabels {
    /// The JSON-RPC method (`other` for unknown ones, `invalid` before one could be read,
    /// `notification` for notifications).
    pub(crate) method: &'static str,
    /// The HTTP status.
    pub(crate) status: u16,
}

/// Label of the task metrics by status.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub(crate) struct StatusLabel {
    pub(crate) status: &'static str,
}

/// Label of [`Era2025Metrics::requests`](super::era2025::Era2025Metrics::requests).
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub(crate) struct VersionLabel {
    pub(crate) version: &'static str,
}

/// Labels of [`Metrics::build_info`](super::Metrics::build_info) (absent values are empty strings).
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub(crate) struct BuildLabels {
    pub(crate) version: String,
    pub(crate) commit: String,
    pub(crate) exe_sha256: String,
    pub(crate) image: String,
}
