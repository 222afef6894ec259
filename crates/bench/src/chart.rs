//! `latest.svg`: the benchmark chart (throughput and p99 per server), drawn with plotters.

use std::path::Path;

use plotters::prelude::*;

use crate::report::ORDER;
use crate::results::{Report, ServerReport};

/// `latest.svg`: S1/S2 throughput and S1/S2 p99 per server.
pub fn chart(r: &Report, path: &Path) -> anyhow::Result<()> {
    let present: Vec<&ServerReport> = ORDER.iter().filter_map(|k| r.server(*k)).collect();
    let names: Vec<&str> = present.iter().map(|s| s.kind.label()).collect();
    let n = present.len().max(1) as f64;
    let qps = |s: &ServerReport, two: bool| {
        if two { s.s2.as_ref().map(|x| x.reads.qps) } else { s.s1.as_ref().map(|x| x.qps) }
            .unwrap_or(0.0)
    };
    let p99 = |s: &ServerReport, two: bool| {
        if two { s.s2.as_ref().map(|x| x.reads.p99_us) } else { s.s1.as_ref().map(|x| x.p99_us) }
            .map(|v| v as f64 / 1e3)
    };
    let root = SVGBackend::new(path, (1200, 520)).into_drawing_area();
    root.fill(&WHITE)?;
    let title = format!(
        "nameserver benchmark @ {} ({} cores shared with the load generator)",
        short(&r.env.commit),
        r.env.cores
    );
    let root = root.titled(&title, ("sans-serif", 20))?;
    let (left, right) = root.split_horizontally(600);
    let s1c = RGBColor(52, 101, 164);
    let s2c = RGBColor(237, 125, 49);
    let fmt_x = |x: &f64| {
        let i = x.round();
        if (x - i).abs() < 1e-6 && i >= 0.0 {
            names.get(i as usize).map_or(String::new(), |s| (*s).to_owned())
        } else {
            String::new()
        }
    };

    let ymax =
        present.iter().flat_map(|s| [qps(s, false), qps(s, true)]).fold(1.0, f64::max) * 1.15;
    let mut c = ChartBuilder::on(&left)
        .caption("throughput (req/s), S1 reads / S2 reads under churn", ("sans-serif", 16))
        .margin(12)
        .x_label_area_size(30)
        .y_label_area_size(70)
        .build_cartesian_2d(-0.5f64..(n - 0.5), 0f64..ymax)?;
    c.configure_mesh()
        .disable_x_mesh()
        .x_labels(present.len().max(1) * 2 + 1)
        .x_label_formatter(&fmt_x)
        .y_label_formatter(&|v| format!("{v:.0}"))
        .draw()?;
    for (two, color, label) in [(false, s1c, "S1"), (true, s2c, "S2")] {
        let off = if two { 0.02 } else { -0.36 };
        c.draw_series(
            present.iter().enumerate().filter(|(_, s)| !two || s.kind.is_namesrv()).map(
                |(i, s)| {
                    let x = i as f64 + off;
                    Rectangle::new([(x, 0.0), (x + 0.34, qps(s, two))], color.filled())
                },
            ),
        )?
        .label(label)
        .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], color.filled()));
        c.draw_series(present.iter().enumerate().filter(|(_, s)| qps(s, two) > 0.0).map(
            |(i, s)| {
                Text::new(
                    format!("{:.0}", qps(s, two)),
                    (i as f64 + off, qps(s, two) + ymax * 0.01),
                    ("sans-serif", 11),
                )
            },
        ))?;
    }
    c.configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperRight)
        .draw()?;

    let vals: Vec<f64> = present
        .iter()
        .flat_map(|s| [p99(s, false), p99(s, true)])
        .flatten()
        .filter(|v| *v > 0.0)
        .collect();
    let lo = vals.iter().copied().fold(f64::MAX, f64::min).min(1.0) / 2.0;
    let hi = vals.iter().copied().fold(1.0, f64::max) * 3.0;
    let mut c = ChartBuilder::on(&right)
        .caption("p99 latency (ms, log scale), S1 / S2", ("sans-serif", 16))
        .margin(12)
        .x_label_area_size(30)
        .y_label_area_size(60)
        .build_cartesian_2d(-0.5f64..(n - 0.5), (lo..hi).log_scale())?;
    c.configure_mesh()
        .disable_x_mesh()
        .x_labels(present.len().max(1) * 2 + 1)
        .x_label_formatter(&fmt_x)
        .y_label_formatter(&|v| format!("{v}"))
        .draw()?;
    for (two, color, label) in [(false, s1c, "S1"), (true, s2c, "S2")] {
        let off = if two { 0.02 } else { -0.36 };
        c.draw_series(present.iter().enumerate().filter_map(|(i, s)| {
            let v = p99(s, two)?;
            let x = i as f64 + off;
            Some(Rectangle::new([(x, lo), (x + 0.34, v)], color.filled()))
        }))?
        .label(label)
        .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], color.filled()));
        c.draw_series(present.iter().enumerate().filter_map(|(i, s)| {
            let v = p99(s, two)?;
            Some(Text::new(format!("{v:.2}"), (i as f64 + off, v * 1.08), ("sans-serif", 11)))
        }))?;
    }
    c.configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperLeft)
        .draw()?;
    root.present()?;
    Ok(())
}

fn short(commit: &str) -> &str {
    commit.get(..10).unwrap_or(commit)
}
