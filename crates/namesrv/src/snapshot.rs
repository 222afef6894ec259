//! The route snapshot file (warm restart): restored at start-up before the port opens, written
//! by a background task after the route tables changed, at most every [`WRITE_INTERVAL`] (or
//! [`WRITE_SHARE`] of the time, for a table whose write takes longer: [`pause_after`]), and
//! once more at shutdown. Writes are atomic and durable (`persist.rs`: temp file, fsync, the
//! previous file kept as `.bak`, rename, directory fsync); the bytes are
//! `RouteTable::write_snapshot`'s (format v2: binary, versioned, checksummed), streamed from
//! the published table (an immutable snapshot, shared, not copied) into the temp file through
//! a 64 KiB buffer, so a write holds no copy of the file. A snapshot that cannot be read (torn,
//! altered, malformed, a newer format) is logged and its `.bak` tried; neither ever stops the
//! server, and a missing one is an empty start. Files written by builds before #25 (format v1,
//! JSON) are read too.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use parking_lot::Mutex;
use tracing::{error, info, warn};

use crate::persist;
use crate::route::{RouteTable, Routes, SnapshotInfo};
use crate::shutdown::Shutdown;
use crate::state::State;

/// The most often the snapshot is rewritten (only when the tables changed since).
pub const WRITE_INTERVAL: Duration = Duration::from_secs(5);

/// The largest share of the time the writer spends writing: after a write that took `d`, the
/// next waits at least `d × WRITE_SHARE`.
pub const WRITE_SHARE: u32 = 20;

/// The pause after a write that took `took` before the next may start: [`WRITE_INTERVAL`], or
/// [`WRITE_SHARE`] times the write when that is longer. At 1,000,000 topics a write of the 40 MB
/// takes 0.2–0.6 s, and under S7's churns the tables change all the time, so every tick wrote:
/// 2.7–4.4 % of the server's samples, and a table version held while it was written (#25).
pub fn pause_after(took: Duration) -> Duration {
    WRITE_INTERVAL.max(took.saturating_mul(WRITE_SHARE))
}

/// What the start-up restore found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Restored {
    /// No snapshot file: an empty start.
    Missing,
    /// The snapshot, restored.
    Loaded(SnapshotInfo),
    /// The snapshot was unreadable; its `.bak` was restored.
    LoadedBackup(SnapshotInfo),
    /// Neither the snapshot nor its `.bak` could be read: an empty start.
    Unreadable,
}

impl Restored {
    /// The metric label of this outcome.
    pub fn as_str(self) -> &'static str {
        match self {
            Restored::Missing => "missing",
            Restored::Loaded(_) => "loaded",
            Restored::LoadedBackup(_) => "loaded_backup",
            Restored::Unreadable => "unreadable",
        }
    }
}

/// Counters of the snapshot file, read by the metrics at scrape time
/// (`route_snapshot_writes_total`, `route_snapshot_age_seconds`, `route_snapshot_size_bytes`).
#[derive(Debug, Default)]
pub struct SnapshotStats {
    writes_ok: AtomicU64,
    writes_failed: AtomicU64,
    /// Wall-clock ms at which the snapshot last written (or restored) was taken; 0 for none.
    taken_at_ms: AtomicU64,
    /// Size in bytes of the snapshot last written (or restored).
    size_bytes: AtomicU64,
    /// The last write failed (so the next success is logged).
    failing: AtomicBool,
}

impl SnapshotStats {
    /// Successful writes since start.
    pub fn writes_ok(&self) -> u64 {
        self.writes_ok.load(Ordering::Relaxed)
    }

    /// Failed writes since start.
    pub fn writes_failed(&self) -> u64 {
        self.writes_failed.load(Ordering::Relaxed)
    }

    /// When the snapshot on disk was taken (wall-clock ms; 0 for none): its age is now minus
    /// this.
    pub fn taken_at_ms(&self) -> u64 {
        self.taken_at_ms.load(Ordering::Relaxed)
    }

    /// The size of the snapshot on disk, bytes.
    pub fn size_bytes(&self) -> u64 {
        self.size_bytes.load(Ordering::Relaxed)
    }
}

/// The snapshot file of one server.
#[derive(Debug)]
pub struct SnapshotFile {
    path: PathBuf,
    /// The change stamp of the table last written or restored (`None` before, or after a
    /// restore from `.bak`, so the snapshot itself is rewritten). Held while writing: writers
    /// are serialized.
    written: Mutex<Option<u64>>,
    restored: Mutex<Option<Restored>>,
    stats: SnapshotStats,
}

impl SnapshotFile {
    /// The snapshot at `path` (nothing is read or written yet).
    pub fn new(path: PathBuf) -> Self {
        Self {
            path,
            written: Mutex::new(None),
            restored: Mutex::new(None),
            stats: SnapshotStats::default(),
        }
    }

    /// The snapshot file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The counters.
    pub fn stats(&self) -> &SnapshotStats {
        &self.stats
    }

    /// What the start-up restore found (`None` before it ran).
    pub fn restored(&self) -> Option<Restored> {
        *self.restored.lock()
    }

    /// Reads the snapshot (or, when it is unreadable, its `.bak`) into `routes`, every broker
    /// live from `now_ms`. Never fails: what went wrong is logged. Blocking (file I/O).
    pub fn restore(&self, routes: &Routes, now_ms: u64) -> Restored {
        let outcome = match self.read(&self.path, now_ms) {
            Ok(None) => {
                info!(path = %self.path.display(), "no route snapshot: starting with empty routes");
                Restored::Missing
            }
            Ok(Some((table, info, size))) => {
                self.install(routes, table, info, size);
                *self.written.lock() = Some(routes.snapshot().change_stamp());
                log_restored(&self.path, info, "route snapshot restored");
                Restored::Loaded(info)
            }
            Err(reason) => {
                error!(path = %self.path.display(), %reason, "route snapshot unreadable; trying its .bak");
                let bak = persist::with_suffix(&self.path, ".bak");
                match self.read(&bak, now_ms) {
                    Ok(Some((table, info, size))) => {
                        self.install(routes, table, info, size);
                        log_restored(&bak, info, "previous route snapshot restored from .bak");
                        Restored::LoadedBackup(info)
                    }
                    Ok(None) => {
                        error!(path = %bak.display(), "no .bak either: starting with empty routes");
                        Restored::Unreadable
                    }
                    Err(reason) => {
                        error!(path = %bak.display(), %reason, ".bak unreadable too: starting with empty routes");
                        Restored::Unreadable
                    }
                }
            }
        };
        *self.restored.lock() = Some(outcome);
        outcome
    }

    /// `Ok(None)` when `path` does not exist; the restored table, what it held and its size in
    /// bytes; or why it could not be read.
    fn read(
        &self,
        path: &Path,
        now_ms: u64,
    ) -> Result<Option<(RouteTable, SnapshotInfo, usize)>, String> {
        let bytes = match std::fs::read(path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e.to_string()),
        };
        let (table, info) = RouteTable::from_snapshot(&bytes, now_ms).map_err(|e| e.to_string())?;
        Ok(Some((table, info, bytes.len())))
    }

    fn install(&self, routes: &Routes, table: RouteTable, info: SnapshotInfo, size: usize) {
        routes.write(|t| *t = table);
        self.stats.taken_at_ms.store(info.written_at_ms, Ordering::Relaxed);
        self.stats.size_bytes.store(size as u64, Ordering::Relaxed);
    }

    /// Writes the current tables if they changed since the last write (or restore), stamped
    /// `wall_ms`; true when it wrote. Blocking (file I/O): call from `spawn_blocking`.
    pub fn write_if_changed(&self, routes: &Routes, wall_ms: u64) -> std::io::Result<bool> {
        let mut written = self.written.lock();
        let table = routes.snapshot();
        let stamp = table.change_stamp();
        if *written == Some(stamp) {
            return Ok(false);
        }
        // Streamed from the immutable table into the temp file: no buffer of the whole file.
        // The table is let go once its bytes are written, before the file is made durable:
        // what registrations replace while a version is held stays allocated (#25).
        let result = persist::write_atomically_with(&self.path, move |file| {
            let written = table.write_snapshot(wall_ms, file);
            drop(table);
            written
        });
        match result {
            Ok(size) => {
                *written = Some(stamp);
                self.stats.writes_ok.fetch_add(1, Ordering::Relaxed);
                self.stats.taken_at_ms.store(wall_ms, Ordering::Relaxed);
                self.stats.size_bytes.store(size, Ordering::Relaxed);
                if self.stats.failing.swap(false, Ordering::Relaxed) {
                    info!(path = %self.path.display(), "route snapshot written again");
                }
                Ok(true)
            }
            Err(e) => {
                self.stats.writes_failed.fetch_add(1, Ordering::Relaxed);
                if !self.stats.failing.swap(true, Ordering::Relaxed) {
                    error!(path = %self.path.display(), error = %e, "route snapshot not written (the previous one stays); retrying every 5 s");
                }
                Err(e)
            }
        }
    }
}

fn log_restored(path: &Path, info: SnapshotInfo, message: &str) {
    let age_s = wall_ms().saturating_sub(info.written_at_ms) / 1000;
    info!(
        path = %path.display(),
        topics = info.topics,
        broker_groups = info.groups,
        live_brokers = info.live,
        age_s,
        "{message}"
    );
}

/// Wall-clock milliseconds since the epoch.
fn wall_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

/// Writes the snapshot (if changed); `None` without a snapshot file. The work runs on a
/// thread of its own, at the process's priority (the version it writes stays allocated until
/// it is done: at nice 19 S7's 1 % churn peaked higher, `bench/results/paired-25-writer/`), and
/// is waited for from the blocking pool (so tokio knows the server is busy, also under a paused
/// test clock).
async fn write(state: &Arc<State>) -> Option<std::io::Result<bool>> {
    state.work.route_snapshot.as_ref()?;
    let state = Arc::clone(state);
    tokio::task::spawn_blocking(move || {
        std::thread::Builder::new()
            .name("route-snapshot".to_owned())
            .spawn(move || {
                let file = state.work.route_snapshot.as_ref()?;
                // Failures are logged (once per failing streak) and counted inside.
                Some(file.write_if_changed(&state.routes, wall_ms()))
            })
            .ok()?
            .join()
            .ok()
            .flatten()
    })
    .await
    .ok()
    .flatten()
}

/// The background writer: the snapshot if the tables changed, [`pause_after`] the last write
/// (first [`WRITE_INTERVAL`] after the start). Ends on shutdown (the final write is
/// [`write_final`]'s, after the connections drained).
pub async fn writer_loop(state: Arc<State>, mut shutdown: Shutdown) {
    let mut pause = WRITE_INTERVAL;
    loop {
        tokio::select! {
            () = tokio::time::sleep(pause) => {
                let started = tokio::time::Instant::now();
                drop(write(&state).await);
                pause = pause_after(started.elapsed());
            }
            () = shutdown.recv() => break,
        }
    }
}

/// The write at graceful shutdown, once the connections have drained.
pub async fn write_final(state: &Arc<State>) {
    let Some(file) = &state.work.route_snapshot else { return };
    let path = file.path().display();
    match write(state).await {
        Some(Ok(true)) => info!(%path, "route snapshot written at shutdown"),
        Some(Ok(false)) => info!(%path, "route snapshot already current at shutdown"),
        Some(Err(_)) | None => {
            warn!(%path, "route snapshot not written at shutdown; the last one stays")
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use remoting::body::{DataVersion, TopicConfig, TopicConfigAndMappingSerializeWrapper};

    use super::*;
    use crate::route::RegisterBroker;

    /// A write longer than a twentieth of the interval spaces the next one out; shorter ones
    /// keep the interval.
    #[test]
    fn a_long_write_spaces_the_next_one_out() {
        let ms = Duration::from_millis;
        assert_eq!(pause_after(ms(0)), WRITE_INTERVAL);
        assert_eq!(pause_after(ms(30)), WRITE_INTERVAL);
        assert_eq!(pause_after(ms(250)), WRITE_INTERVAL);
        assert_eq!(pause_after(ms(400)), ms(8_000));
        assert_eq!(pause_after(Duration::MAX), Duration::MAX);
    }

    fn register(routes: &Routes, broker: &str, topics: &[&str]) {
        let mut wrapper = TopicConfigAndMappingSerializeWrapper {
            data_version: DataVersion { counter: 1, state_version: 0, timestamp: 1 },
            ..Default::default()
        };
        for topic in topics {
            std::sync::Arc::make_mut(&mut wrapper.topic_config_table)
                .insert((*topic).to_owned(), TopicConfig::named(*topic));
        }
        let request = RegisterBroker {
            cluster: "c".to_owned(),
            broker_addr: format!("10.0.0.1:{}", 10_000 + broker.len()),
            broker_name: broker.to_owned(),
            ha_server_addr: "10.0.0.1:10912".to_owned(),
            topic_config: wrapper,
            filter_server_list: Some(Vec::new()),
            conn: 1,
            ..Default::default()
        };
        routes.write(|t| t.register_owned(request, 1, false)).expect("registered");
    }

    /// A snapshot whose `.bak` holds topics A, B and whose current file holds A, B, C.
    fn two_writes(dir: &Path) -> SnapshotFile {
        let file = SnapshotFile::new(dir.join("routes.snapshot"));
        let routes = Routes::new();
        register(&routes, "b1", &["A", "B"]);
        assert!(file.write_if_changed(&routes, 1_000).expect("first write"));
        assert!(!file.write_if_changed(&routes, 1_001).expect("nothing changed"));
        register(&routes, "b22", &["C", "D"]);
        assert!(file.write_if_changed(&routes, 2_000).expect("second write"));
        assert_eq!(
            file.stats().size_bytes(),
            std::fs::metadata(file.path()).expect("file").len(),
            "the size reported is the file's"
        );
        file
    }

    fn restore(path: &Path) -> (Restored, Routes) {
        let routes = Routes::new();
        let outcome = SnapshotFile::new(path.to_path_buf()).restore(&routes, 5);
        (outcome, routes)
    }

    #[test]
    fn a_streamed_write_restores_and_keeps_the_previous_as_bak() {
        let dir = tempfile::tempdir().expect("dir");
        let file = two_writes(dir.path());
        let (outcome, routes) = restore(file.path());
        let Restored::Loaded(info) = outcome else { panic!("{outcome:?}") };
        assert_eq!((info.version, info.written_at_ms, info.topics), (2, 2_000, 4));
        assert!(routes.snapshot().contains_topic("C"));
        let (outcome, _) = restore(&persist::with_suffix(file.path(), ".bak"));
        assert!(matches!(outcome, Restored::Loaded(info) if info.written_at_ms == 1_000));
    }

    #[test]
    fn a_v1_file_on_disk_is_restored_and_rewritten_as_v2() {
        let dir = tempfile::tempdir().expect("dir");
        let routes = Routes::new();
        register(&routes, "b1", &["A", "B"]);
        let path = dir.path().join("routes.snapshot");
        std::fs::write(&path, crate::route::to_v1_snapshot(&routes.snapshot(), 7)).expect("v1");
        let file = SnapshotFile::new(path.clone());
        let restored = Routes::new();
        assert!(matches!(file.restore(&restored, 5), Restored::Loaded(info) if info.version == 1));
        register(&restored, "b1", &["A", "B", "New"]);
        assert!(file.write_if_changed(&restored, 9).expect("write"));
        let (outcome, _) = restore(&path);
        assert!(matches!(outcome, Restored::Loaded(info) if info.version == 2 && info.topics == 3));
        let (outcome, _) = restore(&persist::with_suffix(&path, ".bak"));
        assert!(matches!(outcome, Restored::Loaded(info) if info.version == 1), "{outcome:?}");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        /// Whatever damage the current file takes, the restore never panics and serves either
        /// the file itself (damage that changed nothing) or its `.bak`, never a damaged table.
        #[test]
        fn a_damaged_snapshot_falls_back_to_its_bak(
            edits in prop::collection::vec((any::<usize>(), any::<u8>(), 0u8..3), 1..4),
        ) {
            let dir = tempfile::tempdir().expect("dir");
            let file = two_writes(dir.path());
            let good = std::fs::read(file.path()).expect("read");
            let mut bytes = good.clone();
            for (at, byte, kind) in edits {
                let n = bytes.len();
                match kind {
                    // A file truncated to nothing has no byte left to flip or cut.
                    0 | 1 if n == 0 => {}
                    0 => bytes[at % n] ^= byte.max(1),
                    1 => bytes.truncate(at % n),
                    _ => bytes.insert(at % (n + 1), byte),
                }
            }
            std::fs::write(file.path(), &bytes).expect("damage");
            let (outcome, routes) = restore(file.path());
            match outcome {
                Restored::Loaded(_) => prop_assert_eq!(&bytes, &good),
                Restored::LoadedBackup(info) => {
                    prop_assert_eq!(info.written_at_ms, 1_000);
                    prop_assert!(!routes.snapshot().contains_topic("C"));
                    prop_assert!(routes.snapshot().contains_topic("A"));
                }
                other => prop_assert!(false, "{:?}", other),
            }
        }
    }
}
