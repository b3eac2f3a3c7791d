//! The final table printed on stdout: one labelled line per figure of a [`Report`], for
//! people (the JSON document is for programs).

use std::fmt::Write as _;

use crate::progress::ms;
use crate::report::{NodeReport, RelistPhase, Report};

impl Report {
    /// The final table, for people.
    pub fn table(&self) -> String {
        let mut out = String::new();
        let i = &self.inputs;
        let (o, e) = (&self.phases.open, &self.phases.events);
        let loaders = if i.workers == 0 { "1 process".to_owned() } else { format!("{} workers", i.workers) };
        let _ = writeln!(
            out,
            "mcp-fleet-loadtest: {} {} streams over {} ({loaders}), {} node(s), publishing via {}",
            i.streams,
            if i.era == "2025" { "2025-era GET" } else { "listen" },
            i.protocol,
            i.urls.len(),
            i.publish_via
        );
        row(
            &mut out,
            "streams opened",
            format_args!(
                "{} of {} in {:.0} ms ({} failed attempts), ack p50 {} p99 {}",
                o.opened,
                o.streams,
                o.duration_ms,
                o.failures,
                ms(o.latency_us.p50),
                ms(o.latency_us.p99)
            ),
        );
        row(
            &mut out,
            "events published",
            format_args!(
                "{} ({} failed) in {:.0} ms, publish p50 {} p99 {}",
                e.published,
                e.publish_failed,
                e.duration_ms,
                ms(e.publish_latency_us.p50),
                ms(e.publish_latency_us.p99)
            ),
        );
        let d = &e.delivery_latency_us;
        row(
            &mut out,
            "deliveries",
            format_args!("{} frames matched, p50 {} p99 {} max {}", e.deliveries, ms(d.p50), ms(d.p99), ms(d.max)),
        );
        row(
            &mut out,
            "publish → last stream (per event)",
            format_args!("median {} max {}", ms(e.fanout_us.p50), ms(e.fanout_us.max)),
        );
        if let Some(r) = &self.phases.relist {
            self.relist_rows(&mut out, r);
        }
        let v = &self.verify;
        row(
            &mut out,
            "verification",
            format_args!(
                "{} — {} checked, {} lost, {} duplicated, {} out of order, {} gap frames ({} covered by gaps, {} by reconnects), {} epoch changes without gap, {} unexpected, {} misrouted",
                if v.passed { "passed" } else { "FAILED" },
                v.checked,
                v.lost,
                v.counts.duplicated,
                v.counts.out_of_order,
                v.counts.gap_frames,
                v.covered_by_gap,
                v.covered_by_reconnect,
                v.counts.epoch_changes_without_gap,
                v.counts.unexpected,
                v.misrouted
            ),
        );
        if let Some(s) = &self.server {
            row(
                &mut out,
                "server CPU per delivery",
                format_args!(
                    "{:.2} µs ({} ms), RSS per stream {:.0} B",
                    s.cpu_per_delivery_us, s.cpu_ms, s.rss_per_stream_bytes
                ),
            );
        }
        for n in &self.nodes {
            node_row(&mut out, n);
        }
        out
    }

    fn relist_rows(&self, out: &mut String, r: &RelistPhase) {
        let (c, s) = (&r.convergence_us, &r.storm);
        row(
            out,
            "time to convergence (per event)",
            format_args!(
                "median {} p99 {} max {} ({} client-events never converged)",
                ms(c.p50),
                ms(c.p99),
                ms(c.max),
                r.unconverged
            ),
        );
        row(
            out,
            "re-list storm",
            format_args!(
                "{} requests ({} errors, {} failed fetches) at {:.0}/s, p50 {} p99 {}",
                s.requests,
                s.errors,
                s.fetch_errors,
                s.rate_per_sec,
                ms(s.request_latency_us.p50),
                ms(s.request_latency_us.p99)
            ),
        );
        for (list, revisions) in &r.revisions {
            row(out, &format!("{list} revisions held"), format_args!("{revisions:?}"));
        }
    }
}

/// One labelled line of the table.
fn row(out: &mut String, label: &str, value: std::fmt::Arguments<'_>) {
    let _ = writeln!(out, "{label:<34} {value}");
}

fn node_row(out: &mut String, n: &NodeReport) {
    let label = format!("node {}", n.address);
    match (&n.delta, &n.error) {
        (Some(d), _) => {
            let c = |k: &str| d.counters.get(k).copied().unwrap_or_default();
            row(
                out,
                &label,
                format_args!(
                    "frames {} coalesced {} gaps {} list requests {} ({} errors)",
                    c("framesWritten") + c("legacyFramesWritten"),
                    c("coalesced"),
                    c("gaps"),
                    d.list_requests,
                    d.list_errors
                ),
            );
        }
        (None, Some(err)) => row(out, &label, format_args!("scrape failed: {err}")),
        (None, None) => {}
    }
}
