//! Per-broker latency fault tolerance: a broker that was slow or failed is avoided for a while.
//! Pure: time is a parameter.
//!
//! Java: MQFaultStrategy + LatencyFaultToleranceImpl (without the optional reachability detector).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

/// Latency thresholds in ms (Java `MQFaultStrategy.latencyMax`).
pub const LATENCY_MAX_MS: [u64; 7] = [50, 100, 550, 1800, 3000, 5000, 15000];
/// Isolation per threshold in ms (Java `MQFaultStrategy.notAvailableDuration`).
pub const NOT_AVAILABLE_DURATION_MS: [u64; 7] = [0, 0, 2000, 5000, 6000, 10000, 30000];
/// The latency Java assumes for an isolating failure (`updateFaultItem(.., isolation=true, ..)`).
pub const ISOLATION_LATENCY: Duration = Duration::from_millis(10_000);

/// How long a broker with this latency is avoided.
///
/// Java: MQFaultStrategy#computeNotAvailableDuration
pub fn not_available_duration(latency: Duration) -> Duration {
    let ms = u64::try_from(latency.as_millis()).unwrap_or(u64::MAX);
    LATENCY_MAX_MS
        .iter()
        .zip(NOT_AVAILABLE_DURATION_MS)
        .rev()
        .find(|(max, _)| ms >= **max)
        .map_or(Duration::ZERO, |(_, d)| Duration::from_millis(d))
}

#[derive(Debug, Clone, Copy)]
struct FaultItem {
    latency: Duration,
    available_at: Instant,
    reachable: bool,
}

/// Fault items by broker name. Unknown brokers are available and reachable.
#[derive(Debug, Default)]
pub struct LatencyFaultTolerance {
    items: Mutex<HashMap<String, FaultItem>>,
}

impl LatencyFaultTolerance {
    pub fn new() -> Self {
        Self::default()
    }

    /// Records a send to `broker` that took `latency`. With `isolation` the latency is taken as
    /// [`ISOLATION_LATENCY`] for the isolation time (a failed send). An isolation only ever
    /// extends the broker's unavailability, never shortens it.
    ///
    /// Java: MQFaultStrategy#updateFaultItem, LatencyFaultToleranceImpl#updateFaultItem
    pub fn update(
        &self,
        broker: &str,
        latency: Duration,
        isolation: bool,
        reachable: bool,
        now: Instant,
    ) {
        let duration = not_available_duration(if isolation { ISOLATION_LATENCY } else { latency });
        let mut items = self.items.lock().unwrap_or_else(|e| e.into_inner());
        let item = items.entry(broker.to_owned()).or_insert(FaultItem {
            latency,
            available_at: now,
            reachable,
        });
        item.latency = latency;
        item.reachable = reachable;
        if !duration.is_zero() && now + duration > item.available_at {
            item.available_at = now + duration;
        }
    }

    /// True unless `broker` is inside its isolation time.
    pub fn is_available(&self, broker: &str, now: Instant) -> bool {
        let items = self.items.lock().unwrap_or_else(|e| e.into_inner());
        items.get(broker).is_none_or(|i| now >= i.available_at)
    }

    /// False when the last send to `broker` failed.
    pub fn is_reachable(&self, broker: &str) -> bool {
        let items = self.items.lock().unwrap_or_else(|e| e.into_inner());
        items.get(broker).is_none_or(|i| i.reachable)
    }

    /// When `broker` becomes available again, if it is isolated now.
    pub fn available_at(&self, broker: &str, now: Instant) -> Option<Instant> {
        let items = self.items.lock().unwrap_or_else(|e| e.into_inner());
        items.get(broker).map(|i| i.available_at).filter(|at| *at > now)
    }

    /// Forgets `broker`.
    pub fn remove(&self, broker: &str) {
        self.items.lock().unwrap_or_else(|e| e.into_inner()).remove(broker);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latency_maps_to_java_isolation_table() {
        let cases = [
            (0, 0),
            (49, 0),
            (100, 0),
            (549, 0),
            (550, 2000),
            (1800, 5000),
            (3000, 6000),
            (5000, 10000),
            (15000, 30000),
            (99999, 30000),
        ];
        for (latency, expected) in cases {
            assert_eq!(
                not_available_duration(Duration::from_millis(latency)),
                Duration::from_millis(expected),
                "latency {latency}"
            );
        }
    }

    #[test]
    fn isolated_broker_is_unavailable_for_ten_seconds() {
        let ft = LatencyFaultTolerance::new();
        let t0 = Instant::now();
        ft.update("a", Duration::from_millis(3), true, false, t0);
        assert!(!ft.is_available("a", t0));
        assert!(!ft.is_available("a", t0 + Duration::from_millis(9_999)));
        assert!(ft.is_available("a", t0 + Duration::from_millis(10_000)));
        assert!(!ft.is_reachable("a"));
        assert!(ft.is_available("b", t0));
    }

    #[test]
    fn fast_send_does_not_shorten_an_isolation() {
        let ft = LatencyFaultTolerance::new();
        let t0 = Instant::now();
        ft.update("a", Duration::ZERO, true, false, t0);
        ft.update("a", Duration::from_millis(1), false, true, t0 + Duration::from_secs(1));
        assert!(!ft.is_available("a", t0 + Duration::from_secs(2)));
        assert!(ft.is_reachable("a"));
    }
}
