//! [`Args`]: the command line (only the admin token may also come from the environment,
//! `MCP_FLEET_ADMIN_TOKEN`, so it stays out of process listings).
//!
//! Parsing only: what the flags mean for a run is [`Plan`](crate::plan::Plan)'s job.

use clap::Parser;

/// What to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Mode {
    /// Measure mcp-fleet nodes (the default).
    Fanout,
    /// The machine's limit, writer side: `--mcp` is the address to listen on.
    LimitWriter,
    /// The machine's limit, reader side: `--mcp` is the writer's address.
    LimitReader,
}

/// Which protocol era the simulated clients speak.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Era {
    /// 2025-11-25: `initialize` (a session), `notifications/initialized`, then the session's
    /// `GET` stream; `resources/subscribe` per URI.
    #[value(name = "2025")]
    V2025,
    /// 2026-07-28: one `subscriptions/listen` POST per client (the default).
    #[default]
    #[value(name = "2026")]
    V2026,
}

impl Era {
    /// `"2025"` or `"2026"`, as on the command line and in the report.
    pub fn as_str(self) -> &'static str {
        match self {
            Era::V2025 => "2025",
            Era::V2026 => "2026",
        }
    }
}

/// Commands that need no nodes.
#[derive(Debug, Clone, clap::Subcommand)]
pub enum Command {
    /// Render saved `--json` reports as one HTML page, side by side (before/after).
    Report(ReportArgs),
}

/// `mcp-fleet-loadtest report A.json [B.json …] --html PATH`.
#[derive(Debug, Clone, clap::Args)]
pub struct ReportArgs {
    /// `--json` reports (schema `mcp-fleet-loadtest/1`); each is labelled by its file name.
    #[arg(required = true)]
    pub files: Vec<std::path::PathBuf>,
    /// Where to write the page.
    #[arg(long, required = true)]
    pub html: std::path::PathBuf,
}

/// Fan-out load test of mcp-fleet nodes: many listen streams (optionally real re-listing
/// clients), timed change events, verification, exact merged latency histograms.
#[derive(Debug, Clone, Parser)]
#[command(name = "mcp-fleet-loadtest", version, args_override_self = true, args_conflicts_with_subcommands = true)]
pub struct Args {
    /// Instead of a run: render saved `--json` reports.
    #[command(subcommand)]
    pub command: Option<Command>,

    /// What to run.
    #[arg(long, value_enum, default_value = "fanout")]
    pub mode: Mode,

    // --- targets ---
    /// MCP endpoint URL (`http://host:port/mcp`); repeat it to spread streams round robin
    /// over nodes, or give one load-balancer URL.
    #[arg(long = "url")]
    pub urls: Vec<String>,
    /// host:port of the MCP endpoint (served at /mcp), when no `--url` is given; also the
    /// address of the limit writer/reader.
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub mcp: String,
    /// host:port of a node's admin endpoint (POST /admin/notify); repeat to publish round
    /// robin. Default 127.0.0.1:9090 unless `--bus` is given.
    #[arg(long = "admin")]
    pub admins: Vec<String>,
    /// Bearer token for `POST /admin/*` (nodes started with `--admin-token`).
    #[arg(long, env = "MCP_FLEET_ADMIN_TOKEN", hide_env_values = true)]
    pub admin_token: Option<String>,
    /// Publish straight onto the bus, as a reloader on another pod would
    /// (`redis://…?stream=KEY`, `nats://…`), instead of through `--admin`.
    #[arg(long)]
    pub bus: Option<String>,
    /// host:port whose `/metrics` to scrape before and after the event phase; repeatable.
    /// Default: every `--admin` address.
    #[arg(long = "metrics")]
    pub metrics: Vec<String>,
    /// A node's pid, to report its CPU per delivery and RSS per stream (Linux `/proc`; the
    /// node must run on this machine); repeatable.
    #[arg(long = "server-pid")]
    pub server_pids: Vec<u32>,

    // --- streams ---
    /// The protocol era of the simulated clients: `2026` opens `subscriptions/listen`
    /// streams, `2025` initializes a session per client and opens its GET stream (with
    /// `--relist`, the same re-listing client as 2026, in that session).
    #[arg(long, value_enum, default_value = "2026")]
    pub era: Era,
    /// Listen streams to open (one simulated client each).
    #[arg(long, default_value_t = 1000)]
    pub streams: usize,
    /// Multiplex this many listen streams (and their re-lists) on each h2c connection; 0 =
    /// HTTP/1.1, one connection per listen stream.
    #[arg(long, default_value_t = 0)]
    pub h2_streams_per_conn: usize,
    /// Listen streams being opened at once.
    #[arg(long, default_value_t = 256)]
    pub open_concurrency: usize,
    /// A listen stream with no bytes (not even a keep-alive) for this many seconds is
    /// reopened; 0 = never (for nodes run without keep-alives). Default: three of the
    /// nodes' default 15 s keep-alives.
    #[arg(long, default_value_t = 45)]
    pub idle_timeout_secs: u64,
    /// How long opening every stream (and its first snapshot with `--relist`) may take.
    #[arg(long, default_value_t = 120)]
    pub open_timeout_secs: u64,

    // --- load shape ---
    /// Change events to publish, one every `--interval-ms` (the default shape).
    #[arg(long, default_value_t = 20)]
    pub events: usize,
    /// Pause between events, in milliseconds.
    #[arg(long, default_value_t = 200)]
    pub interval_ms: u64,
    /// Steady load: publish this many events per second for `--duration` seconds.
    #[arg(long, requires = "duration")]
    pub rate: Option<f64>,
    /// Length of the steady load, in seconds.
    #[arg(long, requires = "rate")]
    pub duration: Option<f64>,
    /// A burst: this many events published back to back, `--publish-concurrency` at a time.
    #[arg(long, conflicts_with = "rate")]
    pub burst: Option<usize>,
    /// Publishes in flight at once (rate and burst shapes).
    #[arg(long, default_value_t = 16)]
    pub publish_concurrency: usize,
    /// Change kinds and their weights, e.g. `tools=0.7,resource=0.3` (kinds: tools,
    /// prompts, resources, resource).
    #[arg(long, default_value = "tools=1")]
    pub mix: String,
    /// Resource URIs in the population (`loadtest://item/<n>`).
    #[arg(long, default_value_t = 100)]
    pub uris: u32,
    /// Resource URIs each stream subscribes to (when the mix has `resource`).
    #[arg(long, default_value_t = 1)]
    pub uris_per_stream: u32,
    /// Spread streams over this many tenants (header `x-tenant: tenant-<i>`) and publish
    /// each change scoped to one of them. The target must map that header to the principal's
    /// scope. 0 = unscoped.
    #[arg(long, default_value_t = 0)]
    pub tenants: u32,
    /// Seed of the change sequence (kinds, URIs, tenants), for repeatable runs.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,

    // --- clients ---
    /// Real clients: re-list the whole list (every page) on each list_changed, single-flight
    /// per list with one dirty re-run, and report time to convergence. Both eras: with
    /// `--era 2025` the lists are read in each client's session.
    #[arg(long)]
    pub relist: bool,
    /// Re-list requests in flight at once per loader process (bounds file descriptors on
    /// HTTP/1.1).
    #[arg(long, default_value_t = 256)]
    pub relist_concurrency: usize,

    // --- verification and output ---
    /// Verify per stream and key that no accepted change was lost (epoch-aware); exit 1 on
    /// any loss.
    #[arg(long)]
    pub verify: bool,
    /// After the last publish, wait up to this long for every stream to be covered (and
    /// every client converged) before measuring.
    #[arg(long, default_value_t = 5000)]
    pub settle_ms: u64,
    /// Write the full result as JSON here (schema: loadtest/README.md).
    #[arg(long)]
    pub json: Option<std::path::PathBuf>,
    /// Write the result as one self-contained HTML page here (charts inline, no network).
    #[arg(long)]
    pub html: Option<std::path::PathBuf>,
    /// Fork this many loader processes (re-exec of this binary), each under the file limit,
    /// and merge their histograms exactly. 0 = load from this process.
    #[arg(long, default_value_t = 0)]
    pub workers: usize,
    /// No live progress line.
    #[arg(long)]
    pub quiet: bool,

    // --- limit modes ---
    /// Frame size for the limit writer, in bytes (the node's frames are ≈ 300).
    #[arg(long, default_value_t = 300)]
    pub frame_bytes: usize,

    // --- internal: worker processes ---
    /// This process is loader `worker_index` of `worker_count` (set by the parent).
    #[arg(long, hide = true)]
    pub worker_index: Option<usize>,
    /// Number of loader processes (set by the parent).
    #[arg(long, hide = true, default_value_t = 1)]
    pub worker_count: usize,
}
