//! `scale.md`: S7's figures per point and server, the ratios ours/peer, the targets at
//! the largest topics point, and the cores used in every phase.

use std::fmt::Write as _;

use super::{median, thousands, Axis, Churn, ChurnRound, PointReport, ScaleReport, ScaleServer};
use crate::server::Kind;
use crate::stats::Summary;

/// One row of a point table: a label, how many decimals, and the figure of a server.
struct Row {
    label: &'static str,
    digits: usize,
    value: fn(&ScaleServer, &PointReport) -> Option<f64>,
}

fn lat(s: Option<&Summary>, f: fn(&Summary) -> u64) -> Option<f64> {
    s.filter(|s| s.ok > 0).map(|s| f(s) as f64 / 1e3)
}

fn mib(kib: u64) -> Option<f64> {
    (kib > 0).then(|| kib as f64 / 1024.0)
}

/// Steady RSS above the empty process, per (topic, broker) pair.
fn bytes_per_pair(s: &ScaleServer, p: &PointReport) -> Option<f64> {
    (s.rss_steady_kib > s.rss_empty_kib && p.point.pairs() > 0)
        .then(|| (s.rss_steady_kib - s.rss_empty_kib) as f64 * 1024.0 / p.point.pairs() as f64)
}

/// The highest RSS sampled (cold start or either churn) over the steady RSS.
fn peak_over_steady(s: &ScaleServer) -> Option<f64> {
    let peak = [
        s.rss_cold_peak_kib,
        s.churn_version.as_ref().map_or(0, |c| c.rss_peak_kib),
        s.churn_change.as_ref().map_or(0, |c| c.rss_peak_kib),
    ]
    .into_iter()
    .max()?;
    (s.rss_steady_kib > 0 && peak > 0).then(|| peak as f64 / s.rss_steady_kib as f64)
}

fn errors(s: &Summary) -> Option<f64> {
    Some(s.error_count() as f64)
}

const ROWS: &[Row] = &[
    Row {
        label: "cold start: all brokers registered (s)",
        digits: 2,
        value: |s, _| s.cold_start_secs,
    },
    Row {
        label: "… registration p50 (ms)",
        digits: 0,
        value: |s, _| lat(Some(&s.cold), |x| x.p50_us),
    },
    Row {
        label: "… registration p99 (ms)",
        digits: 0,
        value: |s, _| lat(Some(&s.cold), |x| x.p99_us),
    },
    Row { label: "… failed registrations", digits: 0, value: |s, _| errors(&s.cold) },
    Row {
        label: "one 10k-topic registration, new table (ms)",
        digits: 1,
        value: |s, _| median(&s.probe.new_ms),
    },
    Row { label: "… changed table (ms)", digits: 1, value: |s, _| median(&s.probe.changed_ms) },
    Row {
        label: "… unchanged table, DataVersion bumped (ms)",
        digits: 1,
        value: |s, _| median(&s.probe.unchanged_ms),
    },
    Row {
        label: "calm reads (req/s)",
        digits: 0,
        value: |s, _| s.calm.as_ref().filter(|x| x.ok > 0).map(|x| x.qps),
    },
    Row {
        label: "calm reads p99 (ms)",
        digits: 2,
        value: |s, _| lat(s.calm.as_ref(), |x| x.p99_us),
    },
    Row {
        label: "DataVersion churn: reads (req/s)",
        digits: 0,
        value: |s, _| s.churn_version.as_ref().map(|x| x.reads.qps),
    },
    Row {
        label: "… reads p99 (ms)",
        digits: 2,
        value: |s, _| lat(s.churn_version.as_ref().map(|x| &x.reads), |x| x.p99_us),
    },
    Row {
        label: "… registrations applied (/s)",
        digits: 1,
        value: |s, _| s.churn_version.as_ref().map(|x| x.registrations.qps),
    },
    Row {
        label: "… registration p50 (ms)",
        digits: 1,
        value: |s, _| lat(s.churn_version.as_ref().map(|x| &x.registrations), |x| x.p50_us),
    },
    Row {
        label: "… registration p99 (ms)",
        digits: 1,
        value: |s, _| lat(s.churn_version.as_ref().map(|x| &x.registrations), |x| x.p99_us),
    },
    Row {
        label: "… registration max (ms)",
        digits: 1,
        value: |s, _| lat(s.churn_version.as_ref().map(|x| &x.registrations), |x| x.max_us),
    },
    Row {
        label: "… failed registrations",
        digits: 0,
        value: |s, _| s.churn_version.as_ref().and_then(|x| errors(&x.registrations)),
    },
    Row {
        label: "1 % change churn: reads (req/s)",
        digits: 0,
        value: |s, _| s.churn_change.as_ref().map(|x| x.reads.qps),
    },
    Row {
        label: "… reads p99 (ms)",
        digits: 2,
        value: |s, _| lat(s.churn_change.as_ref().map(|x| &x.reads), |x| x.p99_us),
    },
    Row {
        label: "… registrations applied (/s)",
        digits: 1,
        value: |s, _| s.churn_change.as_ref().map(|x| x.registrations.qps),
    },
    Row {
        label: "… registration p50 (ms)",
        digits: 1,
        value: |s, _| lat(s.churn_change.as_ref().map(|x| &x.registrations), |x| x.p50_us),
    },
    Row {
        label: "… registration p99 (ms)",
        digits: 1,
        value: |s, _| lat(s.churn_change.as_ref().map(|x| &x.registrations), |x| x.p99_us),
    },
    Row {
        label: "… registration max (ms)",
        digits: 1,
        value: |s, _| lat(s.churn_change.as_ref().map(|x| &x.registrations), |x| x.max_us),
    },
    Row {
        label: "… failed registrations",
        digits: 0,
        value: |s, _| s.churn_change.as_ref().and_then(|x| errors(&x.registrations)),
    },
    Row { label: "RSS empty (MiB)", digits: 1, value: |s, _| mib(s.rss_empty_kib) },
    Row {
        label: "RSS steady, table in place (MiB)",
        digits: 1,
        value: |s, _| mib(s.rss_steady_kib),
    },
    Row { label: "RSS peak, cold start (MiB)", digits: 1, value: |s, _| mib(s.rss_cold_peak_kib) },
    Row {
        label: "RSS peak, DataVersion churn (MiB)",
        digits: 1,
        value: |s, _| s.churn_version.as_ref().and_then(|x| mib(x.rss_peak_kib)),
    },
    Row {
        label: "RSS peak, 1 % change churn (MiB)",
        digits: 1,
        value: |s, _| s.churn_change.as_ref().and_then(|x| mib(x.rss_peak_kib)),
    },
    Row {
        label: "steady RSS above empty per (topic, broker) pair (bytes)",
        digits: 0,
        value: bytes_per_pair,
    },
    Row { label: "peak RSS ÷ steady RSS", digits: 2, value: |s, _| peak_over_steady(s) },
    Row {
        label: "route snapshot (MB)",
        digits: 1,
        value: |s, _| s.snapshot.as_ref().map(|x| x.bytes as f64 / 1e6),
    },
    Row {
        label: "route snapshot write, median (ms)",
        digits: 0,
        value: |s, _| s.snapshot.as_ref().and_then(|x| median(&x.writes_ms)),
    },
    Row {
        label: "restart to every route served (ms)",
        digits: 0,
        value: |s, _| s.snapshot.as_ref().and_then(|x| x.restart_ms),
    },
];

fn fmt(v: Option<f64>, digits: usize) -> String {
    v.map_or("–".to_owned(), |v| crate::report::fmt_num(v, digits))
}

/// `scale.md`.
pub fn markdown(r: &ScaleReport) -> String {
    let mut md = String::new();
    heading(&mut md, r);
    targets(&mut md, r);
    for (axis, title) in [(Axis::Topics, "Topics grow"), (Axis::Brokers, "Brokers grow")] {
        let points: Vec<&PointReport> = r.points.iter().filter(|p| p.point.axis == axis).collect();
        if !points.is_empty() {
            point_table(&mut md, title, &points);
        }
    }
    cpu_table(&mut md, r);
    setup(&mut md, r);
    md
}

fn heading(md: &mut String, r: &ScaleReport) {
    let e = &r.env;
    let _ = writeln!(
        md,
        "# Scale benchmark (S7, issue #25){}\n",
        if e.quick { " (quick smoke run — sizes reduced, not for comparison)" } else { "" }
    );
    let _ = writeln!(
        md,
        "Commit `{}`{}, {} — {} ({} cores), Linux {}. Generated by `bench/run --scenarios S7`; raw figures in `scale.json`, chart in `scale.svg`. \
         Load average (1/5/15 min) before: {}, after: {}; wall time {:.0} s.\n",
        e.commit,
        if e.dirty { " (with uncommitted changes)" } else { "" },
        e.date,
        e.cpu,
        e.cores,
        e.kernel,
        e.loadavg_before,
        e.loadavg_after,
        e.wall_secs
    );
    let _ = writeln!(
        md,
        "**The load generator and the server under test share the machine's {} cores.** At each point every server is started fresh and measured alone, \
         the order rotated from point to point; ratios are ours/peer from the same run.\n",
        e.cores
    );
}

/// A target's name and, when measured, what was measured and whether it was met.
type Verdict = (String, Option<(String, bool)>);

/// The churn targets, for both kinds of churn. With rounds (see [`ChurnRound`]), each round's
/// reads are compared with the calm reads just before them and the median round is judged,
/// every round listed; without (a run from before rounds), with the point's calm reads.
fn churn_targets(ours: &ScaleServer) -> Vec<Verdict> {
    let mut out = Vec::new();
    for (name, churn) in [("DataVersion", &ours.churn_version), ("1 % change", &ours.churn_change)]
    {
        let c = churn.as_ref();
        // A churn of one round is judged as before rounds (below): no rounds here.
        let rounds = c.map_or(&[][..], |c| &c.rounds[..]);
        let rounds = if rounds.len() > 1 { rounds } else { &[] };
        // The median of a figure over the rounds, and the text listing every round's; `unit`
        // is "×" for a ratio to the round's own calm reads.
        let each = |f: fn(&ChurnRound) -> Option<f64>, unit: &str| -> Option<(f64, String)> {
            let values: Vec<f64> = rounds.iter().map(f).collect::<Option<_>>()?;
            let mid = median(&values)?;
            let listed: Vec<String> = values.iter().map(|v| format!("{v:.2}")).collect();
            let paired =
                if unit == "×" { ", each against the calm reads just before it" } else { "" };
            let text =
                format!("median of {} rounds: {}{unit}{paired}", values.len(), listed.join(", "));
            Some((mid, text))
        };
        let registration_p99 = |r: &ChurnRound| lat(Some(&r.registrations), |x| x.p99_us);
        out.push((
            format!("{name} churn: registration p99 ≤ 100 ms"),
            c.map(|c| match each(registration_p99, " ms") {
                Some((p, text)) => (format!("{p:.1} ms ({text})"), p <= 100.0),
                None => match lat(Some(&c.registrations), |x| x.p99_us) {
                    Some(p) => (format!("{p:.1} ms"), p <= 100.0),
                    // Registrations are counted when answered: none was, in the whole phase.
                    None => (
                        format!("no registration answered in the {:.0} s measured", c.reads.secs),
                        false,
                    ),
                },
            }),
        ));
        out.push((
            format!("{name} churn: read p99 ≤ 2× calm p99"),
            c.and_then(|c| match each(ChurnRound::p99_ratio, "×") {
                Some((ratio, text)) => Some((format!("{ratio:.2}× ({text})"), ratio <= 2.0)),
                None => {
                    let (a, b) =
                        (lat(Some(&c.reads), |x| x.p99_us)?, lat(calm_of(ours, c), |x| x.p99_us)?);
                    Some((format!("{:.2}× ({a:.2} vs {b:.2} ms)", a / b), a <= 2.0 * b))
                }
            }),
        ));
        out.push((
            format!("{name} churn: read QPS ≥ 0.6× calm"),
            c.and_then(|c| match each(ChurnRound::qps_ratio, "×") {
                Some((ratio, text)) => Some((format!("{ratio:.2}× ({text})"), ratio >= 0.6)),
                None => {
                    let calm = calm_of(ours, c)?.qps;
                    Some((
                        format!("{:.2}× ({:.0} vs {calm:.0})", c.reads.qps / calm, c.reads.qps),
                        c.reads.qps >= 0.6 * calm,
                    ))
                }
            }),
        ));
    }
    out
}

/// The calm reads a one-round churn is compared with: its round's, else the point's.
fn calm_of<'a>(ours: &'a ScaleServer, c: &'a Churn) -> Option<&'a Summary> {
    c.rounds.first().map(|r| &r.calm).or(ours.calm.as_ref())
}

/// The targets, at the largest point of the topics axis.
fn targets(md: &mut String, r: &ScaleReport) {
    let Some(top) =
        r.points.iter().filter(|p| p.point.axis == Axis::Topics).max_by_key(|p| p.point.topics())
    else {
        return;
    };
    // The reference of the growth target: the 40,000-topic table (issue #25's words: "within
    // 1.5× of the same registration at 40k topics", S1-S6's size) when the run measured it,
    // else the smallest smaller table (none when the run had one point only). The smallest is
    // reported beside it.
    let smaller = || {
        r.points
            .iter()
            .filter(|p| p.point.axis == Axis::Topics && p.point.topics() < top.point.topics())
    };
    let small = smaller().min_by_key(|p| p.point.topics());
    let reference = smaller().find(|p| p.point.topics() == 40_000).or(small);
    let (Some(ours), java) = (top.server(Kind::Ours), top.server(Kind::Java)) else { return };
    let _ = writeln!(
        md,
        "## Targets (issue #25) at {}\n\n| target | measured | met |\n|---|---|---|",
        top.point.label()
    );
    let mut row = |name: &str, measured: Option<(String, bool)>| {
        let (m, v) = measured.map_or(("not measured".to_owned(), "not measured"), |(m, ok)| {
            (m, if ok { "**met**" } else { "**NOT met**" })
        });
        let _ = writeln!(md, "| {name} | {m} | {v} |");
    };
    row(
        "cold start ≥ 3× faster than Java's",
        java.and_then(|j| {
            let (a, b) = (ours.cold_start_secs?, j.cold_start_secs?);
            let each = |v: &[f64]| v.iter().map(|t| format!("{t:.2}")).collect::<Vec<_>>();
            let runs = match ours.cold_starts_secs.len() {
                0 | 1 => String::new(),
                n => format!(
                    "; medians of {n}: ours {} s, Java {} s",
                    each(&ours.cold_starts_secs).join(", "),
                    each(&j.cold_starts_secs).join(", ")
                ),
            };
            Some((format!("{:.2}× ({a:.2} s vs {b:.2} s{runs})", b / a), b / a >= 3.0))
        }),
    );
    for (name, measured) in churn_targets(ours) {
        row(&name, measured);
    }
    let changed_at = |p: &PointReport| median(&p.server(Kind::Ours)?.probe.changed_ms);
    row(
        "one 10k-topic registration (changed table) within 1.5× of the same at 40,000 topics",
        reference.and_then(|s| {
            let (a, b) = (median(&ours.probe.changed_ms)?, changed_at(s)?);
            let also = small.filter(|m| m.point.topics() != s.point.topics()).and_then(|m| {
                let c = changed_at(m)?;
                Some(format!(
                    "; {:.2}× the {c:.1} ms at {} topics",
                    a / c,
                    thousands(m.point.topics())
                ))
            });
            Some((
                format!(
                    "{:.2}× ({a:.1} ms vs {b:.1} ms at {} topics{})",
                    a / b,
                    thousands(s.point.topics()),
                    also.unwrap_or_default()
                ),
                a <= 1.5 * b,
            ))
        }),
    );
    row(
        "steady RSS ≤ 128 bytes per (topic, broker) pair above the empty process",
        bytes_per_pair(ours, top).map(|b| (format!("{b:.0} bytes"), b <= 128.0)),
    );
    row("peak RSS ≤ 1.5× steady", peak_over_steady(ours).map(|x| (format!("{x:.2}×"), x <= 1.5)));
    let snap = ours.snapshot.as_ref();
    row(
        "route snapshot ≤ 1/4 of 233 MB (the issue's figure)",
        snap.map(|s| (format!("{:.1} MB", s.bytes as f64 / 1e6), s.bytes as f64 <= 233e6 / 4.0)),
    );
    row(
        "restart to serving every route ≤ 2 s",
        snap.and_then(|s| s.restart_ms).map(|m| (format!("{m:.0} ms"), m <= 2_000.0)),
    );
    md.push('\n');
}

fn point_table(md: &mut String, title: &str, points: &[&PointReport]) {
    let kinds: Vec<Kind> = [Kind::Ours, Kind::Java, Kind::RocketmqRust]
        .into_iter()
        .filter(|k| points.iter().any(|p| p.server(*k).is_some()))
        .collect();
    let peers: Vec<Kind> = kinds.iter().copied().filter(|k| *k != Kind::Ours).collect();
    let _ = writeln!(md, "## {title}\n");
    for p in points {
        let _ = writeln!(
            md,
            "- `{}`: {} ({} KiB per registration)",
            p.point.name,
            p.point.label(),
            p.body_kib
        );
    }
    let _ = write!(md, "\n| |");
    for p in points {
        for k in &kinds {
            let _ = write!(md, " {} {} |", p.point.name, k.label());
        }
        for k in &peers {
            let _ = write!(md, " ours/{} |", k.label());
        }
    }
    let _ = write!(md, "\n|---|");
    for _ in 0..points.len() * (kinds.len() + peers.len()) {
        md.push_str("---:|");
    }
    md.push('\n');
    for row in ROWS {
        let _ = write!(md, "| {} |", row.label);
        for p in points {
            let ours = p.server(Kind::Ours).and_then(|s| (row.value)(s, p));
            for k in &kinds {
                let v = p.server(*k).and_then(|s| (row.value)(s, p));
                let _ = write!(md, " {} |", fmt(v, row.digits));
            }
            for k in &peers {
                let v = p.server(*k).and_then(|s| (row.value)(s, p));
                let cell = match (ours, v) {
                    (Some(a), Some(b)) if b != 0.0 => format!("{:.2}×", a / b),
                    _ => String::new(),
                };
                let _ = write!(md, " {cell} |");
            }
        }
        md.push('\n');
    }
    md.push('\n');
}

fn cpu_table(md: &mut String, r: &ScaleReport) {
    let _ = writeln!(
        md,
        "## CPU during the measured phases\n\nCores used (of {}) by the server under test, the load generator and every other process.\n\n| server | phase | server | generator | others |\n|---|---|---:|---:|---:|",
        r.env.cores
    );
    for p in &r.points {
        for s in &p.servers {
            for c in &s.cpu {
                let flag = if c.other_cores > 0.3 { " ⚠" } else { "" };
                let _ = writeln!(
                    md,
                    "| {} | {} | {:.2} | {:.2} | {:.2}{flag} |",
                    s.kind.label(),
                    c.phase,
                    c.server_cores,
                    c.generator_cores,
                    c.other_cores
                );
            }
        }
    }
    md.push('\n');
}

fn setup(md: &mut String, r: &ScaleReport) {
    let z = &r.sizes;
    let _ = writeln!(md, "## Set-up\n");
    let _ = writeln!(md, "- Points: topics axis 2 brokers per cluster × 10,000 topics per cluster (10k, 40k, 100k, 1M topics); brokers axis 2 brokers per cluster × 500 topics (32, 200, 2,000 brokers). Every broker registers like a Java 5.x broker: uncompressed JSON `RegisterBrokerBody`, 8 read/8 write queues per topic, perm 6, header version 479, `bodyCrc32`, its own connection.");
    let _ = writeln!(md, "- Cold start: a fresh server, every broker registers once, {} registrations in flight; from the first request to the last answer. A refused or timed-out registration counts as a failure. {} cold start(s) per server, each against a fresh instance, the median reported; the last instance goes on to the other phases.", z.in_flight, z.cold_starts);
    let _ = writeln!(md, "- One 10k-topic registration: a probe broker of {} new topics registers its table (new), the same topics with 4 queues each (changed, applied in full), the same again with the DataVersion bumped (unchanged), then unregisters; {} repetition(s), median. On a calm server.", thousands(z.probe_topics), z.probe_reps);
    let _ = writeln!(md, "- Reads: {} connections × {} in flight, uniformly random topics of the whole table (the lean pipelined reader of S1), {} ms warm-up, {} ms measured.", z.conns, z.depth, z.warmup_ms, z.measure_ms);
    let _ = writeln!(md, "- Churn (both kinds): reads as above while every broker re-registers its whole table after a random 0–{} ms pause, in a loop. DataVersion churn: the table unchanged, the DataVersion bumped (Java's `GetRouteInfoBenchmark`). 1 % change churn: each re-registration toggles 1 % of the broker's topics against its previous one (8 ↔ 4 queues; 3 % of those renamed, i.e. one topic removed and one added), the body patched in place from its pre-encoded form.", z.churn_ms);
    let _ = writeln!(md, "- Churn rounds: at the point with the most topics each churn runs {} times, each time just after calm reads of its own; a churn's ratios to calm are each round's against its own calm reads, the targets judge the median round, and the point table shows the round with the median read ratio (elsewhere one round, against the point's calm reads). One 10-s window's reads here can differ from the next by a fifth either way.", z.churn_rounds);
    let _ = writeln!(md, "- RSS: VmRSS of the server process (the JVM for Java), sampled every 50–100 ms during the cold start and the churns.");
    let _ = writeln!(md, "- Route snapshot (ours): the size of `routes.snapshot` once the writer has caught up after the churns; write times are the lifetimes of the `route-snapshot` writer thread (polled every 2 ms). Restart: the server killed (SIGKILL), started again on the same directory; spawn to every cluster's last topic answered.");
    for (name, v) in &r.env.versions {
        let _ = writeln!(md, "- {name}: {v}");
    }
    let _ = writeln!(md, "- Java runtime: {}", r.env.java);
    let failures: Vec<String> = r
        .points
        .iter()
        .flat_map(|p| {
            p.servers.iter().flat_map(move |s| {
                s.failures.iter().map(move |f| {
                    format!("{} {}: {}", p.point.name, s.kind.label(), f.replace('\n', " "))
                })
            })
        })
        .collect();
    if !failures.is_empty() {
        let _ = writeln!(md, "\n## Failures\n");
        for f in failures {
            let _ = writeln!(md, "- {f}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scale::{Point, ScaleSizes};

    fn point(name: &str, changed_ms: f64) -> PointReport {
        let mut ours = ScaleServer::new(Kind::Ours);
        ours.probe.changed_ms = vec![changed_ms; 3];
        let point = Point::all().into_iter().find(|p| p.name == name).expect("a point");
        PointReport { point, body_kib: 0, servers: vec![ours] }
    }

    fn growth_row(points: Vec<PointReport>) -> String {
        let r = ScaleReport { env: Default::default(), sizes: ScaleSizes::quick(), points };
        let mut md = String::new();
        targets(&mut md, &r);
        md.lines().find(|l| l.contains("one 10k-topic registration")).expect("the row").to_owned()
    }

    /// Issue #25's growth target is against the 40,000-topic table when the run measured it;
    /// the smallest table is reported beside it, and is the reference without a 40k point.
    #[test]
    fn the_growth_target_is_against_40k_topics_with_the_smallest_beside_it() {
        let row = growth_row(vec![point("t10k", 20.0), point("t40k", 24.0), point("t1m", 33.0)]);
        assert!(
            row.contains(
                "1.38× (33.0 ms vs 24.0 ms at 40,000 topics; 1.65× the 20.0 ms at 10,000 topics)"
            ),
            "{row}"
        );
        assert!(row.ends_with("**met** |"), "{row}");
        let row = growth_row(vec![point("t10k", 20.0), point("t1m", 33.0)]);
        assert!(row.contains("1.65× (33.0 ms vs 20.0 ms at 10,000 topics)"), "{row}");
        assert!(row.ends_with("**NOT met** |"), "{row}");
    }

    fn summary(qps: f64, p99_ms: u64) -> Summary {
        Summary { ok: 1_000, secs: 10.0, qps, p99_us: p99_ms * 1_000, ..Summary::default() }
    }

    fn target<'a>(verdicts: &'a [Verdict], name: &str) -> &'a (String, bool) {
        let found = verdicts.iter().find(|(n, _)| n.starts_with(name)).expect("the target");
        found.1.as_ref().expect("measured")
    }

    /// With rounds, each churn round is compared with its own calm reads and the median round
    /// is judged (not the point's calm, not the mean); the point table shows the median round.
    #[test]
    fn a_churn_in_rounds_is_judged_by_its_median_round() {
        let round = |calm: f64, churn: f64, p99: (u64, u64), registration_p99_ms: u64| ChurnRound {
            calm: summary(calm, p99.0),
            reads: summary(churn, p99.1),
            registrations: summary(190.0, registration_p99_ms),
        };
        let rounds = vec![
            round(250_000.0, 120_000.0, (6, 14), 90),
            round(200_000.0, 150_000.0, (6, 11), 40),
            round(260_000.0, 170_000.0, (5, 9), 120),
        ];
        let churn = Churn::of_rounds(rounds, 1);
        assert_eq!(churn.reads.qps, 170_000.0, "the round of the median read ratio (0.65×)");
        let mut ours = ScaleServer::new(Kind::Ours);
        // The point's calm reads are not the reference of a churn in rounds.
        ours.calm = Some(summary(400_000.0, 2));
        ours.churn_change = Some(churn);
        let verdicts = churn_targets(&ours);
        let (text, met) = target(&verdicts, "1 % change churn: read QPS");
        assert!(text.starts_with("0.65× (median of 3 rounds: 0.48, 0.75, 0.65×"), "{text}");
        assert!(*met, "{text}");
        let (text, met) = target(&verdicts, "1 % change churn: read p99");
        assert!(text.starts_with("1.83× (median of 3 rounds: 2.33, 1.83, 1.80×"), "{text}");
        assert!(*met, "{text}");
        let (text, met) = target(&verdicts, "1 % change churn: registration p99");
        assert_eq!(text, "90.0 ms (median of 3 rounds: 90.00, 40.00, 120.00 ms)");
        assert!(*met, "{text}");
        // One round: against its own calm reads, as before rounds.
        let one = Churn::of_rounds(vec![round(250_000.0, 140_000.0, (6, 13), 90)], 1);
        ours.churn_change = Some(one);
        let verdicts = churn_targets(&ours);
        let (text, met) = target(&verdicts, "1 % change churn: read QPS");
        assert_eq!((text.as_str(), *met), ("0.56× (140000 vs 250000)", false));
        let (text, met) = target(&verdicts, "1 % change churn: read p99");
        assert_eq!((text.as_str(), *met), ("2.17× (13.00 vs 6.00 ms)", false));
    }

    /// The cold-start target compares the medians of each server's cold starts and lists
    /// every one of them.
    #[test]
    fn the_cold_start_target_is_the_ratio_of_the_medians() {
        let mut ours = ScaleServer::new(Kind::Ours);
        let mut java = ScaleServer::new(Kind::Java);
        for (a, b) in [(2.4, 5.1), (1.6, 7.3), (2.1, 6.0)] {
            ours.record_cold_start(a);
            java.record_cold_start(b);
        }
        assert_eq!((ours.cold_start_secs, java.cold_start_secs), (Some(2.1), Some(6.0)));
        let point = Point::all().into_iter().find(|p| p.name == "t1m").expect("a point");
        let points = vec![PointReport { point, body_kib: 0, servers: vec![ours, java] }];
        let r = ScaleReport { env: Default::default(), sizes: ScaleSizes::quick(), points };
        let mut md = String::new();
        targets(&mut md, &r);
        let row = md.lines().find(|l| l.contains("cold start ≥ 3×")).expect("the row");
        assert!(
            row.contains(
                "2.86× (2.10 s vs 6.00 s; medians of 3: ours 2.40, 1.60, 2.10 s, Java 5.10, 7.30, 6.00 s)"
            ),
            "{row}"
        );
        assert!(row.ends_with("**NOT met** |"), "{row}");
    }
}
