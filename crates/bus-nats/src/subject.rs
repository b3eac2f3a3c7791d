//! Subjects: every event goes to `<prefix>.<scope token>.<kind>`, so a broker can filter by
//! scope or kind. The envelope carries the real scope; the subject only needs to be a valid,
//! stable, collision-free token for it.

use mcp_fleet_bus::Change;
use mcp_fleet_protocol::cursor::content_revision;

/// The scope token of global events. It starts with `_`, which no plain scope token does.
pub const GLOBAL_SCOPE_TOKEN: &str = "_global";

/// Longest scope used verbatim as a token; longer ones are hashed.
const MAX_PLAIN_TOKEN: usize = 64;

/// The subject of `change` under `prefix`.
pub fn subject_for(prefix: &str, change: &Change) -> String {
    let scope = change.scope.as_deref().map_or_else(|| GLOBAL_SCOPE_TOKEN.to_owned(), scope_token);
    format!("{prefix}.{scope}.{}", change.kind.as_str())
}

/// A scope as one subject token: verbatim when it is short, starts with an ASCII letter or
/// digit and holds only those, `-` and `_`; otherwise `~` and its 64-bit FNV-1a hash in hex
/// (stable across nodes and versions, and `~` cannot start a verbatim token).
pub fn scope_token(scope: &str) -> String {
    let plain = scope.len() <= MAX_PLAIN_TOKEN
        && scope.starts_with(|c: char| c.is_ascii_alphanumeric())
        && scope.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if plain { scope.to_owned() } else { format!("~{:016x}", content_revision(scope.as_bytes())) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_fleet_bus::EventKind;

    #[test]
    fn global_and_plain_scopes() {
        let change = Change::list(EventKind::ToolsListChanged);
        assert_eq!(subject_for("p.q", &change), "p.q._global.tools");
        assert_eq!(subject_for("p", &change.in_scope("tenant-1")), "p.tenant-1.tools");
    }

    #[test]
    fn unsafe_scopes_are_hashed_stably() {
        for scope in ["a.b", "a b", "*", ">", "_global", "", "ünï", &"x".repeat(65)] {
            let token = scope_token(scope);
            assert!(token.starts_with('~') && token.len() == 17, "{scope:?} -> {token}");
        }
        assert_eq!(scope_token("a.b"), scope_token("a.b"));
        assert_ne!(scope_token("a.b"), scope_token("a b"));
        assert_eq!(scope_token("a.b"), format!("~{:016x}", content_revision(b"a.b")));
    }
}
