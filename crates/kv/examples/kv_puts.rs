//! PUT_KV_CONFIG persistence throughput: puts per second into the KV store when it already holds
//! one 10 MB value (a store that grew), for one client putting in a loop (each put waits to be
//! durable) and for 16 clients at once. Writes under the given directory (default: a temp dir
//! under the current one, on the same disk as the project).
//!
//! `cargo run --release -p kv --example kv_puts [dir]`

use std::sync::Arc;
use std::time::{Duration, Instant};

use kv::KvStore;

const RUN: Duration = Duration::from_secs(3);

fn main() {
    let base = std::env::args().nth(1).unwrap_or_else(|| ".".to_owned());
    let dir = tempfile::tempdir_in(base).expect("temp dir");
    let path = dir.path().join("kvConfig.json");
    let kv = Arc::new(KvStore::load(&path).expect("load"));
    kv.put("BIG", "value", Some(&"x".repeat(10 << 20))).expect("10 MB value");
    for clients in [1usize, 16] {
        let started = Instant::now();
        let threads: Vec<_> = (0..clients)
            .map(|c| {
                let kv = Arc::clone(&kv);
                std::thread::spawn(move || {
                    let mut n = 0u64;
                    while started.elapsed() < RUN {
                        kv.put("NS", &format!("{c}-{n}"), Some("v")).expect("put");
                        n += 1;
                    }
                    n
                })
            })
            .collect();
        let puts: u64 = threads.into_iter().map(|t| t.join().expect("client")).sum();
        let secs = started.elapsed().as_secs_f64();
        println!(
            "{clients:>2} client(s): {puts} puts in {secs:.1} s = {:.0} puts/s",
            puts as f64 / secs
        );
    }
    // Every acknowledged put is on disk: a fresh load sees them all.
    drop(kv);
    let reloaded = KvStore::load(&path).expect("reload");
    println!("after reload: {} keys in NS", reloaded.list("NS").map_or(0, |ns| ns.len()));
}
