//! [`Plan`]: what a run does, derived once from [`Args`] — which node,
//! tenant and URIs each stream gets, which lists it follows, and the deterministic sequence
//! of changes ([`Plan::change`]) drawn from the mix.
//!
//! Everything here is pure and seeded, so every loader process derives the same plan and a
//! run can be repeated exactly.

use mcp_fleet_client::ListKind;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};

use crate::args::{Args, Era};
use crate::error::LoadtestError;

/// What a change (and a verification key) is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Key {
    /// The tool list.
    Tools,
    /// The prompt list.
    Prompts,
    /// The resource list.
    Resources,
    /// One resource of the population (`loadtest://item/<n>`).
    Uri(u32),
}

impl Key {
    /// The list this key is, if it is one.
    pub fn list(self) -> Option<ListKind> {
        match self {
            Key::Tools => Some(ListKind::Tools),
            Key::Prompts => Some(ListKind::Prompts),
            Key::Resources => Some(ListKind::Resources),
            Key::Uri(_) => None,
        }
    }

    /// The key of a list notification.
    pub fn of_list(kind: ListKind) -> Key {
        match kind {
            ListKind::Tools => Key::Tools,
            ListKind::Prompts => Key::Prompts,
            ListKind::Resources | ListKind::ResourceTemplates => Key::Resources,
        }
    }
}

/// The URI of population member `n`.
pub fn uri(n: u32) -> String {
    format!("loadtest://item/{n}")
}

/// The population member a URI names, if it is one.
pub fn parse_uri(uri: &str) -> Option<u32> {
    uri.strip_prefix("loadtest://item/")?.parse().ok()
}

/// The scope name of tenant `t` (also the `x-tenant` header value).
pub fn tenant_name(t: u32) -> String {
    format!("tenant-{t}")
}

/// A kind of change in the mix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum MixKind {
    /// `tools` list changed.
    Tools,
    /// `prompts` list changed.
    Prompts,
    /// `resources` list changed.
    Resources,
    /// One `resource` updated.
    Resource,
}

impl MixKind {
    fn parse(name: &str) -> Option<MixKind> {
        Some(match name {
            "tools" => MixKind::Tools,
            "prompts" => MixKind::Prompts,
            "resources" => MixKind::Resources,
            "resource" => MixKind::Resource,
            _ => return None,
        })
    }

    /// The name used on the command line and by the admin endpoint.
    pub fn as_str(self) -> &'static str {
        match self {
            MixKind::Tools => "tools",
            MixKind::Prompts => "prompts",
            MixKind::Resources => "resources",
            MixKind::Resource => "resource",
        }
    }
}

/// Parse `tools=0.7,resource=0.3` into normalized weights.
///
/// ```
/// use mcp_fleet_loadtest::plan::{MixKind, parse_mix};
/// let mix = parse_mix("tools=3,resource=1").unwrap();
/// assert_eq!(mix, vec![(MixKind::Tools, 0.75), (MixKind::Resource, 0.25)]);
/// assert!(parse_mix("weather=1").is_err());
/// ```
pub fn parse_mix(text: &str) -> Result<Vec<(MixKind, f64)>, LoadtestError> {
    let bad = |why: &str| LoadtestError::Usage(format!("--mix {text:?}: {why}"));
    let mut mix: Vec<(MixKind, f64)> = Vec::new();
    for part in text.split(',').filter(|p| !p.trim().is_empty()) {
        let (name, weight) = part.split_once('=').unwrap_or((part, "1"));
        let kind = MixKind::parse(name.trim()).ok_or_else(|| bad("kinds are tools, prompts, resources, resource"))?;
        let weight: f64 = weight.trim().parse().map_err(|_| bad("weights are numbers"))?;
        if !(weight.is_finite() && weight >= 0.0) || mix.iter().any(|(k, _)| *k == kind) {
            return Err(bad("each kind once, with a weight ≥ 0"));
        }
        mix.push((kind, weight));
    }
    let total: f64 = mix.iter().map(|(_, w)| w).sum();
    if total <= 0.0 {
        return Err(bad("at least one positive weight"));
    }
    Ok(mix.into_iter().map(|(k, w)| (k, w / total)).collect())
}

/// One planned change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedChange {
    /// What changes.
    pub key: Key,
    /// The tenant it is scoped to (`None`: global).
    pub scope: Option<u32>,
}

/// One stream's share of the plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamSpec {
    /// Index into [`Plan::urls`].
    pub url: usize,
    /// Its tenant, if the run is scoped.
    pub tenant: Option<u32>,
    /// Every key it follows: the mix's lists, then its URIs.
    pub keys: Vec<Key>,
}

/// What a run does.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The clients' protocol era.
    pub era: Era,
    /// MCP endpoint URLs, streams spread round robin.
    pub urls: Vec<String>,
    /// Total streams over every loader process.
    pub streams: usize,
    /// Normalized mix weights.
    pub mix: Vec<(MixKind, f64)>,
    /// Resource URI population size.
    pub uris: u32,
    /// URIs per stream (0 when the mix has no `resource`).
    pub uris_per_stream: u32,
    /// Tenants (0: unscoped).
    pub tenants: u32,
    /// The change sequence's seed.
    pub seed: u64,
}

impl Plan {
    /// Derive the plan from the command line.
    pub fn from_args(args: &Args) -> Result<Plan, LoadtestError> {
        let mut urls = args.urls.clone();
        if urls.is_empty() {
            urls.push(format!("http://{}/mcp", args.mcp));
        }
        let mix = parse_mix(&args.mix)?;
        let has_resource = mix.iter().any(|(k, w)| *k == MixKind::Resource && *w > 0.0);
        if has_resource && args.uris == 0 {
            return Err(LoadtestError::Usage("--mix has resource but --uris is 0".into()));
        }
        let uris_per_stream = if has_resource { args.uris_per_stream.min(args.uris) } else { 0 };
        Ok(Plan {
            era: args.era,
            urls,
            streams: args.streams,
            mix,
            uris: args.uris,
            uris_per_stream,
            tenants: args.tenants,
            seed: args.seed,
        })
    }

    /// The lists every stream follows (those in the mix).
    pub fn lists(&self) -> Vec<ListKind> {
        let mut lists = Vec::new();
        for (kind, weight) in &self.mix {
            let list = match kind {
                MixKind::Tools => ListKind::Tools,
                MixKind::Prompts => ListKind::Prompts,
                MixKind::Resources => ListKind::Resources,
                MixKind::Resource => continue,
            };
            if *weight > 0.0 {
                lists.push(list);
            }
        }
        lists
    }

    /// The list keys every stream follows: the mix's lists for a listen stream (its filter);
    /// every announced list for a 2025 GET stream, which hears them all (a resumed stream's
    /// invalidation names each one).
    pub fn list_keys(&self) -> Vec<Key> {
        match self.era {
            Era::V2026 => self.lists().into_iter().map(Key::of_list).collect(),
            Era::V2025 => vec![Key::Tools, Key::Prompts, Key::Resources],
        }
    }

    /// Stream `i`'s node, tenant and keys. Node and tenant are decorrelated (tenant counts
    /// streams per node), and URIs are spread evenly over the population.
    pub fn stream(&self, i: usize) -> StreamSpec {
        let nodes = self.urls.len().max(1);
        let tenant = (self.tenants > 0).then(|| ((i / nodes) % self.tenants as usize) as u32);
        let mut keys = self.list_keys();
        let k = self.uris_per_stream as usize;
        keys.extend((0..k).map(|j| Key::Uri(((i * k + j) % self.uris.max(1) as usize) as u32)));
        StreamSpec { url: i % nodes, tenant, keys }
    }

    /// Change number `n` of the run (deterministic in the seed).
    pub fn change(&self, n: u64) -> PlannedChange {
        let mut rng = StdRng::seed_from_u64(self.seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ n);
        let mut pick: f64 = rng.random();
        let mut kind = self.mix.last().map_or(MixKind::Tools, |(k, _)| *k);
        for (k, w) in &self.mix {
            if pick < *w {
                kind = *k;
                break;
            }
            pick -= w;
        }
        let key = match kind {
            MixKind::Tools => Key::Tools,
            MixKind::Prompts => Key::Prompts,
            MixKind::Resources => Key::Resources,
            MixKind::Resource => Key::Uri(rng.random_range(0..self.uris.max(1))),
        };
        let scope = (self.tenants > 0).then(|| rng.random_range(0..self.tenants));
        PlannedChange { key, scope }
    }

    /// The streams `[start, end)` loader `index` of `count` owns.
    pub fn share(&self, index: usize, count: usize) -> std::ops::Range<usize> {
        let count = count.max(1);
        (self.streams * index / count)..(self.streams * (index + 1) / count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn plan(extra: &[&str]) -> Plan {
        let mut argv = vec!["lt", "--url", "http://a/mcp", "--url", "http://b/mcp"];
        argv.extend_from_slice(extra);
        Plan::from_args(&Args::parse_from(argv)).unwrap()
    }

    #[test]
    fn streams_spread_over_nodes_tenants_and_uris() {
        let p = plan(&["--tenants", "2", "--mix", "tools=1,resource=1", "--uris", "5", "--uris-per-stream", "2"]);
        let specs: Vec<_> = (0..4).map(|i| p.stream(i)).collect();
        assert_eq!(specs.iter().map(|s| s.url).collect::<Vec<_>>(), [0, 1, 0, 1]);
        assert_eq!(specs.iter().map(|s| s.tenant).collect::<Vec<_>>(), [Some(0), Some(0), Some(1), Some(1)]);
        assert_eq!(specs[1].keys, [Key::Tools, Key::Uri(2), Key::Uri(3)]);
    }

    #[test]
    fn the_change_sequence_is_seeded_and_follows_the_mix() {
        let p = plan(&["--mix", "tools=0.7,resource=0.3", "--uris", "10", "--tenants", "3"]);
        let a: Vec<_> = (0..1000).map(|n| p.change(n)).collect();
        assert_eq!(a, (0..1000).map(|n| p.change(n)).collect::<Vec<_>>());
        let tools = a.iter().filter(|c| c.key == Key::Tools).count();
        assert!((600..800).contains(&tools), "{tools} of 1000 should be ≈ 700");
        assert!(a.iter().all(|c| c.scope.is_some_and(|s| s < 3)));
        assert!(a.iter().all(|c| !matches!(c.key, Key::Uri(u) if u >= 10)));
    }

    #[test]
    fn the_era_is_2026_by_default_and_a_2025_stream_follows_every_list() {
        let modern = plan(&["--mix", "tools=1,resource=1", "--uris", "4"]);
        assert_eq!(modern.era, Era::V2026);
        assert_eq!(modern.stream(0).keys, [Key::Tools, Key::Uri(0)]);
        let legacy = plan(&["--era", "2025", "--mix", "tools=1,resource=1", "--uris", "4"]);
        assert_eq!(legacy.era, Era::V2025);
        assert_eq!(legacy.stream(1).keys, [Key::Tools, Key::Prompts, Key::Resources, Key::Uri(1)]);
        assert_eq!(legacy.lists(), modern.lists(), "the change sequence does not depend on the era");
        assert_eq!(
            (0..50).map(|n| legacy.change(n)).collect::<Vec<_>>(),
            (0..50).map(|n| modern.change(n)).collect::<Vec<_>>()
        );
    }

    #[test]
    fn era_parsing_and_2025_re_listing_clients() {
        assert!(Args::try_parse_from(["lt", "--era", "2024"]).is_err());
        assert_eq!(Args::parse_from(["lt", "--era", "2026"]).era, Era::V2026);
        assert_eq!(Era::V2025.as_str(), "2025");
        let relist = Args::parse_from(["lt", "--era", "2025", "--relist", "--mix", "tools=1,prompts=1"]);
        let plan = Plan::from_args(&relist).expect("--era 2025 --relist is a plan");
        assert_eq!(plan.lists(), [ListKind::Tools, ListKind::Prompts], "a 2025 client re-lists the mix's lists");
    }

    #[test]
    fn shares_cover_every_stream_once() {
        let p = plan(&["--streams", "1001"]);
        let shares: Vec<_> = (0..3).map(|i| p.share(i, 3)).collect();
        assert_eq!(shares.first().map(|r| r.start), Some(0));
        assert_eq!(shares.last().map(|r| r.end), Some(1001));
        assert!(shares.windows(2).all(|w| w[0].end == w[1].start));
        assert_eq!(parse_uri(&uri(42)), Some(42));
    }
}
