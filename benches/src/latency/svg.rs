//! A hand-written SVG of the latency distributions: two panels side by side (raw calls, lock
//! and election paths), each an empirical CDF on a shared logarithmic latency axis. With
//! `--compare`, each of our curves has the reference client's beside it, dashed, in the same
//! colour and on the same axes.

use std::fmt::Write as _;

use super::Metric;

const RAW: [&str; 4] = ["raw_create", "raw_delete", "raw_pair", "raw_get"];
const LOCK: [&str; 5] = [
    "lock_acquire",
    "lock_release",
    "lock_cycle",
    "lock_contended",
    "election_failover",
];
const COLORS: [&str; 5] = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd"];

const PANEL_W: f64 = 520.0;
const PANEL_H: f64 = 340.0;
const LEFT: f64 = 60.0;
const TOP: f64 = 50.0;
const GAP: f64 = 90.0;
/// Points per curve at most.
const MAX_POINTS: usize = 400;

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// The SVG document.
pub(crate) fn render(title: &str, metrics: &[Metric]) -> String {
    let series = |names: &[&str]| -> Vec<&Metric> {
        names
            .iter()
            .filter_map(|n| metrics.iter().find(|m| m.name == *n))
            .filter(|m| !m.samples_us.is_empty())
            .collect()
    };
    let panels = [
        ("raw calls (one session)", series(&RAW)),
        ("lock and election paths", series(&LOCK)),
    ];
    // Each of our metrics with the reference's of the same name (`raw_pair@java`), if any.
    let reference_of = |m: &Metric| -> Option<&Metric> {
        metrics.iter().find(|r| {
            r.reference
                .is_some_and(|c| r.name == format!("{}@{c}", m.name))
                && !r.samples_us.is_empty()
        })
    };
    let all = panels.iter().flat_map(|(_, s)| {
        s.iter()
            .flat_map(|m| std::iter::once(*m).chain(reference_of(m)))
    });
    let (lo, hi) = all
        .flat_map(|m| [m.samples_us[0], m.samples_us[m.samples_us.len() - 1]])
        .fold((f64::INFINITY, 0.0_f64), |(lo, hi), v| {
            (lo.min(v), hi.max(v))
        });
    let (lo, hi) = if lo.is_finite() && hi > 0.0 {
        (
            10_f64.powf(lo.max(0.1).log10().floor()),
            10_f64.powf(hi.log10().ceil()),
        )
    } else {
        (1.0, 1e6)
    };
    let (llo, lhi) = (lo.log10(), hi.log10().max(lo.log10() + 1.0));
    let width = LEFT + 2.0 * PANEL_W + GAP + 30.0;
    let height = TOP + PANEL_H + 60.0;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" \
         viewBox=\"0 0 {width} {height}\" font-family=\"sans-serif\" font-size=\"12\">"
    );
    let _ = writeln!(
        out,
        "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n<text x=\"{LEFT}\" y=\"22\" \
         font-size=\"14\">lock_latency (rzk): latency CDFs, {}</text>",
        escape(title)
    );
    for (p, (name, series)) in panels.iter().enumerate() {
        let x0 = LEFT + p as f64 * (PANEL_W + GAP);
        let x = |us: f64| x0 + (us.max(lo).log10() - llo) / (lhi - llo) * PANEL_W;
        let y = |q: f64| TOP + (1.0 - q) * PANEL_H;
        let _ = writeln!(
            out,
            "<text x=\"{x0}\" y=\"{}\" font-weight=\"bold\">{name}</text>\n<rect x=\"{x0}\" \
             y=\"{TOP}\" width=\"{PANEL_W}\" height=\"{PANEL_H}\" fill=\"none\" stroke=\"#444\"/>",
            TOP - 8.0
        );
        // Grid: decades (and 2, 5) on x, quartiles on y.
        let mut decade = lo;
        while decade <= hi * 1.0001 {
            for m in [1.0, 2.0, 5.0] {
                let v = decade * m;
                if v > hi * 1.0001 {
                    break;
                }
                let gx = x(v);
                let _ = writeln!(
                    out,
                    "<line x1=\"{gx:.1}\" y1=\"{TOP}\" x2=\"{gx:.1}\" y2=\"{:.1}\" stroke=\"#ddd\"/>\
                     <text x=\"{gx:.1}\" y=\"{:.1}\" text-anchor=\"middle\" fill=\"#444\">{}</text>",
                    TOP + PANEL_H,
                    TOP + PANEL_H + 16.0,
                    label(v)
                );
            }
            decade *= 10.0;
        }
        for q in [0.25, 0.5, 0.75, 0.9, 0.99] {
            let _ = writeln!(
                out,
                "<line x1=\"{x0}\" y1=\"{:.1}\" x2=\"{:.1}\" y2=\"{:.1}\" stroke=\"#eee\"/>\
                 <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\" fill=\"#444\">p{}</text>",
                y(q),
                x0 + PANEL_W,
                y(q),
                x0 - 4.0,
                y(q) + 4.0,
                (q * 100.0).round()
            );
        }
        let _ = writeln!(
            out,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">latency (µs, log scale)</text>",
            x0 + PANEL_W / 2.0,
            TOP + PANEL_H + 36.0
        );
        for (i, m) in series.iter().enumerate() {
            let color = COLORS[i % COLORS.len()];
            let reference = reference_of(m);
            for (curve, dash) in
                std::iter::once((*m, "")).chain(reference.map(|r| (r, " stroke-dasharray=\"6 3\"")))
            {
                let n = curve.samples_us.len();
                let stride = n.div_ceil(MAX_POINTS).max(1);
                let mut points = String::new();
                for (k, v) in curve.samples_us.iter().enumerate() {
                    if k % stride == 0 || k == n - 1 {
                        let _ = write!(points, "{:.1},{:.1} ", x(*v), y((k + 1) as f64 / n as f64));
                    }
                }
                let _ = writeln!(
                    out,
                    "<polyline fill=\"none\" stroke=\"{color}\" stroke-width=\"1.5\"{dash} \
                     points=\"{}\"/>",
                    points.trim_end()
                );
            }
            let name = if m.name == "lock_contended" {
                "lock_contended (handoff)".to_owned()
            } else {
                m.name.clone()
            };
            let mut legend = format!("{name} (p50 {:.0} µs)", m.p50_us.unwrap_or(f64::NAN));
            if let Some(r) = reference {
                let client = match r.reference {
                    Some("curator") => "Curator",
                    _ => "Java client",
                };
                legend.push_str(&format!(
                    "; dashed: {client} (p50 {:.0} µs)",
                    r.p50_us.unwrap_or(f64::NAN)
                ));
            }
            let ly = TOP + 16.0 + i as f64 * 16.0;
            let _ = writeln!(
                out,
                "<line x1=\"{:.1}\" y1=\"{ly:.1}\" x2=\"{:.1}\" y2=\"{ly:.1}\" stroke=\"{color}\" \
                 stroke-width=\"3\"/><text x=\"{:.1}\" y=\"{:.1}\">{}</text>",
                x0 + 10.0,
                x0 + 30.0,
                x0 + 36.0,
                ly + 4.0,
                escape(&legend),
            );
        }
    }
    out.push_str("</svg>\n");
    out
}

fn label(us: f64) -> String {
    if us >= 1e6 {
        format!("{}s", us / 1e6)
    } else if us >= 1e3 {
        format!("{}ms", us / 1e3)
    } else {
        format!("{us}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reference_curve_is_dashed_beside_ours() {
        let ours = Metric::from_samples_us("lock_cycle", vec![100.0, 200.0, 300.0]);
        let curator = Metric {
            reference: Some("curator"),
            ..Metric::from_samples_us("lock_cycle@curator", vec![400.0, 500.0])
        };
        let svg = render("test", &[ours.clone(), curator]);
        assert_eq!(svg.matches("<polyline").count(), 2, "{svg}");
        assert_eq!(svg.matches("stroke-dasharray").count(), 1, "{svg}");
        assert!(svg.contains("dashed: Curator (p50 400 µs)"), "{svg}");
        let alone = render("test", &[ours]);
        assert_eq!(alone.matches("stroke-dasharray").count(), 0);
    }
}
