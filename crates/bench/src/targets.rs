//! The targets of issue #6 (and of #12, #14 for access control and metrics), evaluated on a
//! suite [`Report`]: one verdict each, with what was measured.

use crate::results::{Report, ServerReport};
use crate::server::Kind;
use crate::stats::Summary;

/// One verdict on one of the targets.
#[derive(Debug, Clone, PartialEq)]
pub struct Target {
    pub name: &'static str,
    /// What was measured, in words and figures.
    pub measured: String,
    /// `None` when a side of the comparison did not run.
    pub met: Option<bool>,
}

pub(crate) fn median(v: &[f64]) -> Option<f64> {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => None,
        n if n % 2 == 1 => Some(v[n / 2]),
        n => Some((v[n / 2 - 1] + v[n / 2]) / 2.0),
    }
}

pub(crate) fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

fn s1(s: Option<&ServerReport>) -> Option<&Summary> {
    s.and_then(|s| s.s1.as_ref()).filter(|x| x.ok > 0)
}

fn s2(s: Option<&ServerReport>) -> Option<&Summary> {
    s.and_then(|s| s.s2.as_ref()).map(|x| &x.reads).filter(|x| x.ok > 0)
}

/// The targets, evaluated on `r`.
pub fn targets(r: &Report) -> Vec<Target> {
    let mut out = Vec::new();
    throughput(r, &mut out);
    latency_and_memory(r, &mut out);
    big_registration(r, &mut out);
    start_up_and_metrics(r, &mut out);
    out
}

/// S1 throughput against each peer, the ceiling and ours with access control.
fn throughput(r: &Report, out: &mut Vec<Target>) {
    let ours = r.server(Kind::Ours);
    let java = r.server(Kind::Java);
    let rmq = r.server(Kind::RocketmqRust);
    let ceil = r.server(Kind::Ceiling);
    let ratio = |name, a: Option<f64>, b: Option<f64>, min: f64, unit: &str| {
        let (measured, met) = match (a, b) {
            (Some(a), Some(b)) if b > 0.0 => {
                (format!("{:.2}× ({a:.0} vs {b:.0} {unit})", a / b), Some(a / b >= min))
            }
            _ => ("not measured".to_owned(), None),
        };
        Target { name, measured, met }
    };
    out.push(ratio(
        "S1 throughput ≥ 5× Java",
        s1(ours).map(|s| s.qps),
        s1(java).map(|s| s.qps),
        5.0,
        "req/s",
    ));
    out.push(ratio(
        "S1 throughput ≥ 1.5× rocketmq-rust",
        s1(ours).map(|s| s.qps),
        s1(rmq).map(|s| s.qps),
        1.5,
        "req/s",
    ));
    out.push(ratio(
        "S1 throughput ≥ 60 % of the ceiling",
        s1(ours).map(|s| s.qps),
        s1(ceil).map(|s| s.qps),
        0.6,
        "req/s",
    ));
    out.push(ratio(
        "S1 with authenticationMode=all ≥ 85 % of S1 without (issue #14)",
        s1(r.server(Kind::OursAuth)).map(|s| s.qps),
        s1(ours).map(|s| s.qps),
        0.85,
        "req/s",
    ));
}

/// S2 p99 and S4 memory against the peers.
fn latency_and_memory(r: &Report, out: &mut Vec<Target>) {
    let ours = r.server(Kind::Ours);
    let java = r.server(Kind::Java);
    let rmq = r.server(Kind::RocketmqRust);
    let p99 = |s: Option<&Summary>| s.map(|s| s.p99_us as f64 / 1e3);
    let le = |name, a: Option<f64>, b: Option<f64>, max_ratio: f64, unit: &str| {
        let (measured, met) = match (a, b) {
            (Some(a), Some(b)) if b > 0.0 => {
                (format!("{:.3}× ({a:.2} vs {b:.2} {unit})", a / b), Some(a <= b * max_ratio))
            }
            _ => ("not measured".to_owned(), None),
        };
        Target { name, measured, met }
    };
    out.push(le("S2 p99 ≤ 1/5 of Java's", p99(s2(ours)), p99(s2(java)), 0.2, "ms"));
    out.push(le("S2 p99 within 2× of our S1 p99", p99(s2(ours)), p99(s1(ours)), 2.0, "ms"));
    let idle =
        |s: Option<&ServerReport>| s.map(|s| mib(s.mem_populated.rss_kib)).filter(|v| *v > 0.0);
    let peak = |s: Option<&ServerReport>| s.map(|s| mib(s.rss_s2_peak_kib)).filter(|v| *v > 0.0);
    out.push(le("S4 RSS (populated, idle) ≤ 1/5 of Java's", idle(ours), idle(java), 0.2, "MiB"));
    out.push(le("S4 RSS (peak under S2) ≤ 1/5 of Java's", peak(ours), peak(java), 0.2, "MiB"));
    let below = |name, a: Option<f64>, b: Option<f64>| {
        let (measured, met) = match (a, b) {
            (Some(a), Some(b)) => (format!("{a:.1} vs {b:.1} MiB"), Some(a < b)),
            _ => ("not measured".to_owned(), None),
        };
        Target { name, measured, met }
    };
    out.push(below("S4 RSS (populated, idle) below rocketmq-rust's", idle(ours), idle(rmq)));
    out.push(below("S4 RSS (peak under S2) below rocketmq-rust's", peak(ours), peak(rmq)));
}

/// S3: the 50,000-topic registration and the readers while it is applied.
fn big_registration(r: &Report, out: &mut Vec<Target>) {
    let ours = r.server(Kind::Ours);
    let s3 = ours.and_then(|s| s.s3.as_ref());
    out.push(match s3 {
        Some(s3) => {
            let worst = s3.rereg_ms.iter().copied().fold(s3.first_apply_ms, f64::max);
            Target {
                name: "S3 50,000-topic registration applied well under a second (≤ 500 ms)",
                measured: format!(
                    "first {:.0} ms (readable after {}), re-registrations {} ms; worst {worst:.0} ms",
                    s3.first_apply_ms,
                    s3.visible_ms.map_or("never".to_owned(), |v| format!("{v:.0} ms")),
                    s3.rereg_ms.iter().map(|v| format!("{v:.0}")).collect::<Vec<_>>().join("/")
                ),
                met: Some(worst <= 500.0),
            }
        }
        None => Target { name: "S3 50,000-topic registration applied well under a second (≤ 500 ms)", measured: "not measured".into(), met: None },
    });
    out.push(match s3 {
        Some(s3) if s3.reads_during.ok > 0 && s3.reads_outside.ok > 0 => {
            let (d, o) =
                (s3.reads_during.p99_us as f64 / 1e3, s3.reads_outside.p99_us as f64 / 1e3);
            Target {
                name: "S3 readers not stalled (p99 during registration ≤ 2× p99 outside)",
                measured: format!(
                    "{d:.2} vs {o:.2} ms (max during {:.2} ms, {} reads during)",
                    s3.reads_during.max_us as f64 / 1e3,
                    s3.reads_during.ok
                ),
                met: Some(d <= 2.0 * o),
            }
        }
        _ => Target {
            name: "S3 readers not stalled (p99 during registration ≤ 2× p99 outside)",
            measured: "not measured".into(),
            met: None,
        },
    });
}

/// S6 start-up and the metrics overhead.
fn start_up_and_metrics(r: &Report, out: &mut Vec<Target>) {
    let ours = r.server(Kind::Ours);
    out.push(match ours.and_then(|s| median(&s.startup_ms)) {
        Some(m) => Target {
            name: "S6 start-up to first answered request < 50 ms",
            measured: format!(
                "median {m:.1} ms of {} starts",
                ours.map_or(0, |s| s.startup_ms.len())
            ),
            met: Some(m < 50.0),
        },
        None => Target {
            name: "S6 start-up to first answered request < 50 ms",
            measured: "not measured".into(),
            met: None,
        },
    });
    out.push(match ours.and_then(|o| o.metrics_overhead.as_ref()).and_then(|m| m.ratio()) {
        Some((ratio, on, off)) => Target {
            name: "S1 with metrics within 3 % of metricsEnable=false (issue #12)",
            measured: format!(
                "{ratio:.4}× (median of the paired rounds' ratios; medians {on:.0} vs {off:.0} req/s)"
            ),
            met: Some(ratio >= 0.97),
        },
        None => Target {
            name: "S1 with metrics within 3 % of metricsEnable=false (issue #12)",
            measured: "not measured".into(),
            met: None,
        },
    });
}
