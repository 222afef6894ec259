//! Crash durability of the KV store: a child process puts keys in a loop and prints each key
//! once `put` has returned; the test SIGKILLs it at random points and checks after every kill
//! that the file (and, for a large store, its journal) still loads and holds every acknowledged key.
//!
//! The child is this same test binary re-executed with `KV_DURABILITY_CHILD` set.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use kv::KvStore;

const CHILD_ENV: &str = "KV_DURABILITY_CHILD";
const TEST_NAME: &str = "acknowledged_puts_survive_sigkill";
const NAMESPACE: &str = "DURABILITY";
const ROUNDS: u32 = 20;
/// The child stops by itself after this long, in case the parent died.
const CHILD_LIFETIME: Duration = Duration::from_secs(30);

/// Child mode: load the file (with `big`, first store a value that makes it a large store,
/// whose puts go to the journal), then put `<round>-<n>` = `v<n>` until killed, acknowledging
/// each.
fn run_child(path: &Path, round: &str, big: bool) {
    let kv = KvStore::load(path).expect("child: load KV file");
    if big && kv.get("BIG", "value").is_none() {
        kv.put("BIG", "value", Some(&"x".repeat(300_000))).expect("child: big put");
    }
    let stdout = std::io::stdout();
    let started = Instant::now();
    let mut n: u64 = 0;
    while started.elapsed() < CHILD_LIFETIME {
        let key = format!("{round}-{n}");
        kv.put(NAMESPACE, &key, Some(&format!("v{n}"))).expect("child: put");
        let mut out = stdout.lock();
        writeln!(out, "ACK {key} v{n}").expect("child: write ack");
        out.flush().expect("child: flush ack");
        n += 1;
    }
}

/// xorshift64*: enough randomness for kill points without a dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

#[test]
fn acknowledged_puts_survive_sigkill() {
    sigkill_rounds(TEST_NAME, false);
}

/// The same with a store over the rewrite limit: every put goes to the journal, and a kill
/// may tear its last record.
#[test]
fn acknowledged_puts_into_a_large_store_survive_sigkill() {
    sigkill_rounds("acknowledged_puts_into_a_large_store_survive_sigkill", true);
}

/// Runs [`ROUNDS`] child processes of test `test_name` (or, in a child, the child's loop).
fn sigkill_rounds(test_name: &str, big: bool) {
    if let Some(path) = std::env::var_os(CHILD_ENV) {
        let round = std::env::var("KV_DURABILITY_ROUND").unwrap_or_default();
        run_child(Path::new(&path), &round, big);
        return;
    }

    let seed = SystemTime::now().duration_since(UNIX_EPOCH).map_or(1, |d| d.as_nanos() as u64) | 1;
    println!("kill-point seed: {seed}");
    let mut rng = Rng(seed);
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("store/kvConfig.json");
    let exe = std::env::current_exe().expect("test binary path");
    let mut acknowledged: Vec<(String, String)> = Vec::new();

    for round in 0..ROUNDS {
        let mut child = Command::new(&exe)
            .args([test_name, "--exact", "--nocapture", "--test-threads=1"])
            .env(CHILD_ENV, &path)
            .env("KV_DURABILITY_ROUND", round.to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn child");
        let mut stdout = BufReader::new(child.stdout.take().expect("child stdout"));

        // Let it acknowledge a random number of puts, then kill it at a random moment after.
        let wanted = 1 + rng.below(15);
        let mut seen = 0;
        let mut line = String::new();
        while seen < wanted {
            line.clear();
            let n = stdout.read_line(&mut line).expect("read child stdout");
            assert!(n > 0, "round {round}: child exited before acknowledging {wanted} puts");
            if let Some((key, value)) =
                line.trim_end().strip_prefix("ACK ").and_then(|r| r.split_once(' '))
            {
                acknowledged.push((key.to_owned(), value.to_owned()));
                seen += 1;
            }
        }
        std::thread::sleep(Duration::from_micros(rng.below(3000)));
        child.kill().expect("SIGKILL child");

        // Acknowledgements written before the kill are still in the pipe.
        let mut rest = String::new();
        stdout.read_to_string(&mut rest).expect("drain child stdout");
        for l in rest.lines() {
            if let Some((key, value)) = l.strip_prefix("ACK ").and_then(|r| r.split_once(' ')) {
                acknowledged.push((key.to_owned(), value.to_owned()));
            }
        }
        child.wait().expect("reap child");

        let kv = KvStore::load(&path).unwrap_or_else(|e| {
            panic!("round {round} (seed {seed}): file unreadable after kill: {e}")
        });
        for (key, value) in &acknowledged {
            assert_eq!(
                kv.get(NAMESPACE, key).as_deref(),
                Some(value.as_str()),
                "round {round} (seed {seed}): acknowledged key {key} lost"
            );
        }
    }
    assert!(acknowledged.len() >= ROUNDS as usize);
    // No bound on the total time here (a busy machine may take long): each child stops by
    // itself after CHILD_LIFETIME, so the test cannot hang.
}
