//! Our route-snapshot writer seen from outside the server: every write runs on a thread named
//! `route-snapshot` that lives exactly as long as the write, so polling the process's threads
//! every 2 ms gives each write's wall time (±2 ms) and, from the thread's own `stat`, its CPU
//! time (10 ms ticks). A poll reads the name of a thread it has not seen before only: the
//! server's other threads are read once (reading every thread's name at every poll cost the
//! generator CPU beside our server only, through all of S7's phases).

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

/// The writer thread's name (`crates/namesrv/src/snapshot.rs`).
const THREAD: &str = "route-snapshot";
const POLL: Duration = Duration::from_millis(2);

/// The threads known not to be the writer, and those seen once under another name.
type Seen = (HashSet<u32>, HashSet<u32>);

/// One write seen: when the thread was first and last seen, and its CPU ticks then.
#[derive(Debug, Clone, Copy)]
pub(super) struct Write {
    pub started: Instant,
    pub ended: Option<Instant>,
    pub cpu_ticks: u64,
}

impl Write {
    pub(super) fn wall_ms(&self) -> Option<f64> {
        self.ended.map(|e| e.duration_since(self.started).as_secs_f64() * 1e3)
    }
}

/// Polls a server's threads until dropped.
pub(super) struct SnapshotWatch {
    writes: Arc<Mutex<Vec<Write>>>,
    task: tokio::task::JoinHandle<()>,
}

impl SnapshotWatch {
    pub(super) fn start(pid: u32) -> Self {
        let writes = Arc::new(Mutex::new(Vec::<Write>::new()));
        let seen = writes.clone();
        let task = tokio::spawn(async move {
            let mut current: Option<(u32, usize)> = None; // (tid, index in writes)
            let mut others = Seen::default();
            loop {
                observe(&seen, &mut current, pid, &mut others);
                tokio::time::sleep(POLL).await;
            }
        });
        Self { writes, task }
    }

    /// Every write seen so far.
    pub(super) fn writes(&self) -> Vec<Write> {
        self.writes.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

impl Drop for SnapshotWatch {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// One poll: a writer thread that appeared starts a write, one that is gone (or replaced by
/// another) ends it.
fn observe(
    seen: &Mutex<Vec<Write>>,
    current: &mut Option<(u32, usize)>,
    pid: u32,
    others: &mut Seen,
) {
    let now = Instant::now();
    let found = writer_thread(pid, others);
    let mut w = seen.lock().unwrap_or_else(|e| e.into_inner());
    match (*current, found) {
        (Some((tid, i)), Some((t, ticks))) if tid == t => w[i].cpu_ticks = ticks,
        (previous, found) => {
            if let Some((_, i)) = previous {
                w[i].ended = Some(now);
            }
            *current = found.map(|(tid, ticks)| {
                w.push(Write { started: now, ended: None, cpu_ticks: ticks });
                (tid, w.len() - 1)
            });
        }
    }
}

/// The writer thread of `pid` now, with its utime + stime ticks; `others` are the threads
/// known not to be it, `glimpsed` those seen once under another name.
fn writer_thread(pid: u32, (others, glimpsed): &mut Seen) -> Option<(u32, u64)> {
    let dir = std::fs::read_dir(format!("/proc/{pid}/task")).ok()?;
    for entry in dir.flatten() {
        let Some(tid) = entry.file_name().to_str().and_then(|t| t.parse::<u32>().ok()) else {
            continue;
        };
        if others.contains(&tid) {
            continue;
        }
        let path = entry.path();
        let comm = std::fs::read_to_string(path.join("comm")).unwrap_or_default();
        if comm.trim_end() != THREAD {
            // A new thread names itself right after it starts: one seen under another name at
            // two polls is not the writer.
            if !comm.is_empty() && !glimpsed.insert(tid) {
                others.insert(tid);
            }
            continue;
        }
        let stat = std::fs::read_to_string(path.join("stat")).unwrap_or_default();
        let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
        let f: Vec<&str> = rest.split_whitespace().collect();
        let get = |i: usize| f.get(i - 3).and_then(|x| x.parse::<u64>().ok()).unwrap_or(0);
        return Some((tid, get(14) + get(15)));
    }
    None
}
