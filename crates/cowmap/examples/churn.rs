//! S7's 1 % change churn's writes to a `CowMap`, without a server (#25): a map of 1,000,000
//! keys, then 2,000 registrations that each replace the values of 100 keys spread over the
//! whole map, one at a time as the lane does; a clone published after each registration and
//! the version it replaces dropped apart, as the reaper does. Prints the time per registration
//! of the writes (with the publication's clone) and of the drops, best of three. Run with
//! `--release` (`cargo run --release -p cowmap --example churn`).

use std::sync::Arc;
use std::time::{Duration, Instant};

#[path = "shared/entry.rs"]
mod entry;
use entry::Entry;

const KEYS: usize = 1_000_000;
const REGISTRATIONS: usize = 2_000;
const CHANGED: usize = 100;

fn topic(i: usize, list: &Arc<[u64]>) -> Arc<Entry> {
    Entry::new(&format!("bench-c{}-topic-{:05}", i / 10_000, i % 10_000), list)
}

fn run(rng: &mut fastrand::Rng) -> (Duration, Duration) {
    let list: Arc<[u64]> = Arc::from(vec![1u64, 2, 3]);
    let mut next = cowmap::CowMap::default();
    next.insert_many((0..KEYS).map(|i| topic(i, &list)).collect());
    let mut current = Arc::new(next.clone());
    let (mut writes, mut drops) = (Duration::ZERO, Duration::ZERO);
    for _ in 0..REGISTRATIONS {
        let changed: Vec<_> = (0..CHANGED).map(|_| topic(rng.usize(..KEYS), &list)).collect();
        let t = Instant::now();
        for e in changed {
            next.insert(e);
        }
        let old = std::mem::replace(&mut current, Arc::new(next.clone()));
        writes += t.elapsed();
        let t = Instant::now();
        drop(old);
        drops += t.elapsed();
    }
    assert_eq!(next.len(), KEYS);
    (writes / REGISTRATIONS as u32, drops / REGISTRATIONS as u32)
}

fn main() {
    let mut rng = fastrand::Rng::with_seed(25);
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    let (writes, drops) = (0..3)
        .map(|_| run(&mut rng))
        .fold((f64::MAX, f64::MAX), |(w, d), r| (w.min(us(r.0)), d.min(us(r.1))));
    println!("per registration of {CHANGED} keys: writes {writes:.0} µs, drops {drops:.0} µs (best of 3)");
}
