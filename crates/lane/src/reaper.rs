//! The reaper: replaced snapshots awaiting their free. A writer that publishes a new
//! copy-on-write snapshot (the nameserver's route table) hands the one it replaced to the
//! reaper, a thread of its own at the lane's priority that frees it once no reader holds it. Otherwise the last reader of a snapshot would free it, and with it whatever the
//! write replaced: after a 50,000-topic route table changed, ≈ 40 ms of freeing on a connection
//! worker, in the middle of the reads it serves. And not the writer: freeing the leaves a
//! registration replaced was 13–17 % of the registration lane's time in the cold start of
//! 1,000,000 topics (#25), on the one thread every registration waits for.

use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// How often the reaper looks again at the snapshots some reader still holds. Readers hold one
/// for microseconds; one held longer (a listing being encoded) waits for a later look.
const LOOK_AGAIN: Duration = Duration::from_millis(1);

/// What the reaper is handed: a replaced snapshot, freed once no reader holds it, or what a
/// write used up, freed at once.
enum Retired<T> {
    Snapshot(Arc<T>),
    Spent(Box<dyn Send>),
}

/// The reaper thread; stopped (what it holds dropped, the thread joined) when dropped.
pub struct Reaper<T: Send + Sync + 'static> {
    tx: Option<mpsc::Sender<Retired<T>>>,
    thread: Option<JoinHandle<()>>,
}

impl<T: Send + Sync + 'static> Default for Reaper<T> {
    fn default() -> Self {
        let (tx, rx) = mpsc::channel::<Retired<T>>();
        let thread = std::thread::Builder::new()
            .name("route-reaper".into())
            .spawn(move || {
                crate::lower_priority(crate::LANE_NICE);
                reap(&rx);
            })
            .expect("spawn the route reaper");
        Self { tx: Some(tx), thread: Some(thread) }
    }
}

impl<T: Send + Sync + 'static> Reaper<T> {
    /// Frees `replaced` once no reader holds it (at once when none does).
    pub fn retire(&self, replaced: Arc<T>) {
        if let Some(tx) = &self.tx {
            // Only fails once the reaper is gone (shutdown): then the value is dropped here.
            let _ = tx.send(Retired::Snapshot(replaced));
        }
    }

    /// Frees `spent` on the reaper's thread: what a write used up and the writer should not
    /// spend its time freeing (a decoded registration body).
    pub fn discard(&self, spent: Box<dyn Send>) {
        if let Some(tx) = &self.tx {
            let _ = tx.send(Retired::Spent(spent));
        }
    }
}

impl<T: Send + Sync + 'static> Drop for Reaper<T> {
    fn drop(&mut self) {
        self.tx.take();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The reaper's loop: keeps what a reader still holds, frees the rest; returns when every
/// sender is gone (dropping what it held: a reader still on one frees it).
fn reap<T>(rx: &mpsc::Receiver<Retired<T>>) {
    let mut held: Vec<Arc<T>> = Vec::new();
    loop {
        let next = if held.is_empty() {
            rx.recv().map_err(|_| RecvTimeoutError::Disconnected)
        } else {
            rx.recv_timeout(LOOK_AGAIN)
        };
        match next {
            Ok(Retired::Snapshot(replaced)) => held.push(replaced),
            Ok(Retired::Spent(spent)) => drop(spent),
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => return,
        }
        held.retain(|table| Arc::strong_count(table) > 1);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;
    use std::time::Instant;

    use super::*;

    /// Records the name of the thread that drops it.
    struct Probe(Arc<Mutex<Option<String>>>);

    impl Drop for Probe {
        fn drop(&mut self) {
            let name = std::thread::current().name().map(str::to_owned);
            *self.0.lock().expect("probe") = name;
        }
    }

    #[test]
    fn what_a_reader_holds_is_freed_after_it_lets_go_on_the_reapers_thread() {
        let reaper = Reaper::default();
        let freed_on = Arc::new(Mutex::new(None));
        let replaced = Arc::new(Probe(Arc::clone(&freed_on)));
        let reader = Arc::clone(&replaced);
        reaper.retire(replaced);
        std::thread::sleep(Duration::from_millis(20));
        assert!(freed_on.lock().expect("probe").is_none(), "a reader holds it: kept");
        drop(reader);
        let deadline = Instant::now() + Duration::from_secs(10);
        while freed_on.lock().expect("probe").is_none() {
            assert!(Instant::now() < deadline, "freed once the reader let go");
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(freed_on.lock().expect("probe").as_deref(), Some("route-reaper"));
        drop(reaper); // stops and joins the thread
    }

    /// What a write used up is freed on the reaper's thread, not the writer's.
    #[test]
    fn what_is_discarded_is_freed_on_the_reapers_thread() {
        let reaper: Reaper<()> = Reaper::default();
        let freed_on = Arc::new(Mutex::new(None));
        reaper.discard(Box::new(Probe(Arc::clone(&freed_on))));
        let deadline = Instant::now() + Duration::from_secs(10);
        while freed_on.lock().expect("probe").is_none() {
            assert!(Instant::now() < deadline, "freed");
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(freed_on.lock().expect("probe").as_deref(), Some("route-reaper"));
    }
}
