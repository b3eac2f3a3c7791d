//! Hand-written SVG line charts: a [`Chart`] of one or more [`Series`] becomes one `<svg>`
//! element, with axes, ticks and a point per datum. No script, no fetch: the page stays
//! readable offline and under a `default-src 'none'` policy.
//!
//! Each series is a `<polyline class="series" data-points="N">`, so a checker (the headless
//! browser check in `.ci/run`) can tell a drawn chart from an empty one without parsing
//! coordinates. What the numbers mean is the page's business ([`page`](super::page)).

use std::fmt::Write as _;

use hdrhistogram::Histogram;

/// Drawing area, in SVG user units (the element scales to the page width).
const WIDTH: f64 = 640.0;
const HEIGHT: f64 = 240.0;
const LEFT: f64 = 64.0;
const RIGHT: f64 = 16.0;
const TOP: f64 = 12.0;
const BOTTOM: f64 = 44.0;

/// Series colours, in run order (distinguishable for the common colour blindnesses).
pub const COLOURS: [&str; 6] = ["#2563eb", "#dc2626", "#059669", "#9333ea", "#d97706", "#0891b2"];

/// Above this many points a series is drawn as a line only (no marker per point).
const MARKERS_UP_TO: usize = 240;

/// Series longer than this are reduced to the maximum of each run of consecutive points, so
/// the page stays small and a spike still shows.
pub const MAX_POINTS: usize = 2000;

/// One line: its legend label and its (x, y) points in the chart's units.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// The legend label (a run's name).
    pub name: String,
    /// Points, in x order.
    pub points: Vec<(f64, f64)>,
}

/// How the x axis reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum XAxis {
    /// Plain numbers, labelled with the unit given.
    Linear(&'static str),
    /// Percentiles on a log scale of 1 / (1 − q): x = log10(1 / (1 − q)), so 90 %, 99 %,
    /// 99.9 % … are evenly spaced (how HdrHistogram plots read).
    Percentile,
}

/// A line chart.
#[derive(Debug, Clone)]
pub struct Chart {
    /// The element id (and the CI check's name for it).
    pub id: &'static str,
    /// The x axis.
    pub x: XAxis,
    /// The y axis label (values are plotted as given).
    pub y_label: &'static str,
    /// The lines, one per run that has the data.
    pub series: Vec<Series>,
}

impl Chart {
    /// The chart as an `<svg>` element followed by its legend.
    pub fn render(&self) -> String {
        let (x_max, y_max) = self.bounds();
        let scale = Scale { x_max, y_max };
        let mut out = String::new();
        let _ = write!(
            out,
            r#"<svg class="chart" id="{}" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" xmlns="http://www.w3.org/2000/svg">"#,
            self.id
        );
        self.axes(&mut out, &scale);
        for (i, series) in self.series.iter().enumerate() {
            draw_series(&mut out, series, COLOURS[i % COLOURS.len()], &scale);
        }
        out.push_str("</svg>\n<ul class=\"legend\">");
        for (i, series) in self.series.iter().enumerate() {
            let _ = write!(
                out,
                r#"<li><span style="background:{}"></span>{}</li>"#,
                COLOURS[i % COLOURS.len()],
                escape(&series.name)
            );
        }
        out.push_str("</ul>\n");
        out
    }

    /// The largest x and y over every series (at least 1, so an all-zero chart still draws).
    fn bounds(&self) -> (f64, f64) {
        let points = self.series.iter().flat_map(|s| &s.points);
        let (x, y) = points.fold((0.0f64, 0.0f64), |(x, y), p| (x.max(p.0), y.max(p.1)));
        let x = match self.x {
            XAxis::Percentile => x.ceil().max(1.0),
            XAxis::Linear(_) => nice_ceiling(x),
        };
        (x, nice_ceiling(y))
    }

    fn axes(&self, out: &mut String, s: &Scale) {
        let (x0, y0, x1, y1) = (LEFT, HEIGHT - BOTTOM, WIDTH - RIGHT, TOP);
        let _ = write!(out, r#"<path class="axis" d="M{x0} {y1}V{y0}H{x1}"/>"#);
        let step = s.y_max / 4.0;
        for i in 0..=4 {
            let v = step * f64::from(i);
            let y = s.y(v);
            let _ = write!(
                out,
                r#"<path class="grid" d="M{x0} {y:.1}H{x1}"/><text class="tick" x="{}" y="{:.1}" text-anchor="end">{}</text>"#,
                x0 - 6.0,
                y + 4.0,
                short(v)
            );
        }
        let x_ticks: Vec<(f64, String)> = match self.x {
            XAxis::Percentile => (0..=s.x_max as u32).map(|k| (f64::from(k), percentile_label(k))).collect(),
            XAxis::Linear(_) => (0..=4).map(|i| s.x_max / 4.0 * f64::from(i)).map(|v| (v, short(v))).collect(),
        };
        for (v, label) in x_ticks {
            let x = s.x(v);
            let _ = write!(
                out,
                r#"<path class="grid" d="M{x:.1} {y1}V{y0}"/><text class="tick" x="{x:.1}" y="{}" text-anchor="middle">{label}</text>"#,
                y0 + 16.0
            );
        }
        let x_label = match self.x {
            XAxis::Percentile => "percentile",
            XAxis::Linear(label) => label,
        };
        let _ = write!(
            out,
            r#"<text class="label" x="{}" y="{}" text-anchor="middle">{x_label}</text><text class="label" transform="translate(14 {}) rotate(-90)" text-anchor="middle">{}</text>"#,
            (x0 + x1) / 2.0,
            HEIGHT - 4.0,
            (y0 + y1) / 2.0,
            self.y_label
        );
    }
}

/// Chart units → SVG units.
struct Scale {
    x_max: f64,
    y_max: f64,
}

impl Scale {
    fn x(&self, v: f64) -> f64 {
        LEFT + v / self.x_max * (WIDTH - LEFT - RIGHT)
    }

    fn y(&self, v: f64) -> f64 {
        HEIGHT - BOTTOM - v / self.y_max * (HEIGHT - BOTTOM - TOP)
    }
}

fn draw_series(out: &mut String, series: &Series, colour: &str, s: &Scale) {
    let points: Vec<(f64, f64)> = series.points.iter().map(|&(x, y)| (s.x(x), s.y(y))).collect();
    let _ = write!(out, r#"<polyline class="series" data-points="{}" stroke="{colour}" points=""#, points.len());
    for (x, y) in &points {
        let _ = write!(out, "{x:.1},{y:.1} ");
    }
    out.push_str("\"/>");
    if points.len() <= MARKERS_UP_TO {
        for (x, y) in &points {
            let _ = write!(out, r#"<circle class="point" cx="{x:.1}" cy="{y:.1}" r="2.5" fill="{colour}"/>"#);
        }
    }
}

/// The latency-by-percentile curve of `h`, in milliseconds: points at 0 %, then ten per
/// decade of 1 / (1 − q) while the histogram has that many values, then the maximum.
pub fn percentile_curve(h: &Histogram<u64>) -> Vec<(f64, f64)> {
    if h.is_empty() {
        return Vec::new();
    }
    let decades = (h.len() as f64).log10();
    let mut points = vec![(0.0, h.min() as f64 / 1000.0)];
    for k in 1..=60u32 {
        let x = f64::from(k) / 10.0;
        if x >= decades {
            break;
        }
        let q = 1.0 - 10f64.powf(-x);
        points.push((x, h.value_at_quantile(q) as f64 / 1000.0));
    }
    points.push((decades.max(0.1), h.max() as f64 / 1000.0));
    points
}

/// Reduce `points` to at most [`MAX_POINTS`], keeping the highest y of each stretch.
pub fn thin(points: Vec<(f64, f64)>) -> Vec<(f64, f64)> {
    if points.len() <= MAX_POINTS {
        return points;
    }
    let stretch = points.len().div_ceil(MAX_POINTS);
    points.chunks(stretch).filter_map(|chunk| chunk.iter().copied().max_by(|a, b| a.1.total_cmp(&b.1))).collect()
}

/// `k` decades of 1 / (1 − q) as a percentile label: 0 %, 90 %, 99 %, 99.9 % …
fn percentile_label(k: u32) -> String {
    match k {
        0 => "0%".into(),
        k => format!("{}%", 100.0 - 100.0 / 10f64.powi(k as i32)),
    }
}

/// The smallest 1, 2 or 5 × 10ⁿ at or above `v` (1 for nothing to show).
fn nice_ceiling(v: f64) -> f64 {
    if v <= 0.0 || !v.is_finite() {
        return 1.0;
    }
    let magnitude = 10f64.powf(v.log10().floor());
    [1.0, 2.0, 2.5, 5.0, 10.0].iter().map(|m| m * magnitude).find(|c| *c >= v).unwrap_or(10.0 * magnitude)
}

/// A tick label: integers plain, small numbers with the decimals they need.
fn short(v: f64) -> String {
    if v == v.round() {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// `text` with HTML's five special characters escaped, for element content and attributes.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hist::{new_histogram, record};

    #[test]
    fn percentile_curve_ends_at_the_maximum_and_never_falls() {
        let mut h = new_histogram();
        for us in 1..=1000 {
            record(&mut h, us * 10);
        }
        let curve = percentile_curve(&h);
        assert_eq!(curve.first(), Some(&(0.0, 0.01)));
        assert_eq!(curve.last().map(|p| p.1), Some(h.max() as f64 / 1000.0));
        assert!(curve.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 <= w[1].1), "{curve:?}");
        assert!(percentile_curve(&new_histogram()).is_empty());
    }

    #[test]
    fn a_chart_draws_every_point_of_every_series() {
        let chart = Chart {
            id: "c",
            x: XAxis::Linear("s"),
            y_label: "ms",
            series: vec![
                Series { name: "a<b".into(), points: vec![(0.0, 1.0), (1.0, 3.0)] },
                Series { name: "b".into(), points: vec![(0.5, 2.0)] },
            ],
        };
        let svg = chart.render();
        assert_eq!(svg.matches("<polyline class=\"series\"").count(), 2);
        assert_eq!(svg.matches("<circle class=\"point\"").count(), 3);
        assert!(svg.contains("data-points=\"2\"") && svg.contains("a&lt;b"));
    }

    #[test]
    fn thinning_keeps_the_spike() {
        let mut points: Vec<(f64, f64)> = (0..10_000).map(|i| (f64::from(i), 1.0)).collect();
        points[7777].1 = 50.0;
        let thinned = thin(points);
        assert!(thinned.len() <= MAX_POINTS);
        assert!(thinned.iter().any(|p| p.1 == 50.0));
    }

    #[test]
    fn text_from_the_report_is_escaped() {
        assert_eq!(escape(r#"<a href="x">&'"#), "&lt;a href=&quot;x&quot;&gt;&amp;&#39;");
    }

    #[test]
    fn axes_end_on_round_numbers() {
        assert_eq!(nice_ceiling(0.0), 1.0);
        assert_eq!(nice_ceiling(3.2), 5.0);
        assert_eq!(nice_ceiling(120.0), 200.0);
        assert_eq!(percentile_label(3), "99.9%");
    }
}
