//! A hand-written SVG of the latency distributions: two panels side by side (raw calls, lock
//! and election paths), each an empirical CDF on a shared logarithmic latency axis. With
//! `--compare`, each of our curves has the reference client's beside it, dashed, in the same
//! colour and on the same axes.
//!
//! The axis is written in one unit (µs, ms or s, from its range), named in its title; its
//! labels are thinned (1-2-5 per decade, then decades, then every other decade) until no two
//! overlap, and the legend sits under each panel, off the curves.

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
/// The font size of the labels, in px.
const FONT: f64 = 12.0;
/// The least room between two tick labels, in px.
const LABEL_GAP: f64 = 8.0;
/// From the panel's bottom: the tick labels' baseline, the axis title's, the first legend
/// line's.
const TICKS_DY: f64 = 16.0;
const AXIS_TITLE_DY: f64 = 36.0;
const LEGEND_DY: f64 = 60.0;
const LEGEND_LINE: f64 = 16.0;
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
    // Whole decades around every sample (10^e µs), at least one.
    let (elo, ehi) = if lo.is_finite() && hi > 0.0 {
        let elo = lo.max(0.1).log10().floor() as i32;
        (elo, (hi.log10().ceil() as i32).max(elo + 1))
    } else {
        (0, 6)
    };
    let axis = Axis::new(elo, ehi, PANEL_W);
    let rows = panels.iter().map(|(_, s)| s.len()).max().unwrap_or(0);
    let width = LEFT + 2.0 * PANEL_W + GAP + 30.0;
    let height = TOP + PANEL_H + LEGEND_DY + rows as f64 * LEGEND_LINE;
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
        let x = |us: f64| x0 + axis.x(us);
        let y = |q: f64| TOP + (1.0 - q) * PANEL_H;
        let _ = writeln!(
            out,
            "<text x=\"{x0}\" y=\"{}\" font-weight=\"bold\">{name}</text>\n<rect x=\"{x0}\" \
             y=\"{TOP}\" width=\"{PANEL_W}\" height=\"{PANEL_H}\" fill=\"none\" stroke=\"#444\"/>",
            TOP - 8.0
        );
        // Grid: decades (and 2, 5) on x, darker where labelled; quantiles on y.
        for tick in &axis.ticks {
            let gx = x0 + tick.x;
            let stroke = if tick.label.is_some() { "#ccc" } else { "#eee" };
            let _ = writeln!(
                out,
                "<line x1=\"{gx:.1}\" y1=\"{TOP}\" x2=\"{gx:.1}\" y2=\"{:.1}\" stroke=\"{stroke}\"/>",
                TOP + PANEL_H,
            );
            if let Some(label) = &tick.label {
                let _ = writeln!(
                    out,
                    "<text class=\"tick\" x=\"{gx:.1}\" y=\"{:.1}\" text-anchor=\"middle\" fill=\"#444\">{label}</text>",
                    TOP + PANEL_H + TICKS_DY,
                );
            }
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
            "<text class=\"axis-title\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">latency ({}, log scale)</text>",
            x0 + PANEL_W / 2.0,
            TOP + PANEL_H + AXIS_TITLE_DY,
            axis.unit.name()
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
            // Under the panel, off the curves.
            let ly = TOP + PANEL_H + LEGEND_DY + i as f64 * LEGEND_LINE;
            let _ = writeln!(
                out,
                "<line x1=\"{:.1}\" y1=\"{ly:.1}\" x2=\"{:.1}\" y2=\"{ly:.1}\" stroke=\"{color}\" \
                 stroke-width=\"3\"/><text class=\"legend\" x=\"{:.1}\" y=\"{:.1}\">{}</text>",
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

/// The unit of the latency axis: its labels are numbers in it, its title names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Unit {
    Micros,
    Millis,
    Seconds,
}

impl Unit {
    /// The unit for an axis from 10^`elo` µs to 10^`ehi` µs: µs when it ends by 1 ms, s when
    /// it starts at 1 s or more, ms otherwise.
    fn for_range(elo: i32, ehi: i32) -> Unit {
        if ehi <= 3 {
            Unit::Micros
        } else if elo >= 6 {
            Unit::Seconds
        } else {
            Unit::Millis
        }
    }

    fn name(self) -> &'static str {
        match self {
            Unit::Micros => "µs",
            Unit::Millis => "ms",
            Unit::Seconds => "s",
        }
    }

    /// 10^this µs is one unit.
    fn exponent(self) -> i32 {
        match self {
            Unit::Micros => 0,
            Unit::Millis => 3,
            Unit::Seconds => 6,
        }
    }

    /// `m`·10^`e` µs written in this unit, exactly: `0.02`, `5`, `1000`.
    fn format(self, m: u32, e: i32) -> String {
        let k = e - self.exponent();
        if k >= 0 {
            (u64::from(m) * 10_u64.pow(k.unsigned_abs())).to_string()
        } else {
            let places = k.unsigned_abs() as usize;
            format!("{:.places$}", f64::from(m) * 10_f64.powi(k))
        }
    }
}

/// One grid line of the latency axis.
#[derive(Debug)]
struct Tick {
    /// Its offset from the panel's left edge, in px.
    x: f64,
    /// Its label, when there is room for it.
    label: Option<String>,
}

/// The logarithmic latency axis of a panel `width` px wide, from 10^`elo` µs to 10^`ehi` µs.
#[derive(Debug)]
struct Axis {
    elo: i32,
    ehi: i32,
    width: f64,
    unit: Unit,
    /// Grid lines at 1, 2 and 5 of every decade; the labelled ones are the densest of 1-2-5,
    /// decades, every other decade, ... whose labels are all at least [`LABEL_GAP`] apart.
    ticks: Vec<Tick>,
}

impl Axis {
    fn new(elo: i32, ehi: i32, width: f64) -> Axis {
        let ehi = ehi.max(elo + 1);
        let unit = Unit::for_range(elo, ehi);
        let mut axis = Axis {
            elo,
            ehi,
            width,
            unit,
            ticks: Vec::new(),
        };
        let candidates = (elo..=ehi).flat_map(|e| [1, 2, 5].map(|m| (m, e)));
        let grid: Vec<(u32, i32)> = candidates.filter(|&(m, e)| m == 1 || e < ehi).collect();
        // Labelled subsets, densest first: 1-2-5, then every `step`-th decade.
        let labelled = |step: i32| {
            move |&(m, e): &(u32, i32)| {
                if step == 0 {
                    true
                } else {
                    m == 1 && (e - elo) % step == 0
                }
            }
        };
        let fits = |keep: &dyn Fn(&(u32, i32)) -> bool| {
            let labels: Vec<(f64, f64)> = grid
                .iter()
                .filter(|t| keep(t))
                .map(|&(m, e)| {
                    let x = axis.x(f64::from(m) * 10_f64.powi(e));
                    (x, label_width(&unit.format(m, e)))
                })
                .collect();
            labels
                .windows(2)
                .all(|w| w[1].0 - w[0].0 >= (w[0].1 + w[1].1) / 2.0 + LABEL_GAP)
        };
        let step = (0..=(ehi - elo))
            .find(|&step| fits(&labelled(step)))
            .unwrap_or(ehi - elo);
        let keep = labelled(step);
        axis.ticks = grid
            .iter()
            .map(|&(m, e)| {
                let us = f64::from(m) * 10_f64.powi(e);
                Tick {
                    x: axis.x(us),
                    label: keep(&(m, e)).then(|| unit.format(m, e)),
                }
            })
            .collect();
        axis
    }

    /// The offset of `us` from the panel's left edge, in px (clamped to the axis).
    fn x(&self, us: f64) -> f64 {
        let (lo, hi) = (f64::from(self.elo), f64::from(self.ehi));
        (us.max(10_f64.powi(self.elo)).log10().min(hi) - lo) / (hi - lo) * self.width
    }
}

/// About how wide `text` is at [`FONT`] px in a sans-serif face, erring wide: narrow glyphs
/// (`.`, `i`, `l`, punctuation, space) 0.35 em, the rest (digits are all as wide as `0`)
/// 0.65 em.
fn label_width(text: &str) -> f64 {
    text.chars()
        .map(|c| {
            if ".,:;()'!|il ".contains(c) {
                0.35
            } else {
                0.65
            }
        })
        .sum::<f64>()
        * FONT
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

    /// The `<text class="{class}" x=".." y="..">..</text>` elements: (x, y, text).
    fn texts(svg: &str, class: &str) -> Vec<(f64, f64, String)> {
        let attr = |element: &str, name: &str| -> f64 {
            let start =
                element.find(&format!(" {name}=\"")).expect("the attribute") + name.len() + 3;
            let len = element[start..].find('"').expect("its end");
            element[start..start + len].parse().expect("a number")
        };
        svg.split(&format!("<text class=\"{class}\""))
            .skip(1)
            .map(|rest| {
                let element = &rest[..rest.find("</text>").expect("closed")];
                let text = &element[element.find('>').expect("the tag's end") + 1..];
                (attr(element, "x"), attr(element, "y"), text.to_owned())
            })
            .collect()
    }

    /// Samples from `lo` to `hi` µs, geometrically spaced.
    fn spread(name: &str, lo: f64, hi: f64) -> Metric {
        let n = 50;
        let samples = (0..n)
            .map(|k| lo * (hi / lo).powf(f64::from(k) / f64::from(n - 1)))
            .collect();
        Metric::from_samples_us(name, samples)
    }

    #[test]
    fn tick_labels_are_at_least_their_widths_apart() {
        for elo in -1..=6 {
            for span in 1..=9 {
                let axis = Axis::new(elo, elo + span, PANEL_W);
                let labels: Vec<(f64, String)> = axis
                    .ticks
                    .iter()
                    .filter_map(|t| t.label.clone().map(|l| (t.x, l)))
                    .collect();
                assert!(labels.len() >= 2, "{elo}+{span}: {labels:?}");
                for pair in labels.windows(2) {
                    let [(x1, l1), (x2, l2)] = pair else {
                        unreachable!()
                    };
                    let room = (label_width(l1) + label_width(l2)) / 2.0 + LABEL_GAP;
                    assert!(
                        x2 - x1 >= room,
                        "{elo}+{span}: {l1} at {x1:.1}, {l2} at {x2:.1}"
                    );
                }
            }
        }
        // With room, 2 and 5 are labelled too; on five decades, the decades alone.
        let labels = |elo, ehi| -> Vec<String> {
            let axis = Axis::new(elo, ehi, PANEL_W);
            axis.ticks.into_iter().filter_map(|t| t.label).collect()
        };
        assert_eq!(labels(2, 4), ["0.1", "0.2", "0.5", "1", "2", "5", "10"]);
        assert_eq!(labels(1, 6), ["0.01", "0.1", "1", "10", "100", "1000"]);
    }

    #[test]
    fn the_rendered_tick_labels_do_not_overlap_and_are_in_the_axis_unit() {
        // The run that drew "5ms10ms20ms" under "latency (µs, ...)": 50 µs to 104 ms.
        let metrics = [
            spread("raw_get", 50.0, 2_000.0),
            spread("election_failover", 500.0, 103_894.0),
        ];
        let svg = render("test", &metrics);
        let titles = texts(&svg, "axis-title");
        assert_eq!(titles.len(), 2, "{svg}");
        assert!(
            titles.iter().all(|t| t.2 == "latency (ms, log scale)"),
            "{titles:?}"
        );
        let ticks = texts(&svg, "tick");
        assert!(ticks.len() >= 8, "{ticks:?}");
        for pair in ticks.windows(2) {
            let [(x1, _, l1), (x2, _, l2)] = pair else {
                unreachable!()
            };
            if x2 > x1 {
                let room = (label_width(l1) + label_width(l2)) / 2.0 + LABEL_GAP;
                assert!(
                    x2 - x1 >= room,
                    "{l1} at {x1:.1} too close to {l2} at {x2:.1}"
                );
            }
        }
        // Every label is a bare number in ms, at the place of that many ms.
        let first_panel: Vec<_> = ticks.iter().filter(|t| t.0 <= LEFT + PANEL_W).collect();
        let (elo, ehi) = (1.0, 6.0); // 10 µs to 1 s
        for (x, _, label) in first_panel {
            let ms: f64 = label
                .parse()
                .unwrap_or_else(|_| panic!("{label:?} is a bare number"));
            let expected = LEFT + ((ms * 1e3).log10() - elo) / (ehi - elo) * PANEL_W;
            assert!(
                (x - expected).abs() < 0.1,
                "{label} ms drawn at {x}, not {expected}"
            );
        }
    }

    #[test]
    fn the_axis_unit_follows_the_range() {
        let title_and_ticks = |lo: f64, hi: f64| {
            let svg = render("test", &[spread("raw_get", lo, hi)]);
            let title = texts(&svg, "axis-title")[0].2.clone();
            let ticks: Vec<String> = texts(&svg, "tick")
                .into_iter()
                .filter(|t| t.0 <= LEFT + PANEL_W)
                .map(|t| t.2)
                .collect();
            (title, ticks)
        };
        assert_eq!(
            title_and_ticks(20.0, 800.0),
            (
                "latency (µs, log scale)".to_owned(),
                ["10", "20", "50", "100", "200", "500", "1000"]
                    .map(String::from)
                    .to_vec()
            )
        );
        let (title, ticks) = title_and_ticks(300.0, 40_000.0);
        assert_eq!(title, "latency (ms, log scale)");
        assert_eq!(ticks.first().map(String::as_str), Some("0.1"));
        assert_eq!(ticks.last().map(String::as_str), Some("100"));
        let (title, ticks) = title_and_ticks(2e6, 3e7);
        assert_eq!(title, "latency (s, log scale)");
        assert_eq!(ticks.first().map(String::as_str), Some("1"));
        assert_eq!(ticks.last().map(String::as_str), Some("100"));
    }

    #[test]
    fn the_legend_is_under_the_panels_off_the_curves() {
        // Ours and Curator's, with six-digit p50s: the longest legend lines.
        let metrics: Vec<Metric> = RAW
            .iter()
            .map(|name| (name, "java"))
            .chain(LOCK.iter().map(|name| (name, "curator")))
            .flat_map(|(name, client)| {
                let reference = Metric {
                    reference: Some(client),
                    ..spread(&format!("{name}@{client}"), 200_000.0, 900_000.0)
                };
                [spread(name, 100_000.0, 800_000.0), reference]
            })
            .collect();
        let svg = render("test", &metrics);
        let legend = texts(&svg, "legend");
        assert_eq!(legend.len(), RAW.len() + LOCK.len(), "{svg}");
        let bottom = TOP + PANEL_H;
        let below = bottom + AXIS_TITLE_DY;
        assert!(legend.iter().all(|l| l.1 > below), "{legend:?}");
        let height: f64 = {
            let start = svg.find("height=\"").expect("the height") + 8;
            svg[start..start + svg[start..].find('"').expect("its end")]
                .parse()
                .expect("a number")
        };
        assert!(
            legend.iter().all(|l| l.1 + 4.0 <= height),
            "{legend:?} in {height}"
        );
        // Every curve stays in its panel.
        for polyline in svg.split("points=\"").skip(1) {
            let points = &polyline[..polyline.find('"').expect("closed")];
            for point in points.split(' ') {
                let (_, y) = point.split_once(',').expect("x,y");
                let y: f64 = y.parse().expect("a number");
                assert!((TOP..=bottom).contains(&y), "{point}");
            }
        }
        // And the legend fits its panel's width (the left one's ends before the right panel).
        let width = LEFT + 2.0 * PANEL_W + GAP + 30.0;
        assert!(svg.contains(&format!("width=\"{width}\"")), "{svg}");
        assert!(
            legend.iter().any(|l| l.2.contains("dashed: Curator")),
            "{legend:?}"
        );
        for (x, _, text) in &legend {
            // The left panel's up to the right panel, the right one's within the picture.
            let right = if *x < LEFT + PANEL_W {
                LEFT + PANEL_W + GAP
            } else {
                width
            };
            assert!(x + label_width(text) <= right, "{text} overflows");
        }
    }
}
