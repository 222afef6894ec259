//! Reading an exposition as Prometheus would: samples of the Prometheus text format or
//! OpenMetrics, histograms gathered by series, and quantiles estimated from buckets the way
//! PromQL's `histogram_quantile` does.

use std::collections::BTreeMap;
use std::time::Duration;

/// One sample line: metric name, labels (sorted), value.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub value: f64,
}

/// Every sample of `text` (either format; comments, `# EOF` and blank lines skipped). Panics on
/// a line that is not a sample.
pub fn samples(text: &str) -> Vec<Sample> {
    text.lines().filter(|l| !l.is_empty() && !l.starts_with('#')).map(sample).collect()
}

fn sample(line: &str) -> Sample {
    let split = line.find(['{', ' ']).unwrap_or_else(|| panic!("not a sample: {line:?}"));
    let (name, mut rest) = line.split_at(split);
    let mut labels = BTreeMap::new();
    if let Some(body) = rest.strip_prefix('{') {
        let mut chars = body.chars();
        loop {
            let key: String = chars.by_ref().take_while(|&c| c != '=').collect();
            let key = key.trim_start_matches([',', ' ']);
            if key.starts_with('}') || key.is_empty() {
                break;
            }
            assert_eq!(chars.next(), Some('"'), "a quoted label value in {line:?}");
            let mut value = String::new();
            while let Some(c) = chars.next() {
                match c {
                    '"' => break,
                    '\\' => match chars.next() {
                        Some('n') => value.push('\n'),
                        Some(c) => value.push(c),
                        None => panic!("bad escape in {line:?}"),
                    },
                    c => value.push(c),
                }
            }
            labels.insert(key.to_owned(), value);
            match chars.next() {
                Some(',') => continue,
                Some('}') => break,
                other => panic!("{other:?} after a label in {line:?}"),
            }
        }
        rest = chars.as_str();
    }
    let value = rest.split_whitespace().next().unwrap_or_else(|| panic!("no value: {line:?}"));
    let value = match value {
        "+Inf" => f64::INFINITY,
        "-Inf" => f64::NEG_INFINITY,
        v => v.parse().unwrap_or_else(|_| panic!("bad value in {line:?}")),
    };
    Sample { name: name.to_owned(), labels, value }
}

/// One histogram series: its `le` buckets (cumulative, in exposition order), `_count`, `_sum`.
#[derive(Debug, Clone, PartialEq)]
pub struct Histogram {
    pub buckets: Vec<(f64, f64)>,
    pub count: f64,
    pub sum: f64,
}

/// Every histogram series of `samples`: (family name, labels without `le`) → histogram.
pub fn histograms(samples: &[Sample]) -> BTreeMap<(String, BTreeMap<String, String>), Histogram> {
    let mut out: BTreeMap<(String, BTreeMap<String, String>), Histogram> = BTreeMap::new();
    let empty = || Histogram { buckets: Vec::new(), count: f64::NAN, sum: f64::NAN };
    for s in samples {
        if let Some(family) = s.name.strip_suffix("_bucket") {
            let mut labels = s.labels.clone();
            let le = labels.remove("le").expect("a bucket has le");
            let le = if le == "+Inf" { f64::INFINITY } else { le.parse().expect("le") };
            out.entry((family.to_owned(), labels))
                .or_insert_with(empty)
                .buckets
                .push((le, s.value));
        }
    }
    for s in samples {
        for (suffix, count) in [("_count", true), ("_sum", false)] {
            let Some(family) = s.name.strip_suffix(suffix) else { continue };
            if let Some(h) = out.get_mut(&(family.to_owned(), s.labels.clone())) {
                if count {
                    h.count = s.value;
                } else {
                    h.sum = s.value;
                }
            }
        }
    }
    out
}

/// The `q` quantile of cumulative `buckets` (ascending, the last `+Inf`), estimated as
/// PromQL's `histogram_quantile` does: linear within the bucket holding the rank, the lowest
/// bucket starting at 0, the highest bound when the rank falls in `+Inf`. `None` when empty.
pub fn quantile(q: f64, buckets: &[(f64, f64)]) -> Option<f64> {
    let total = buckets.last()?.1;
    if total <= 0.0 {
        return None;
    }
    let rank = q * total;
    let mut below = (0.0, 0.0);
    for &(le, cumulative) in buckets {
        if cumulative >= rank {
            if le.is_infinite() {
                return Some(below.0);
            }
            let in_bucket = cumulative - below.1;
            return Some(below.0 + (le - below.0) * (rank - below.1) / in_bucket);
        }
        below = (le, cumulative);
    }
    Some(below.0)
}

/// `durations` as cumulative buckets with these bounds (seconds) and `+Inf`.
pub fn bucketed(bounds: &[f64], durations: &[Duration]) -> Vec<(f64, f64)> {
    bounds
        .iter()
        .copied()
        .chain([f64::INFINITY])
        .map(|le| (le, durations.iter().filter(|d| d.as_secs_f64() <= le).count() as f64))
        .collect()
}

/// The nearest-rank `q` quantile of `durations` (unsorted).
pub fn nearest_rank(q: f64, durations: &[Duration]) -> Duration {
    let mut sorted = durations.to_vec();
    sorted.sort();
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}
