//! What the fleet simulators (`bus-sim`, `fleet-sim`) share: which tenants a simulated node
//! hosts, the capacity model's prediction of what it consumes (see `docs/capacity.md`), a
//! fixed pseudo-random draw, the comparison of measured against predicted, and waiting for
//! the fleet to go quiet.

/// How the simulated fleet is laid out, and what is published (the simulators' shared
/// command-line options).
#[derive(Debug, Clone, Copy, clap::Args)]
pub struct Layout {
    /// Simulated nodes.
    #[arg(long, default_value_t = 50)]
    pub nodes: usize,
    /// Tenants.
    #[arg(long, default_value_t = 200)]
    pub tenants: usize,
    /// Nodes hosting each tenant.
    #[arg(long, default_value_t = 3)]
    pub per_tenant: usize,
    /// Routed (tenants') events published.
    #[arg(long, default_value_t = 5_000)]
    pub events: usize,
    /// Fleet-wide events published.
    #[arg(long, default_value_t = 50)]
    pub global: usize,
    /// The bus's shards, for the model (the URL's `shards`; 1 when the bus is not split).
    #[arg(long, default_value_t = 1)]
    pub shards: usize,
    /// Whether the nodes route by interest, for the model (the URL's `routing=interest`).
    #[arg(long)]
    pub routed: bool,
}

impl Layout {
    /// The tenants node `node` hosts: tenant `t` lives on nodes `t, t+1, …` (mod the fleet).
    ///
    /// ```
    /// use mcp_fleet_loadtest::sim::Layout;
    /// let layout = Layout { nodes: 4, tenants: 8, per_tenant: 2, events: 0, global: 0, shards: 1, routed: false };
    /// assert_eq!(layout.hosted(0), [0, 3, 4, 7]);
    /// ```
    pub fn hosted(&self, node: usize) -> Vec<usize> {
        (0..self.tenants).filter(|t| (0..self.per_tenant).any(|j| (t + j) % self.nodes == node)).collect()
    }

    /// The capacity model's events consumed by a node hosting `h` tenants: every fleet-wide
    /// event, and the routed events of the shards it reads — all of them without routing;
    /// with it, shard 0 and each shard one of its tenants hashes to.
    ///
    /// ```
    /// use mcp_fleet_loadtest::sim::Layout;
    /// let mut layout = Layout { nodes: 50, tenants: 200, per_tenant: 3, events: 1000, global: 10, shards: 16, routed: false };
    /// assert_eq!(layout.predicted(12), 1010.0);
    /// layout.routed = true;
    /// assert!((layout.predicted(12) - 578.0).abs() < 1.0);
    /// ```
    pub fn predicted(&self, h: usize) -> f64 {
        let (e, g, m) = (self.events as f64, self.global as f64, self.shards as f64);
        if !self.routed || m <= 1.0 {
            return e + g;
        }
        let covered = 1.0 / m + (m - 1.0) / m * (1.0 - (1.0 - 1.0 / m).powi(h as i32));
        g + e * covered
    }

    /// The tenant of the `i`-th routed event (a fixed uniform draw, so runs compare).
    pub fn tenant_of(&self, i: usize) -> usize {
        splitmix(i) % self.tenants
    }

    /// The measured per-node consumption against the model, as printed lines.
    pub fn compare(&self, consumed: &[u64]) -> Vec<String> {
        let expected: Vec<f64> = (0..self.nodes).map(|n| self.predicted(self.hosted(n).len())).collect();
        let mut sorted = consumed.to_vec();
        sorted.sort_unstable();
        let (min, median, max) = (sorted[0], sorted[sorted.len() / 2], sorted[sorted.len() - 1]);
        let mut model = expected.clone();
        model.sort_by(f64::total_cmp);
        let (model_median, model_total) = (model[model.len() / 2], expected.iter().sum::<f64>());
        let total: u64 = consumed.iter().sum();
        let off = |measured: f64, model: f64| (measured - model) / model * 100.0;
        let published = self.events + self.global;
        vec![
            format!(
                "nodes {}  tenants {} (each on {})  shards {}  routed {}",
                self.nodes, self.tenants, self.per_tenant, self.shards, self.routed
            ),
            format!("consumed per node: min {min}  median {median}  max {max}  (of {published} published)"),
            format!("consumed in all: {total} = {:.2} × published", total as f64 / published as f64),
            format!(
                "model: median node {model_median:.0} (measured {:+.1} %), all nodes {model_total:.0} (measured {:+.1} %)",
                off(median as f64, model_median),
                off(total as f64, model_total)
            ),
        ]
    }
}

/// Wait until `total` (what the simulated fleet consumed or heard so far) stays the same
/// for `quiet`.
pub async fn settle(quiet: std::time::Duration, total: impl Fn() -> u64) {
    let mut last = total();
    loop {
        tokio::time::sleep(quiet).await;
        let now = total();
        if now == last {
            return;
        }
        last = now;
    }
}

/// A cheap, fixed pseudo-random draw (splitmix64).
pub fn splitmix(i: usize) -> usize {
    let mut z = (i as u64).wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    (z ^ (z >> 31)) as usize
}
