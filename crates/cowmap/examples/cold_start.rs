//! The cold start's writes to a `CowMap`, without a server (#25): 100 registrations of 10,000
//! new keys each (1,000,000 in all, spread over the whole map), a clone of the map published
//! every `BATCH` registrations (default 4: the lane's batches of 8, two brokers of a cluster
//! putting the same topics; the next write copies what it touches), the replaced version
//! dropped apart, as the reaper does. Each registration's keys are put one at a time, as the
//! lane does. Prints the time of the writes and of the drops, best of three. Run with
//! `--release` (`BATCH=8 cargo run --release -p cowmap --example cold_start`).

use std::sync::Arc;
use std::time::{Duration, Instant};

#[path = "shared/entry.rs"]
mod entry;
use entry::Entry;

const REGISTRATIONS: usize = 100;
const KEYS: usize = 10_000;

fn run(batch: usize) -> (Duration, Duration) {
    let list: Arc<[u64]> = Arc::from(vec![1u64, 2, 3]);
    let mut current: Arc<cowmap::CowMap<Arc<Entry>>> = Arc::new(cowmap::CowMap::default());
    let mut next = (*current).clone();
    let (mut writes, mut drops) = (Duration::ZERO, Duration::ZERO);
    for r in 0..REGISTRATIONS {
        let entries: Vec<_> =
            (0..KEYS).map(|i| Entry::new(&format!("bench-c{r}-topic-{i:05}"), &list)).collect();
        let t = Instant::now();
        for e in entries {
            next.insert(e);
        }
        if (r + 1) % batch == 0 {
            let old = std::mem::replace(&mut current, Arc::new(next));
            next = (*current).clone();
            writes += t.elapsed();
            let t = Instant::now();
            drop(old);
            drops += t.elapsed();
        } else {
            writes += t.elapsed();
        }
    }
    assert_eq!(next.len(), REGISTRATIONS * KEYS);
    (writes, drops)
}

fn main() {
    let batch = std::env::var("BATCH").ok().and_then(|b| b.parse().ok()).unwrap_or(4);
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let (writes, drops) = (0..3)
        .map(|_| run(batch))
        .fold((f64::MAX, f64::MAX), |(w, d), r| (w.min(ms(r.0)), d.min(ms(r.1))));
    println!("publish every {batch}: writes {writes:.0} ms, drops {drops:.0} ms (best of 3)");
}
