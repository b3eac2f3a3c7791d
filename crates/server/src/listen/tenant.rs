//! What the streams of a scoped principal see of an event's place: never the bus's position.
//!
//! The fleet event metadata names each event's bus-wide position (`epoch`, `version`, and
//! `lastVersion` after a gap), a counter every tenant's events advance: a tenant reading it
//! could count other tenants' changes. Streams of a principal with a scope therefore get a
//! second rendering of each event's metadata, [`tenant_meta`], which keeps only the members
//! below — an allow-list, so a member the metadata gains later stays out of tenants' streams
//! until it is judged safe here. Listen streams number their frames instead
//! ([`NotificationFrame::write_numbered`](mcp_fleet_protocol::sse::NotificationFrame::write_numbered)),
//! and 2025-era GET streams seal their SSE ids (see `crate::era2025`). Unscoped streams keep the
//! whole metadata. Each rendering is built at most once per event, not per stream
//! ([`Renderings`]).

use std::cell::OnceCell;

use serde_json::{Map, Value};

/// The members of the fleet event metadata a tenant may read: the gap marker (and a resume's),
/// a local announcement's marker, the catalog's revision hash and convergence (one global
/// catalog, the same for everyone), and the publish time of an event it receives anyway.
const TENANT_SAFE: [&str; 6] = ["gap", "resumed", "local", "revision", "converged", "publishedAtMs"];

/// The metadata `fleet` as the streams of a scoped principal get it: without the bus's
/// position (`{"publishedAtMs": T}`, or `{"gap": true}` after a gap).
pub(crate) fn tenant_meta(fleet: &Value) -> Value {
    let Some(members) = fleet.as_object() else { return Value::Object(Map::new()) };
    let kept = members.iter().filter(|(k, _)| TENANT_SAFE.contains(&k.as_str()));
    Value::Object(kept.map(|(k, v)| (k.clone(), v.clone())).collect())
}

/// One event's frame in its two renderings — the fleet's for unscoped streams, the tenant's
/// for scoped ones — each built the first time a stream needs it, then shared.
pub(crate) struct Renderings<'a, T> {
    fleet: &'a Value,
    /// By `usize::from(scoped)`.
    built: [OnceCell<T>; 2],
}

impl<'a, T: Clone> Renderings<'a, T> {
    /// The renderings of the event whose fleet metadata is `fleet`.
    pub(crate) fn new(fleet: &'a Value) -> Self {
        Renderings { fleet, built: Default::default() }
    }

    /// The frame for a stream of a scoped principal (`scoped`) or an unscoped one: `build`
    /// applied to that rendering's metadata, the first time it is asked for.
    pub(crate) fn get(&self, scoped: bool, build: impl FnOnce(&Value) -> T) -> T {
        let cell = &self.built[usize::from(scoped)];
        cell.get_or_init(|| if scoped { build(&tenant_meta(self.fleet)) } else { build(self.fleet) }).clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_tenant_never_sees_the_bus_position() {
        let bus = json!({"epoch": 3, "version": 41, "publishedAtMs": 7});
        assert_eq!(tenant_meta(&bus), json!({"publishedAtMs": 7}));
        assert_eq!(tenant_meta(&json!({"gap": true, "epoch": 3, "lastVersion": 41})), json!({"gap": true}));
        assert_eq!(tenant_meta(&json!({"gap": true})), json!({"gap": true}));
        let catalog = json!({"revision": "9f2c", "converged": false, "publishedAtMs": 7});
        assert_eq!(tenant_meta(&catalog), catalog, "the one global catalog's revision is everyone's");
        assert_eq!(
            tenant_meta(&json!({"local": true, "publishedAtMs": 7})),
            json!({"local": true, "publishedAtMs": 7})
        );
        assert_eq!(tenant_meta(&json!({"someday": 1})), json!({}), "unknown members stay out");
    }

    #[test]
    fn each_rendering_is_built_once() {
        let bus = json!({"epoch": 3, "version": 41, "publishedAtMs": 7});
        let renderings = Renderings::new(&bus);
        let builds = std::cell::Cell::new(0);
        let build = |m: &Value| {
            builds.set(builds.get() + 1);
            m.to_string()
        };
        for _ in 0..3 {
            assert_eq!(renderings.get(true, build), r#"{"publishedAtMs":7}"#);
            assert_eq!(renderings.get(false, build), bus.to_string());
        }
        assert_eq!(builds.get(), 2);
    }
}
