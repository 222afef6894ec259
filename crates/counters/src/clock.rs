//! The clock requests are timed with: quanta's TSC clock once it is calibrated (a plain `rdtsc`
//! per read), `std::time::Instant` until then and where the TSC is not usable. Calibration
//! (quanta spins for a few milliseconds) runs once per process on its own thread, started with
//! the first metrics, so start-up never waits for it.

use std::sync::{Once, OnceLock};
use std::time::Instant;

static TSC: OnceLock<quanta::Clock> = OnceLock::new();
static CALIBRATE: Once = Once::new();

/// Starts calibrating the TSC clock in the background (once per process).
pub fn start_calibration() {
    CALIBRATE.call_once(|| {
        let spawned = std::thread::Builder::new().name("clock-calibration".into()).spawn(|| {
            let _ = TSC.set(quanta::Clock::new());
        });
        if let Err(e) = spawned {
            tracing::debug!(error = %e, "no thread to calibrate the request clock; timing with the OS clock");
        }
    });
}

/// A connection's request clock, chosen when the connection starts.
#[derive(Debug, Clone, Copy)]
pub enum RequestClock {
    /// The calibrated TSC clock.
    Tsc(&'static quanta::Clock),
    /// The OS monotonic clock (calibration not done yet).
    Os,
}

/// A reading of a [`RequestClock`].
#[derive(Debug, Clone, Copy)]
pub enum Stamp {
    Tsc(u64),
    Os(Instant),
}

impl RequestClock {
    /// The TSC clock when it is calibrated, else the OS clock.
    pub fn current() -> Self {
        TSC.get().map_or(RequestClock::Os, RequestClock::Tsc)
    }

    #[inline]
    pub fn now(self) -> Stamp {
        match self {
            RequestClock::Tsc(clock) => Stamp::Tsc(clock.raw()),
            RequestClock::Os => Stamp::Os(Instant::now()),
        }
    }

    /// Nanoseconds from `start` to `end` (both read from this clock).
    #[inline]
    pub fn nanos_between(self, start: Stamp, end: Stamp) -> u64 {
        match (self, start, end) {
            (RequestClock::Tsc(clock), Stamp::Tsc(a), Stamp::Tsc(b)) => clock.delta_as_nanos(a, b),
            (_, Stamp::Os(a), Stamp::Os(b)) => {
                u64::try_from(b.saturating_duration_since(a).as_nanos()).unwrap_or(u64::MAX)
            }
            _ => 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_clocks_measure_the_same_interval() {
        start_calibration();
        let deadline = Instant::now() + std::time::Duration::from_secs(10);
        while TSC.get().is_none() {
            assert!(Instant::now() < deadline, "calibration never finished");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        let (tsc, os) = (RequestClock::current(), RequestClock::Os);
        assert!(matches!(tsc, RequestClock::Tsc(_)));
        // Each TSC reading between two OS readings, so a preemption widens the bounds
        // instead of breaking the comparison.
        let (before0, t0, after0) = (os.now(), tsc.now(), os.now());
        std::thread::sleep(std::time::Duration::from_millis(50));
        let (before1, t1, after1) = (os.now(), tsc.now(), os.now());
        let by_tsc = tsc.nanos_between(t0, t1);
        let shortest = os.nanos_between(after0, before1);
        let longest = os.nanos_between(before0, after1);
        assert!(shortest >= 50_000_000, "{shortest}");
        // Allow the calibration's error (quanta aims at well under 1 %).
        assert!(
            by_tsc >= shortest - shortest / 50 && by_tsc <= longest + longest / 50,
            "TSC {by_tsc} ns, OS between {shortest} and {longest} ns"
        );
    }
}
