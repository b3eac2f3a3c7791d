//! The report page: [`render`] lays out one run, or several side by side (one column and one
//! line colour per run), in the order people ask their questions — did it lose anything,
//! what was run, how fast, what did the nodes say.
//!
//! Charts come from the report's exact histograms and per-publish timeline; a run whose JSON
//! predates them (older files) gets its figures in the tables and a note instead of a line.

use std::fmt::Write as _;

use super::chart::{Chart, Series, XAxis, escape, percentile_curve, thin};
use crate::progress::ms;
use crate::report::{EventPoint, Report, ShapeInput};
use crate::results::histogram;

/// One run on the page: its column heading and its report.
#[derive(Debug, Clone, Copy)]
pub struct Run<'a> {
    /// The column heading and legend label (e.g. the JSON file's name).
    pub label: &'a str,
    /// What the run found.
    pub report: &'a Report,
}

/// The page's styles (inline: the page fetches nothing).
const STYLE: &str = "body{font:14px/1.45 system-ui,sans-serif;margin:24px auto;max-width:1100px;padding:0 16px;color:#111}\
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #ddd}\
.sub{color:#555;margin:0 0 16px}table{border-collapse:collapse;width:100%}\
th,td{border:1px solid #ddd;padding:4px 8px;text-align:left;vertical-align:top}th{background:#f6f6f6}\
td.num{font-variant-numeric:tabular-nums}.verdicts{display:flex;flex-wrap:wrap;gap:12px}\
.verdict{flex:1 1 300px;border-radius:6px;padding:10px 14px;color:#fff}.verdict h3{margin:0 0 6px;font-size:16px}\
.pass{background:#15803d}.fail{background:#b91c1c}.verdict dl{display:grid;grid-template-columns:max-content max-content;gap:2px 16px;margin:0}\
.verdict dd{margin:0;font-weight:600}.bad{color:#fecaca}.note{color:#555;font-style:italic}\
figure{margin:0}.charts{display:grid;grid-template-columns:repeat(auto-fit,minmax(460px,1fr));gap:20px}figcaption{font-weight:600;margin-bottom:4px}svg.chart{width:100%;height:auto;background:#fff}\
.axis{stroke:#333;fill:none}.grid{stroke:#eee}.tick{font-size:12px;fill:#444}.label{font-size:13px;fill:#222}\
.series{fill:none;stroke-width:1.6}.legend{list-style:none;padding:0;margin:2px 0;display:flex;gap:16px}\
.legend span{display:inline-block;width:12px;height:12px;margin-right:4px;vertical-align:-1px}";

/// The whole page for `runs` (one or more).
pub fn render(runs: &[Run<'_>]) -> String {
    let title = match runs {
        [one] => format!("mcp-fleet-loadtest: {}", one.label),
        many => format!("mcp-fleet-loadtest: {} runs compared", many.len()),
    };
    let mut out = String::new();
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\
<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\"><title>{t}</title><style>{STYLE}</style></head>\n<body>\
<h1>{t}</h1><p class=\"sub\">{}</p>\n",
        runs.iter()
            .map(|r| format!(
                "{} started {}",
                escape(r.label),
                mcp_fleet_protocol::tasks::iso8601(r.report.started_at_ms)
            ))
            .collect::<Vec<_>>()
            .join(" · "),
        t = escape(&title),
    );
    verdicts(&mut out, runs);
    section_table(&mut out, "Inputs", runs, &input_rows(runs));
    section_table(&mut out, "Figures", runs, &figure_rows(runs));
    charts(&mut out, runs);
    nodes(&mut out, runs);
    out.push_str("</body></html>\n");
    out
}

/// Verification first, one card per run: green when nothing was lost, red otherwise.
fn verdicts(out: &mut String, runs: &[Run<'_>]) {
    out.push_str("<h2>Verification</h2><div class=\"verdicts\">");
    for run in runs {
        let v = &run.report.verify;
        let (class, word) = if v.passed { ("pass", "passed") } else { ("fail", "FAILED") };
        let enforced = if v.enabled { "" } else { " (not enforced: no --verify)" };
        let _ = write!(
            out,
            "<section class=\"verdict {class}\" id=\"verdict-{}\"><h3>{}: {word}{enforced}</h3><dl>",
            class,
            escape(run.label)
        );
        let figures = [
            ("(stream, publish) pairs checked", v.checked, false),
            ("lost", v.lost, true),
            ("duplicated frames", v.counts.duplicated, true),
            ("out of order", v.counts.out_of_order, true),
            ("gap frames", v.counts.gap_frames, false),
            ("covered only by a gap", v.covered_by_gap, false),
            ("covered only by a reconnect", v.covered_by_reconnect, false),
            ("epoch changes without a gap", v.counts.epoch_changes_without_gap, true),
            ("unexpected frames", v.counts.unexpected, true),
            ("misrouted (another tenant's)", v.misrouted, true),
        ];
        for (name, n, bad_if_any) in figures {
            let class = if bad_if_any && n > 0 { " class=\"bad\"" } else { "" };
            let _ = write!(out, "<dt>{name}</dt><dd{class}>{n}</dd>");
        }
        out.push_str("</dl>");
        for e in &v.examples {
            let _ = write!(out, "<p>lost: {}</p>", escape(&format!("{e:?}")));
        }
        out.push_str("</section>");
    }
    out.push_str("</div>\n");
}

/// A labelled row with one cell per run.
type Row = (&'static str, Vec<String>);

fn section_table(out: &mut String, title: &str, runs: &[Run<'_>], rows: &[Row]) {
    let _ = write!(out, "<h2>{title}</h2><table><tr><th></th>");
    for run in runs {
        let _ = write!(out, "<th>{}</th>", escape(run.label));
    }
    out.push_str("</tr>");
    for (label, cells) in rows {
        let _ = write!(out, "<tr><th>{label}</th>");
        for cell in cells {
            let _ = write!(out, "<td class=\"num\">{}</td>", escape(cell));
        }
        out.push_str("</tr>");
    }
    out.push_str("</table>\n");
}

/// One row: `cell` applied to each run's report.
fn row(label: &'static str, runs: &[Run<'_>], cell: impl Fn(&Report) -> String) -> Row {
    (label, runs.iter().map(|r| cell(r.report)).collect())
}

fn input_rows(runs: &[Run<'_>]) -> Vec<Row> {
    vec![
        row("clients", runs, |r| {
            let era = if r.inputs.era == "2025" { "2025-era session GET streams" } else { "2026 listen streams" };
            format!("{} {era}", r.inputs.streams)
        }),
        row("protocol", runs, |r| match r.inputs.h2_streams_per_conn {
            0 => r.inputs.protocol.clone(),
            n => format!("{} ({n} streams per connection)", r.inputs.protocol),
        }),
        row("endpoints", runs, |r| r.inputs.urls.join(", ")),
        row("loader processes", runs, |r| match r.inputs.workers {
            0 => "1 (in process)".into(),
            n => format!("{n} workers"),
        }),
        row("publishing", runs, |r| format!("via {}: {}", r.inputs.publish_via, r.inputs.publish_targets.join(", "))),
        row("load shape", runs, |r| match &r.inputs.shape {
            ShapeInput::Events { events, interval_ms } => format!("{events} events, one every {interval_ms} ms"),
            ShapeInput::Rate { rate, duration_secs } => format!("{rate}/s for {duration_secs} s"),
            ShapeInput::Burst { events, concurrency } => format!("burst of {events}, {concurrency} in flight"),
        }),
        row("mix", runs, |r| r.inputs.mix.iter().map(|(k, w)| format!("{k}={w:.2}")).collect::<Vec<_>>().join(", ")),
        row("URIs", runs, |r| format!("{} in all, {} per stream", r.inputs.uris, r.inputs.uris_per_stream)),
        row("tenants", runs, |r| r.inputs.tenants.to_string()),
        row("re-listing clients", runs, |r| match r.inputs.relist {
            true => format!("yes, {} re-lists in flight per loader", r.inputs.relist_concurrency),
            false => "no".into(),
        }),
        row("seed, settle limit", runs, |r| format!("{}, {} ms", r.inputs.seed, r.inputs.settle_ms)),
    ]
}

fn figure_rows(runs: &[Run<'_>]) -> Vec<Row> {
    let mut rows = vec![
        row("streams opened", runs, |r| {
            let o = &r.phases.open;
            format!("{} of {} in {:.0} ms ({} failed attempts)", o.opened, o.streams, o.duration_ms, o.failures)
        }),
        row("events published", runs, |r| {
            let e = &r.phases.events;
            format!(
                "{} ({} failed) in {:.0} ms, settled {:.0} ms later",
                e.published, e.publish_failed, e.duration_ms, e.settle_ms
            )
        }),
        row("publish latency p50 / p99", runs, |r| {
            let p = &r.phases.events.publish_latency_us;
            format!("{} / {}", ms(p.p50), ms(p.p99))
        }),
        row("deliveries (frames matched)", runs, |r| r.phases.events.deliveries.to_string()),
        row("delivery p50 / p90 / p99 / max", runs, |r| {
            let d = &r.phases.events.delivery_latency_us;
            format!("{} / {} / {} / {}", ms(d.p50), ms(d.p90), ms(d.p99), ms(d.max))
        }),
        row("publish → last stream, median / max", runs, |r| {
            let f = &r.phases.events.fanout_us;
            format!("{} / {}", ms(f.p50), ms(f.max))
        }),
        row("streams complete", runs, |r| r.phases.events.streams_complete.to_string()),
    ];
    if runs.iter().any(|r| r.report.phases.relist.is_some()) {
        rows.extend(relist_rows(runs));
    }
    if runs.iter().any(|r| r.report.server.is_some()) {
        rows.push(row("server CPU per delivery", runs, |r| match &r.server {
            Some(s) => format!("{:.2} µs ({} ms CPU)", s.cpu_per_delivery_us, s.cpu_ms),
            None => "—".into(),
        }));
        rows.push(row("server RSS per stream", runs, |r| match &r.server {
            Some(s) => format!("{:.0} B ({} → {} KiB)", s.rss_per_stream_bytes, s.rss_kb_before, s.rss_kb_open),
            None => "—".into(),
        }));
    }
    rows
}

fn relist_rows(runs: &[Run<'_>]) -> Vec<Row> {
    let relist = |f: fn(&crate::report::RelistPhase) -> String| {
        move |r: &Report| r.phases.relist.as_ref().map(f).unwrap_or_else(|| "—".into())
    };
    vec![
        row(
            "time to convergence, median / p99 / max",
            runs,
            relist(|p| {
                let c = &p.convergence_us;
                format!("{} / {} / {}", ms(c.p50), ms(c.p99), ms(c.max))
            }),
        ),
        row("client-events never converged", runs, relist(|p| p.unconverged.to_string())),
        row(
            "re-list storm",
            runs,
            relist(|p| {
                let s = &p.storm;
                format!(
                    "{} requests at {:.0}/s ({} errors, {} failed fetches)",
                    s.requests, s.rate_per_sec, s.errors, s.fetch_errors
                )
            }),
        ),
        row(
            "re-list request p50 / p99",
            runs,
            relist(|p| {
                let l = &p.storm.request_latency_us;
                format!("{} / {}", ms(l.p50), ms(l.p99))
            }),
        ),
    ]
}

/// Every chart whose data at least one run has.
fn charts(out: &mut String, runs: &[Run<'_>]) {
    out.push_str("<h2>Charts</h2><div class=\"charts\">\n");
    let distribution = |pick: fn(&Report) -> &str| {
        series(runs, |r| histogram(pick(r)).map(|h| percentile_curve(&h)).unwrap_or_default())
    };
    let over_time = |pick: fn(&EventPoint) -> Option<u64>| {
        series(runs, |r| {
            let points = r.timeline.iter().filter_map(|p| pick(p).map(|us| (p.at_us as f64 / 1e6, us as f64 / 1000.0)));
            thin(points.collect())
        })
    };
    figure(
        out,
        "Delivery latency by percentile (every frame, publish sent → frame read)",
        Chart {
            id: "delivery-percentiles",
            x: XAxis::Percentile,
            y_label: "ms",
            series: distribution(|r| &r.histograms.delivery_latency_us),
        },
    );
    figure(
        out,
        "Publish → last stream, per event over the run (its slowest delivery; a publish every stream got only coalesced into a later one has no point)",
        Chart {
            id: "fanout-over-time",
            x: XAxis::Linear("seconds into the event phase"),
            y_label: "ms",
            series: over_time(|p| p.last_stream_us),
        },
    );
    figure(
        out,
        "Publish → last stream by percentile (per event)",
        Chart {
            id: "fanout-percentiles",
            x: XAxis::Percentile,
            y_label: "ms",
            series: distribution(|r| &r.histograms.fanout_us),
        },
    );
    if runs.iter().any(|r| r.report.inputs.relist) {
        figure(
            out,
            "Time to convergence, per event over the run (every client holds a covering snapshot)",
            Chart {
                id: "convergence-over-time",
                x: XAxis::Linear("seconds into the event phase"),
                y_label: "ms",
                series: over_time(|p| p.converged_us),
            },
        );
        figure(
            out,
            "Client convergence by percentile (per client and publish)",
            Chart {
                id: "client-convergence-percentiles",
                x: XAxis::Percentile,
                y_label: "ms",
                series: distribution(|r| &r.histograms.client_convergence_us),
            },
        );
        figure(
            out,
            "Re-list storm: page request latency by percentile",
            Chart {
                id: "storm-request-percentiles",
                x: XAxis::Percentile,
                y_label: "ms",
                series: distribution(|r| &r.histograms.storm_request_us),
            },
        );
    }
    out.push_str("</div>\n");
}

/// One series per run that has points (runs without are named in the figure's note).
fn series(runs: &[Run<'_>], points: impl Fn(&Report) -> Vec<(f64, f64)>) -> Vec<Series> {
    runs.iter()
        .map(|r| Series { name: r.label.to_owned(), points: points(r.report) })
        .filter(|s| !s.points.is_empty())
        .collect()
}

fn figure(out: &mut String, caption: &str, chart: Chart) {
    let _ = write!(out, "<figure><figcaption>{}</figcaption>", escape(caption));
    if chart.series.is_empty() {
        let _ = write!(out, "<p class=\"note\" id=\"{}\">No data for this chart in these reports.</p>", chart.id);
    } else {
        out.push_str(&chart.render());
    }
    out.push_str("</figure>\n");
}

/// What each scraped node counted between the two scrapes.
fn nodes(out: &mut String, runs: &[Run<'_>]) {
    if runs.iter().all(|r| r.report.nodes.is_empty()) {
        return;
    }
    out.push_str("<h2>Node counters (after − before the event phase)</h2><table><tr><th>run</th><th>node</th>\
<th>frames written</th><th>coalesced</th><th>bus gaps</th><th>bus events delivered</th><th>list requests (errors)</th></tr>");
    for run in runs {
        for n in &run.report.nodes {
            let _ = write!(out, "<tr><td>{}</td><td>{}</td>", escape(run.label), escape(&n.address));
            match (&n.delta, &n.error) {
                (Some(d), _) => {
                    let c = |k: &str| d.counters.get(k).copied().unwrap_or_default();
                    let _ = write!(
                        out,
                        "<td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{} ({})</td>",
                        c("framesWritten") + c("legacyFramesWritten"),
                        c("coalesced"),
                        c("gaps"),
                        c("eventsDelivered"),
                        d.list_requests,
                        d.list_errors
                    );
                }
                (None, err) => {
                    let why = err.as_deref().unwrap_or("not scraped");
                    let _ = write!(out, "<td colspan=\"5\">{}</td>", escape(why));
                }
            }
            out.push_str("</tr>");
        }
    }
    out.push_str("</table>\n");
}
