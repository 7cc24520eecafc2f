//! Hand-written SVG line charts: a JCT CDF per policy, and average JCT against input load.
//! No plotting library: a few polylines, ticks and a legend.

use super::report::SimulationReport;
use std::fmt::Write;

/// One named curve.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub label: String,
    pub points: Vec<(f64, f64)>,
}

/// A chart's text.
#[derive(Debug, Clone, PartialEq)]
pub struct Chart {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub series: Vec<Series>,
}

const W: f64 = 720.0;
const H: f64 = 440.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 200.0;
const TOP: f64 = 40.0;
const BOTTOM: f64 = 50.0;
const COLORS: [&str; 8] = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"];

/// About five round tick values covering `[lo, hi]`.
fn ticks(lo: f64, hi: f64) -> Vec<f64> {
    let span = (hi - lo).max(f64::MIN_POSITIVE);
    let raw = span / 5.0;
    let magnitude = 10f64.powf(raw.log10().floor());
    let step =
        [1.0, 2.0, 2.5, 5.0, 10.0].iter().map(|m| m * magnitude).find(|s| span / s <= 6.0).unwrap_or(magnitude * 10.0);
    let first = (lo / step).ceil() as i64;
    let last = (hi / step).floor() as i64;
    (first..=last).map(|k| k as f64 * step).collect()
}

fn label(v: f64) -> String {
    if v == 0.0 || (v.abs() >= 0.01 && v.abs() < 1e5) {
        let s = format!("{v:.2}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        format!("{v:.1e}")
    }
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

impl Chart {
    /// The chart as an SVG document.
    pub fn to_svg(&self) -> String {
        let points = self.series.iter().flat_map(|s| s.points.iter()).filter(|p| p.0.is_finite() && p.1.is_finite());
        let (mut x0, mut x1, mut y0, mut y1) = (f64::INFINITY, f64::NEG_INFINITY, 0.0_f64, f64::NEG_INFINITY);
        for &(x, y) in points {
            x0 = x0.min(x);
            x1 = x1.max(x);
            y0 = y0.min(y);
            y1 = y1.max(y);
        }
        if !x0.is_finite() {
            (x0, x1, y1) = (0.0, 1.0, 1.0);
        }
        if x1 <= x0 {
            x1 = x0 + 1.0;
        }
        if y1 <= y0 {
            y1 = y0 + 1.0;
        }
        let (pw, ph) = (W - LEFT - RIGHT, H - TOP - BOTTOM);
        let sx = |x: f64| LEFT + (x - x0) / (x1 - x0) * pw;
        let sy = |y: f64| TOP + ph - (y - y0) / (y1 - y0) * ph;
        let mut o = String::new();
        let _ = writeln!(
            o,
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="12">"#
        );
        let _ = writeln!(o, r#"<rect width="{W}" height="{H}" fill="white"/>"#);
        let _ = writeln!(
            o,
            r#"<text x="{}" y="22" font-size="15" text-anchor="middle">{}</text>"#,
            LEFT + pw / 2.0,
            escape(&self.title)
        );
        let _ = writeln!(o, r##"<rect x="{LEFT}" y="{TOP}" width="{pw}" height="{ph}" fill="none" stroke="#333"/>"##);
        for t in ticks(x0, x1) {
            let x = sx(t);
            let _ = writeln!(o, r##"<line x1="{x:.1}" y1="{TOP}" x2="{x:.1}" y2="{:.1}" stroke="#ddd"/>"##, TOP + ph);
            let _ =
                writeln!(o, r#"<text x="{x:.1}" y="{:.1}" text-anchor="middle">{}</text>"#, TOP + ph + 16.0, label(t));
        }
        for t in ticks(y0, y1) {
            let y = sy(t);
            let _ = writeln!(o, r##"<line x1="{LEFT}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#ddd"/>"##, LEFT + pw);
            let _ =
                writeln!(o, r#"<text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"#, LEFT - 6.0, y + 4.0, label(t));
        }
        let _ = writeln!(
            o,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
            LEFT + pw / 2.0,
            H - 12.0,
            escape(&self.x_label)
        );
        let _ = writeln!(
            o,
            r#"<text x="18" y="{:.1}" text-anchor="middle" transform="rotate(-90 18 {:.1})">{}</text>"#,
            TOP + ph / 2.0,
            TOP + ph / 2.0,
            escape(&self.y_label)
        );
        for (k, s) in self.series.iter().enumerate() {
            let color = COLORS[k % COLORS.len()];
            let path: Vec<String> = s
                .points
                .iter()
                .filter(|p| p.0.is_finite() && p.1.is_finite())
                .map(|&(x, y)| format!("{:.1},{:.1}", sx(x), sy(y)))
                .collect();
            let _ =
                writeln!(o, r#"<polyline fill="none" stroke="{color}" stroke-width="2" points="{}"/>"#, path.join(" "));
            if s.points.len() <= 40 {
                for p in &path {
                    let (x, y) = p.split_once(',').unwrap_or(("0", "0"));
                    let _ = writeln!(o, r#"<circle cx="{x}" cy="{y}" r="3" fill="{color}"/>"#);
                }
            }
            let ly = TOP + 10.0 + 20.0 * k as f64;
            let lx = LEFT + pw + 12.0;
            let _ = writeln!(
                o,
                r#"<line x1="{lx}" y1="{ly}" x2="{}" y2="{ly}" stroke="{color}" stroke-width="3"/>"#,
                lx + 22.0
            );
            let _ = writeln!(o, r#"<text x="{}" y="{}">{}</text>"#, lx + 28.0, ly + 4.0, escape(&s.label));
        }
        o.push_str("</svg>\n");
        o
    }
}

/// The empirical CDF of a report's measured JCTs, in hours.
pub fn jct_cdf(label: impl Into<String>, report: &SimulationReport) -> Series {
    let mut jcts: Vec<f64> =
        report.jobs.iter().filter(|j| j.measured).filter_map(|j| j.jct_seconds).map(|s| s / 3600.0).collect();
    jcts.sort_by(f64::total_cmp);
    let n = jcts.len() as f64;
    let mut points = vec![(0.0, 0.0)];
    points.extend(jcts.iter().enumerate().map(|(k, &x)| (x, (k + 1) as f64 / n)));
    Series { label: label.into(), points }
}

/// One curve per label, in the order labels first appear, through the mean `y` of each `x`
/// (the points of one label and `x` are one per seed).
pub fn mean_curves<'a>(points: impl IntoIterator<Item = (&'a str, f64, f64)>) -> Vec<Series> {
    let mut series: Vec<Series> = Vec::new();
    for (label, x, y) in points {
        match series.iter_mut().find(|s| s.label == label) {
            Some(s) => s.points.push((x, y)),
            None => series.push(Series { label: label.to_string(), points: vec![(x, y)] }),
        }
    }
    for s in &mut series {
        s.points.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut merged: Vec<(f64, f64, f64)> = Vec::new();
        for &(x, y) in &s.points {
            match merged.last_mut() {
                Some(last) if last.0 == x => {
                    last.1 += y;
                    last.2 += 1.0;
                }
                _ => merged.push((x, y, 1.0)),
            }
        }
        s.points = merged.into_iter().map(|(x, y, n)| (x, y / n)).collect();
    }
    series
}

/// A chart of JCT CDFs, one per policy.
pub fn cdf_chart(title: impl Into<String>, series: Vec<Series>) -> Chart {
    Chart { title: title.into(), x_label: "JCT (hours)".into(), y_label: "fraction of jobs".into(), series }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_every_series_with_a_legend() {
        let chart = Chart {
            title: "a < b".into(),
            x_label: "x".into(),
            y_label: "y".into(),
            series: vec![
                Series { label: "one".into(), points: vec![(0.0, 1.0), (1.0, 2.0)] },
                Series { label: "two".into(), points: vec![(0.5, f64::NAN), (2.0, 0.5)] },
            ],
        };
        let svg = chart.to_svg();
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>\n"));
        assert_eq!(svg.matches("<polyline").count(), 2);
        assert!(svg.contains("a &lt; b") && svg.contains(">two</text>"));
        assert!(!svg.contains("NaN"));
    }

    #[test]
    fn ticks_are_round() {
        assert_eq!(ticks(0.0, 10.0), vec![0.0, 2.0, 4.0, 6.0, 8.0, 10.0]);
        let t = ticks(0.0, 1.0);
        assert_eq!(t.len(), 6);
        assert!((t[3] - 0.6).abs() < 1e-12 && t[5] == 1.0);
    }
}
