//! Lookup cost of a populated `CowMap`: random `get`s of present keys, ns per lookup, at a few
//! table sizes (the route read's topic look-up, S1's hot path). Run with `--release`.

use std::sync::Arc;
use std::time::Instant;

fn main() {
    for &n in &[10_000usize, 40_000, 1_000_000] {
        let keys: Vec<String> = (0..n).map(|i| format!("TopicTest-{i:07}-%RETRY%grp")).collect();
        let mut map = cowmap::CowMap::default();
        map.insert_many(
            keys.iter().map(|k| (Arc::<str>::from(k.as_str()), i64::from(1))).collect(),
        );
        // A pseudo-random order of look-ups (xorshift), as readers pick topics.
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let order: Vec<usize> = (0..4_000_000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x % n as u64) as usize
            })
            .collect();
        let mut best = f64::MAX;
        for _ in 0..5 {
            let t = Instant::now();
            let mut found = 0i64;
            for &i in &order {
                found += map.get(&keys[i]).map_or(0, |(_, v)| *v);
            }
            assert_eq!(found, order.len() as i64);
            best = best.min(t.elapsed().as_nanos() as f64 / order.len() as f64);
        }
        println!("{n:>9} keys: {best:.1} ns per lookup (best of 5)");
    }
}
