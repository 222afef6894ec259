//! `scale.svg`: S7's cost against table size, drawn with plotters: one 10,000-topic
//! registration (changed table) and the cold start per registration, against the (topic,
//! broker) pairs in the table, per server and axis (log–log).

use std::path::Path;

use plotters::prelude::*;

use super::{median, Axis, PointReport, ScaleReport, ScaleServer};
use crate::server::Kind;

type Figure = fn(&ScaleServer, &PointReport) -> Option<f64>;

/// One line of a panel: a server along one axis, (pairs, figure) per point.
type Series = (Kind, Axis, Vec<(f64, f64)>);

/// The server's time per cold-start registration: the whole cold start over the brokers, ms
/// (what the fleet waits per broker, with the registrations in flight overlapping).
fn cold_per_broker(s: &ScaleServer, p: &PointReport) -> Option<f64> {
    s.cold_start_secs.map(|t| t * 1e3 / p.point.brokers() as f64)
}

fn changed(s: &ScaleServer, _: &PointReport) -> Option<f64> {
    median(&s.probe.changed_ms)
}

fn churn_p99(s: &ScaleServer, _: &PointReport) -> Option<f64> {
    s.churn_change.as_ref().map(|c| c.registrations.p99_us as f64 / 1e3).filter(|v| *v > 0.0)
}

/// `scale.svg`.
pub fn chart(r: &ScaleReport, path: &Path) -> anyhow::Result<()> {
    let root = SVGBackend::new(path, (1500, 520)).into_drawing_area();
    root.fill(&WHITE)?;
    let title = format!(
        "S7: cost against table size @ {} ({} cores shared with the load generator)",
        r.env.commit.get(..10).unwrap_or(&r.env.commit),
        r.env.cores
    );
    let root = root.titled(&title, ("sans-serif", 20))?;
    let panels = root.split_evenly((1, 3));
    let figures: [(&str, Figure); 3] = [
        ("one 10k-topic registration, changed table (ms)", changed),
        ("cold start ÷ brokers (ms per registration)", cold_per_broker),
        ("1 % change churn: registration p99 (ms)", churn_p99),
    ];
    for (panel, (caption, figure)) in panels.iter().zip(figures) {
        panel_chart(panel, r, caption, figure)?;
    }
    root.present()?;
    Ok(())
}

fn panel_chart<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    r: &ScaleReport,
    caption: &str,
    figure: Figure,
) -> anyhow::Result<()>
where
    DB::ErrorType: 'static,
{
    let series: Vec<Series> = [Kind::Ours, Kind::Java]
        .into_iter()
        .flat_map(|k| [(k, Axis::Topics), (k, Axis::Brokers)])
        .map(|(k, axis)| {
            let pts = r
                .points
                .iter()
                .filter(|p| p.point.axis == axis)
                .filter_map(|p| {
                    let v = figure(p.server(k)?, p)?;
                    (v > 0.0).then_some((p.point.pairs() as f64, v))
                })
                .collect();
            (k, axis, pts)
        })
        .filter(|(_, _, pts): &(_, _, Vec<_>)| !pts.is_empty())
        .collect();
    let xs = series.iter().flat_map(|s| s.2.iter().map(|p| p.0));
    let (xlo, xhi) = xs.fold((f64::MAX, 1.0f64), |(lo, hi), x| (lo.min(x), hi.max(x)));
    let ys = series.iter().flat_map(|s| s.2.iter().map(|p| p.1));
    let (ylo, yhi) = ys.fold((f64::MAX, 1e-3f64), |(lo, hi), y| (lo.min(y), hi.max(y)));
    let (xlo, ylo) = (xlo.min(xhi) / 2.0, ylo.min(yhi) / 2.0);
    let mut c = ChartBuilder::on(area)
        .caption(caption, ("sans-serif", 15))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d((xlo..xhi * 2.0).log_scale(), (ylo..yhi * 2.0).log_scale())?;
    c.configure_mesh()
        .x_desc("(topic, broker) pairs in the table")
        .x_label_formatter(&|v| format!("{v:.0e}"))
        .y_label_formatter(&|v| format!("{v}"))
        .draw()?;
    for (kind, axis, pts) in series {
        let color = match kind {
            Kind::Ours => RGBColor(52, 101, 164),
            _ => RGBColor(237, 125, 49),
        };
        let style =
            if axis == Axis::Topics { color.stroke_width(2) } else { color.stroke_width(1) };
        let label = format!(
            "{} ({})",
            kind.label(),
            if axis == Axis::Topics { "topics grow" } else { "brokers grow" }
        );
        c.draw_series(LineSeries::new(pts.clone(), style))?
            .label(label)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 14, y)], style));
        c.draw_series(pts.iter().map(|p| Circle::new(*p, 3, color.filled())))?;
    }
    c.configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperLeft)
        .draw()?;
    Ok(())
}
