//! The last minutes of request rate and latency, for the dashboard's charts: drawn as soon as
//! the page opens instead of from the browser's own deltas. Every [`STEP`] the sampler reads
//! the core's request counters (the snapshots a scrape reads: nothing on the request path) and
//! keeps what changed — requests per second, mean and p99 latency over all request codes — for
//! the last [`POINTS`] steps (bounded memory). It runs inside [`crate::serve`] and ends with it.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use namesrv::metrics::{HistogramSnapshot, RequestStats};
use namesrv::state::State;
use serde::Serialize;

/// Time between two points.
pub const STEP: Duration = Duration::from_secs(5);

/// Points kept: 10 minutes at [`STEP`].
pub const POINTS: usize = 120;

/// What happened during one step.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Point {
    /// The end of the step (the server's wall clock, ms).
    pub time_ms: u64,
    /// Requests answered per second.
    pub rate: f64,
    /// Mean and 99th percentile handling time, µs (`None` with no request in the step).
    pub mean_micros: Option<f64>,
    pub p99_micros: Option<f64>,
}

/// The points of the last [`POINTS`] steps, oldest first. Clones share them.
#[derive(Debug, Clone, Default)]
pub struct History(Arc<Mutex<VecDeque<Point>>>);

impl History {
    /// A copy of the points, oldest first.
    pub fn points(&self) -> Vec<Point> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).iter().cloned().collect()
    }

    fn push(&self, point: Point) {
        let mut points = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if points.len() == POINTS {
            points.pop_front();
        }
        points.push_back(point);
    }
}

/// Every request code's latency histogram added up (they share their bounds).
fn total(requests: &RequestStats) -> Option<HistogramSnapshot> {
    let mut durations = requests.durations().into_iter().map(|d| d.histogram);
    let mut sum = durations.next()?;
    for h in durations {
        sum.add(&h);
    }
    Some(sum)
}

/// The point of a step of `seconds` that went from `before` to `now`.
fn point(
    time_ms: u64,
    seconds: f64,
    now: &HistogramSnapshot,
    before: Option<&HistogramSnapshot>,
) -> Point {
    let step = match before {
        Some(before) => now.since(before),
        None => now.clone(),
    };
    let micros = |s: f64| s * 1e6;
    Point {
        time_ms,
        rate: step.count as f64 / seconds,
        mean_micros: (step.count > 0).then(|| micros(step.sum_seconds / step.count as f64)),
        p99_micros: step.quantile(0.99).map(micros),
    }
}

/// Samples `state`'s request counters into `history` every [`STEP`], forever (the caller drops
/// it to stop it); nothing when `metricsEnable` is off (nothing is counted).
pub(crate) async fn sample(state: Arc<State>, history: History) {
    if !state.sinks.metrics.enabled() {
        return std::future::pending().await;
    }
    let mut last = total(&state.sinks.metrics.requests);
    let mut tick = tokio::time::interval(STEP);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    tick.tick().await;
    let mut started = tokio::time::Instant::now();
    loop {
        tick.tick().await;
        let now = tokio::time::Instant::now();
        let seconds = now.duration_since(started).as_secs_f64().max(1e-3);
        started = now;
        let current = total(&state.sinks.metrics.requests);
        let p = match &current {
            Some(current) => point(state.now_ms(), seconds, current, last.as_ref()),
            None => {
                Point { time_ms: state.now_ms(), rate: 0.0, mean_micros: None, p99_micros: None }
            }
        };
        history.push(p);
        last = current;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_point_holds_the_step_only_and_the_history_keeps_the_last_points() {
        let stats = RequestStats::new();
        stats.record(105, namesrv::metrics::RequestResult::Answered(0), Duration::from_micros(20));
        let before = total(&stats).expect("a histogram");
        for _ in 0..99 {
            stats.record(
                105,
                namesrv::metrics::RequestResult::Answered(0),
                Duration::from_micros(3),
            );
        }
        stats.record(103, namesrv::metrics::RequestResult::Answered(0), Duration::from_millis(2));
        let now = total(&stats).expect("histograms");
        let p = point(7, 5.0, &now, Some(&before));
        assert_eq!(p.rate, 20.0, "100 requests in 5 s");
        let mean = p.mean_micros.expect("mean");
        assert!((mean - (99.0 * 3.0 + 2000.0) / 100.0).abs() < 1e-6, "{mean}");
        // Rank 99 of 100: the 99th of the 3 µs reads, in (0, 5 µs].
        let p99 = p.p99_micros.expect("p99");
        assert!(p99 <= 5.0, "{p99}");
        assert_eq!(point(8, 5.0, &now, Some(&now)).mean_micros, None, "an idle step");

        let history = History::default();
        for i in 0..POINTS as u64 + 10 {
            history.push(Point { time_ms: i, rate: 0.0, mean_micros: None, p99_micros: None });
        }
        let points = history.points();
        assert_eq!(points.len(), POINTS);
        assert_eq!(points.first().map(|p| p.time_ms), Some(10));
        assert_eq!(points.last().map(|p| p.time_ms), Some(POINTS as u64 + 9));
    }

    #[tokio::test(start_paused = true)]
    async fn the_sampler_adds_a_point_every_step() {
        let dir = tempfile::tempdir().expect("dir");
        let config = namesrv::Config {
            kv_config_path: dir.path().join("kv.json").to_string_lossy().into_owned(),
            ..namesrv::Config::default()
        };
        let state = namesrv::build_state(config, None).expect("state");
        let history = History::default();
        let sampler = tokio::spawn(sample(state.clone(), history.clone()));
        // The sampler takes its baseline at 0; requests come 1 ms after each step began.
        tokio::time::sleep(Duration::from_millis(1)).await;
        let record = namesrv::metrics::RequestResult::Answered(0);
        for step in 1..=3 {
            for _ in 0..step * 10 {
                state.sinks.metrics.requests.record(105, record, Duration::from_micros(10));
            }
            tokio::time::sleep(STEP).await;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
        let rates: Vec<f64> = history.points().iter().map(|p| p.rate).collect();
        assert_eq!(rates, [2.0, 4.0, 6.0], "10, 20, 30 requests in 5 s steps");
        sampler.abort();
    }
}
