//! Latency and error accounting of one measured phase: an HDR histogram of answered requests,
//! counts of failures by kind, and the summary the report prints.

use std::collections::BTreeMap;
use std::time::Duration;

use hdrhistogram::Histogram;
use remoting::ResponseCode;
use serde::{Deserialize, Serialize};

/// Highest latency the histograms track (longer ones are clamped to it).
const MAX_TRACKED_US: u64 = 120_000_000;

/// What one phase measured: latencies of answered requests, failures by kind, bytes received.
#[derive(Clone)]
pub struct Recorder {
    hist: Histogram<u64>,
    /// Requests answered with the expected code.
    ok: u64,
    /// Failures: `"17 TopicNotExist"`-style keys for server answers, `timeout`, `closed`, …
    errors: BTreeMap<String, u64>,
    body_bytes: u64,
}

impl Default for Recorder {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for Recorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recorder").field("ok", &self.ok).field("errors", &self.errors).finish()
    }
}

impl Recorder {
    /// An empty recorder (1 µs .. 120 s, 3 significant digits).
    pub fn new() -> Self {
        let hist = Histogram::new_with_bounds(1, MAX_TRACKED_US, 3)
            .expect("static histogram bounds are valid");
        Self { hist, ok: 0, errors: BTreeMap::new(), body_bytes: 0 }
    }

    /// A request answered as expected after `latency`, with a body of `bytes`.
    pub fn ok(&mut self, latency: Duration, bytes: usize) {
        self.ok += 1;
        self.body_bytes += bytes as u64;
        self.latency(latency);
    }

    /// A failed request. Server answers (any code) still count towards the latency histogram;
    /// transport failures (timeouts, broken connections) do not.
    pub fn error(&mut self, err: &client::Error, latency: Duration) {
        if err.code().is_some() {
            self.latency(latency);
        }
        *self.errors.entry(error_kind(err)).or_default() += 1;
    }

    /// A failure of `kind` with no latency (e.g. `timeout`, `closed`).
    pub fn count_error(&mut self, kind: &str) {
        *self.errors.entry(kind.to_owned()).or_default() += 1;
    }

    fn latency(&mut self, latency: Duration) {
        let us = u64::try_from(latency.as_micros()).unwrap_or(u64::MAX).clamp(1, MAX_TRACKED_US);
        self.hist.saturating_record(us);
    }

    /// Adds everything `other` recorded.
    pub fn merge(&mut self, other: &Recorder) {
        // Same bounds on both sides, so adding cannot fail.
        let _ = self.hist.add(&other.hist);
        self.ok += other.ok;
        self.body_bytes += other.body_bytes;
        for (k, v) in &other.errors {
            *self.errors.entry(k.clone()).or_default() += v;
        }
    }

    /// Requests answered as expected.
    pub fn ok_count(&self) -> u64 {
        self.ok
    }

    /// The summary of this phase, `elapsed` being the measured wall time.
    pub fn summary(&self, elapsed: Duration) -> Summary {
        let secs = elapsed.as_secs_f64().max(1e-9);
        let q = |p: f64| if self.hist.is_empty() { 0 } else { self.hist.value_at_quantile(p) };
        Summary {
            ok: self.ok,
            secs,
            qps: self.ok as f64 / secs,
            p50_us: q(0.50),
            p90_us: q(0.90),
            p99_us: q(0.99),
            p999_us: q(0.999),
            max_us: if self.hist.is_empty() { 0 } else { self.hist.max() },
            mean_us: if self.hist.is_empty() { 0.0 } else { self.hist.mean() },
            errors: self.errors.clone(),
            avg_body_bytes: if self.ok == 0 {
                0.0
            } else {
                self.body_bytes as f64 / self.ok as f64
            },
        }
    }
}

/// The figures of one phase, as stored in `latest.json` and printed in `latest.md`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Summary {
    /// Requests answered as expected.
    pub ok: u64,
    /// Measured wall time.
    pub secs: f64,
    /// `ok / secs`.
    pub qps: f64,
    pub p50_us: u64,
    pub p90_us: u64,
    pub p99_us: u64,
    pub p999_us: u64,
    pub max_us: u64,
    pub mean_us: f64,
    /// Failures by kind (see [`error_kind`]).
    pub errors: BTreeMap<String, u64>,
    /// Mean body size of the expected answers.
    pub avg_body_bytes: f64,
}

impl Summary {
    /// All failures.
    pub fn error_count(&self) -> u64 {
        self.errors.values().sum()
    }

    /// `"17 TopicNotExist: 3, timeout: 1"`, or `"0"`.
    pub fn errors_text(&self) -> String {
        if self.errors.is_empty() {
            return "0".to_owned();
        }
        self.errors.iter().map(|(k, v)| format!("{k}: {v}")).collect::<Vec<_>>().join(", ")
    }
}

/// The key a failure is counted under: `"<code> <name>"` for a server answer, else the kind of
/// transport failure.
pub fn error_kind(err: &client::Error) -> String {
    use client::Error as E;
    match err {
        E::Server { code, .. } => format!("{code} {:?}", ResponseCode::from_i32(*code)),
        E::Timeout { .. } => "timeout".to_owned(),
        E::ConnectionClosed { .. } => "closed".to_owned(),
        E::Connect { .. } | E::ConnectTimeout { .. } => "connect".to_owned(),
        E::BadResponse { .. } => "bad-response".to_owned(),
        other => format!("other: {other}"),
    }
}

/// A string of digits with a comma every three from the right (`1234567` → `1,234,567`).
pub fn group_digits(d: &str) -> String {
    let mut out = String::with_capacity(d.len() + d.len() / 3);
    for (i, c) in d.chars().enumerate() {
        if i > 0 && (d.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Microseconds as milliseconds with two decimals, for tables.
pub fn ms(us: u64) -> String {
    format!("{:.2}", us as f64 / 1000.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_reports_quantiles_and_errors_of_merged_recorders() {
        let mut a = Recorder::new();
        let mut b = Recorder::new();
        for i in 1..=99u64 {
            a.ok(Duration::from_micros(i * 10), 100);
        }
        b.ok(Duration::from_millis(50), 300);
        b.error(
            &client::Error::Server { addr: "x".into(), code: 17, remark: None },
            Duration::from_micros(5),
        );
        b.error(
            &client::Error::Timeout {
                addr: "x".into(),
                code: 105,
                timeout: Duration::from_secs(3),
            },
            Duration::from_secs(3),
        );
        a.merge(&b);
        let s = a.summary(Duration::from_secs(2));
        assert_eq!(s.ok, 100);
        assert!((s.qps - 50.0).abs() < 1e-9);
        assert!((490..=510).contains(&s.p50_us), "p50 {}", s.p50_us);
        assert!(s.max_us >= 49_000, "max {}", s.max_us);
        assert_eq!(s.error_count(), 2);
        assert_eq!(s.errors.get("timeout"), Some(&1));
        assert!(s.errors.keys().any(|k| k.starts_with("17 ")), "{:?}", s.errors);
        assert!((s.avg_body_bytes - 102.0).abs() < 1e-9);
    }

    #[test]
    fn empty_summary_has_zero_figures() {
        let s = Recorder::new().summary(Duration::from_secs(1));
        assert_eq!((s.ok, s.p99_us, s.max_us), (0, 0, 0));
        assert_eq!(s.errors_text(), "0");
    }
}
