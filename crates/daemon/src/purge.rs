//! Freed memory handed back once the tables stop changing (#25): when no REGISTER_BROKER has
//! changed them (heartbeats that change nothing aside) and no broker has been removed for
//! [`QUIET`], the allocator is asked to return what the burst freed (`allocator::release`), at
//! most once per [`SPACING`]. Without it mimalloc keeps that memory until its next burst
//! (`crates/allocator`). A fleet whose tables change without pause is never quiet, and mimalloc
//! purges as it goes. The binary only: the allocator is the process's, which an embedding
//! program owns.

use std::sync::Arc;
use std::time::Duration;

use namesrv::metrics::RegistrationOutcome;
use namesrv::State;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// How long the writes must have stopped: mimalloc's own purge delay, so that a steady trickle
/// of changes is left to mimalloc.
pub const QUIET: Duration = Duration::from_secs(1);
/// The least time between two releases: each one costs a page fault per page reused after it.
pub const SPACING: Duration = Duration::from_secs(10);
/// How often the write counters are read.
const TICK: Duration = Duration::from_millis(200);

/// When to release, from the count of writes seen at each tick.
#[derive(Debug)]
struct Quiet {
    writes: u64,
    changed: Instant,
    pending: bool,
    released: Option<Instant>,
}

impl Quiet {
    fn new(writes: u64, now: Instant) -> Self {
        Self { writes, changed: now, pending: false, released: None }
    }

    /// Whether to release now: writes were seen since the last release, none for [`QUIET`],
    /// and the last release is [`SPACING`] old.
    fn observe(&mut self, writes: u64, now: Instant) -> bool {
        if writes != self.writes {
            (self.writes, self.changed, self.pending) = (writes, now, true);
            return false;
        }
        let due = self.pending
            && now.duration_since(self.changed) >= QUIET
            && self.released.is_none_or(|at| now.duration_since(at) >= SPACING);
        if due {
            (self.pending, self.released) = (false, Some(now));
        }
        due
    }
}

/// REGISTER_BROKER requests answered and brokers removed, but for unchanged re-registrations:
/// those are the fleet's heartbeats (32 brokers every 30 s make one a second), free only their
/// body, and give mimalloc the activity it purges on.
fn writes(state: &State) -> u64 {
    let metrics = &state.sinks.metrics;
    let registrations: u64 = (metrics.registrations().iter())
        .filter(|(outcome, _)| *outcome != RegistrationOutcome::Unchanged)
        .map(|(_, n)| n)
        .sum();
    let removed: u64 = metrics.brokers_removed_by_reason().iter().map(|(_, n)| n).sum();
    registrations + removed
}

/// Watches `state`'s writes and calls `release` (on a blocking thread) after each quiet spell,
/// until `stop`.
pub async fn run(state: Arc<State>, release: fn(), stop: CancellationToken) {
    let mut quiet = Quiet::new(writes(&state), Instant::now());
    let mut tick = tokio::time::interval(TICK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            _ = tick.tick() => {}
        }
        if quiet.observe(writes(&state), Instant::now()) {
            let before = resident_mib();
            let _ = tokio::task::spawn_blocking(release).await;
            // The workers hand back their own pages as they park (`allocator::on_thread_park`).
            tokio::time::sleep(Duration::from_millis(100)).await;
            tracing::debug!(
                before_mib = before,
                after_mib = resident_mib(),
                "freed memory handed back to the OS once the tables stopped changing"
            );
        }
    }
}

/// The process's resident set in MiB (`ops::ProcessStats`, from `/proc/self`); 0 without it.
fn resident_mib() -> u64 {
    ops::ProcessStats::read().map_or(0, |stats| stats.resident_bytes >> 20)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(start: Instant, ms: u64) -> Instant {
        start + Duration::from_millis(ms)
    }

    #[test]
    fn nothing_is_released_before_any_write() {
        let t0 = Instant::now();
        let mut quiet = Quiet::new(5, t0);
        assert!((0..100).all(|i| !quiet.observe(5, at(t0, i * 250))));
    }

    #[test]
    fn a_burst_is_released_once_after_the_quiet_spell() {
        let t0 = Instant::now();
        let mut quiet = Quiet::new(0, t0);
        assert!(!quiet.observe(10, at(t0, 100)));
        assert!(!quiet.observe(32, at(t0, 300)));
        assert!(!quiet.observe(32, at(t0, 1_200)), "0.9 s after the last write");
        assert!(quiet.observe(32, at(t0, 1_300)), "1 s after the last write");
        assert!(!quiet.observe(32, at(t0, 2_000)), "once per burst");
        assert!(!quiet.observe(32, at(t0, 60_000)));
    }

    #[test]
    fn writes_that_never_pause_are_never_released() {
        let t0 = Instant::now();
        let mut quiet = Quiet::new(0, t0);
        assert!((1..400).all(|i| !quiet.observe(i, at(t0, i * 250))));
    }

    #[test]
    fn a_second_burst_waits_for_the_spacing() {
        let t0 = Instant::now();
        let mut quiet = Quiet::new(0, t0);
        quiet.observe(1, t0);
        assert!(quiet.observe(1, at(t0, 1_000)));
        quiet.observe(2, at(t0, 2_000));
        assert!(!quiet.observe(2, at(t0, 3_000)), "quiet, but 2 s after the last release");
        assert!(!quiet.observe(2, at(t0, 10_900)));
        assert!(quiet.observe(2, at(t0, 11_000)), "10 s after the last release");
    }

    #[tokio::test(start_paused = true)]
    async fn run_releases_after_registrations_stop_and_stops_when_told() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static RELEASES: AtomicUsize = AtomicUsize::new(0);
        fn count() {
            RELEASES.fetch_add(1, Ordering::SeqCst);
        }
        let dir = tempfile::tempdir().unwrap();
        let kv_config_path = dir.path().join("kv.json").to_string_lossy().into_owned();
        let config = namesrv::Config { kv_config_path, ..namesrv::Config::default() };
        let state = namesrv::build_state(config, None).unwrap();
        let stop = CancellationToken::new();
        let task = tokio::spawn(run(state.clone(), count, stop.clone()));
        tokio::time::sleep(Duration::from_secs(5)).await;
        assert_eq!(RELEASES.load(Ordering::SeqCst), 0, "no write, no release");
        for _ in 0..20 {
            state.sinks.metrics.registration(RegistrationOutcome::Unchanged);
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
        assert_eq!(RELEASES.load(Ordering::SeqCst), 0, "heartbeats that change nothing");
        for outcome in [RegistrationOutcome::Applied, RegistrationOutcome::Difference] {
            state.sinks.metrics.registration(outcome);
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
        state.sinks.metrics.registration(RegistrationOutcome::Unchanged);
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert_eq!(RELEASES.load(Ordering::SeqCst), 0, "0.5 s after the last change");
        tokio::time::sleep(Duration::from_millis(1_000)).await;
        assert_eq!(RELEASES.load(Ordering::SeqCst), 1);
        tokio::time::sleep(Duration::from_secs(30)).await;
        assert_eq!(RELEASES.load(Ordering::SeqCst), 1);
        stop.cancel();
        tokio::time::timeout(Duration::from_secs(1), task).await.unwrap().unwrap();
    }
}
