//! What a route snapshot costs at S7's largest point (issue #25): 100 clusters × 2 brokers ×
//! 10,000 topics per cluster = 1,000,000 topics / 200 brokers, each topic on both brokers of
//! its cluster with 8 read / 8 write queues (`crates/bench/src/topology.rs`: topic names of 32
//! random letters and an index, broker `broker-c{c}-{i}` of cluster `bench-c{c}`). The table is
//! built in process; then, each to a file as the server writes it (`conf::persist`):
//!
//! - v2 (this build's format): the encoding alone, then size, write time (wall and CPU, the
//!   temp file's fsync and rename included) and peak extra RSS during the write;
//! - its restore (file read, checksum, decode into a serving `RouteTable`), checked against
//!   the original (every topic, the cluster info, a sample of routes);
//! - v1 (the JSON of builds before #25, `snapshot-v1-writer`): the same;
//! - v2 deflated at the fastest level: the size and the time it would add (is compression
//!   worth it? At 1M topics: -24 % of the size for +1 s to each of write and restore: no).
//!
//! `cargo run --release -p namesrv --features snapshot-v1-writer --example snapshot_cost
//! [clusters] [topics per cluster]`
//!
//! Peak RSS is the kernel's high-water mark (`VmHWM`), reset before each step through
//! `/proc/self/clear_refs`; "extra" is that peak minus the RSS before the step. Run with
//! `MALLOC_MMAP_THRESHOLD_=65536` so that glibc maps large buffers fresh instead of reusing the
//! heap the table's construction left free (which would hide them). `V2_ONLY=1` stops after
//! the v2 steps.

use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use namesrv::route::{to_v1_snapshot, RegisterBroker, RouteTable};
use remoting::body::{perm, DataVersion, TopicConfig, TopicConfigAndMappingSerializeWrapper};

/// `n` names of 32 pseudo-random letters and the index (the bench's shape).
fn names(seed: u64, n: usize) -> Vec<String> {
    let mut state = seed;
    let mut next = move || {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    };
    const LETTERS: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    (0..n)
        .map(|i| {
            let mut s: String = (0..32).map(|_| LETTERS[(next() % 52) as usize] as char).collect();
            s.push_str(&i.to_string());
            s
        })
        .collect()
}

fn registration(cluster: &str, name: &str, addr: &str, topics: &[String]) -> RegisterBroker {
    let mut wrapper = TopicConfigAndMappingSerializeWrapper {
        data_version: DataVersion { counter: 1, state_version: 0, timestamp: 1 },
        ..Default::default()
    };
    for topic in topics {
        let mut config = TopicConfig::named(topic.clone());
        config.read_queue_nums = 8;
        config.write_queue_nums = 8;
        config.perm = perm::READ | perm::WRITE;
        std::sync::Arc::make_mut(&mut wrapper.topic_config_table).insert(topic.clone(), config);
    }
    RegisterBroker {
        cluster: cluster.to_owned(),
        broker_addr: addr.to_owned(),
        broker_name: name.to_owned(),
        broker_id: 0,
        ha_server_addr: addr.to_owned(),
        enable_acting_master: Some(false),
        topic_config: wrapper,
        filter_server_list: Some(Vec::new()),
        conn: 1,
        ..Default::default()
    }
}

/// `VmRSS` and `VmHWM` of this process, bytes.
fn rss() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches(" kB").trim().parse::<u64>().ok())
            .map_or(0, |kb| kb * 1024)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// CPU time of this process so far (user + system, from `/proc/self/stat`).
fn cpu() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name (which ends with ')'): utime and stime are 14th and 15th.
    let fields: Vec<&str> =
        stat.rsplit_once(')').map_or(Vec::new(), |(_, rest)| rest.split_whitespace().collect());
    let ticks: u64 =
        fields.get(11..13).map_or(0, |f| f.iter().filter_map(|v| v.parse::<u64>().ok()).sum());
    Duration::from_millis(ticks * 10)
}

/// What one step cost.
struct Cost {
    wall: Duration,
    cpu: Duration,
    /// Peak RSS above the RSS before the step.
    extra_rss: u64,
}

impl std::fmt::Display for Cost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{:.0} ms wall, {:.0} ms CPU, peak extra RSS {:.1} MB",
            ms(self.wall),
            ms(self.cpu),
            mb(self.extra_rss)
        )
    }
}

/// Runs `f`; what it cost.
fn measured<T>(f: impl FnOnce() -> T) -> (T, Cost) {
    // "5" resets the high-water mark to the current RSS.
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    let (before, _) = rss();
    let (started, cpu_before) = (Instant::now(), cpu());
    let out = f();
    let (wall, cpu) = (started.elapsed(), cpu().saturating_sub(cpu_before));
    let (_, peak) = rss();
    (out, Cost { wall, cpu, extra_rss: peak.saturating_sub(before) })
}

/// A writer that keeps nothing (to time the encoding alone).
#[derive(Default)]
struct Discard(u64);

impl Write for Discard {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len() as u64;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl std::io::Seek for Discard {
    fn seek(&mut self, _: std::io::SeekFrom) -> std::io::Result<u64> {
        Ok(self.0)
    }
}

fn mb(bytes: u64) -> f64 {
    bytes as f64 / 1e6
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn restore(path: &Path) -> RouteTable {
    let bytes = std::fs::read(path).expect("read");
    RouteTable::from_snapshot(&bytes, 2).expect("restore").0
}

/// The restored table has every topic and the same routes for a sample of them.
fn same_routes(original: &RouteTable, restored: &RouteTable, sample: &[String]) {
    assert_eq!(restored.topic_count(), original.topic_count());
    assert_eq!(restored.cluster_info(), original.cluster_info());
    for topic in sample {
        assert_eq!(restored.pickup_route(topic, false), original.pickup_route(topic, false));
    }
}

fn main() {
    let mut args = std::env::args().skip(1).map(|a| a.parse::<usize>().expect("a number"));
    let clusters = args.next().unwrap_or(100);
    let per_cluster = args.next().unwrap_or(10_000);
    let started = Instant::now();
    let topics = names(7, clusters * per_cluster);
    let mut table = RouteTable::new();
    for c in 0..clusters {
        let mine = &topics[c * per_cluster..(c + 1) * per_cluster];
        for i in 0..2 {
            let addr = format!("127.0.{}.{}:10911", c + 1, i + 1);
            let mut req =
                registration(&format!("bench-c{c}"), &format!("broker-c{c}-{i}"), &addr, mine);
            table.register_broker(&mut req, 1, false).expect("register");
        }
    }
    let sample: Vec<String> = topics.iter().step_by(997).cloned().collect();
    drop(topics);
    println!(
        "table: {} topics, {} brokers, built in {:.1} s",
        table.topic_count(),
        table.live_count(),
        started.elapsed().as_secs_f64()
    );
    let dir = tempfile::tempdir().expect("dir");
    let v2_path = dir.path().join("routes.snapshot");
    let v1_path = dir.path().join("routes-v1.snapshot");

    let (_, encode) = measured(|| table.write_snapshot(1, Discard::default()).expect("encode"));
    println!("v2 encoding alone: {encode}");
    let (v2_size, v2_write) = measured(|| {
        conf::persist::write_atomically_with(&v2_path, |file| table.write_snapshot(1, file))
            .expect("v2 write")
    });
    println!(
        "v2: {:.1} MB ({:.1} bytes a topic), written (with fsync) in {v2_write}",
        mb(v2_size),
        v2_size as f64 / table.topic_count() as f64,
    );
    let (from_v2, v2_restore) = measured(|| restore(&v2_path));
    println!("v2 restore (read + decode): {v2_restore}");
    same_routes(&table, &from_v2, &sample);
    drop(from_v2);
    if std::env::var_os("V2_ONLY").is_some() {
        return;
    }

    let ((), v1_write) = measured(|| {
        let bytes = to_v1_snapshot(&table, 1);
        conf::persist::write_atomically(&v1_path, &bytes).expect("v1 write");
    });
    let v1_size = std::fs::metadata(&v1_path).expect("v1").len();
    println!(
        "v1: {:.1} MB ({:.1} bytes a topic), written (with fsync) in {v1_write}",
        mb(v1_size),
        v1_size as f64 / table.topic_count() as f64,
    );

    let (from_v1, v1_restore) = measured(|| restore(&v1_path));
    println!("v1 restore (read + decode): {v1_restore}");
    same_routes(&table, &from_v1, &sample);
    drop(from_v1);
    let v2 = std::fs::read(&v2_path).expect("v2");

    // Would deflate pay? The v2 bytes compressed at the fastest level, and inflated back.
    let started = Instant::now();
    let mut deflater = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::fast());
    deflater.write_all(&v2).expect("deflate");
    let deflated = deflater.finish().expect("deflate");
    let deflate = started.elapsed();
    let started = Instant::now();
    let mut inflated = Vec::with_capacity(v2.len());
    let mut inflater = flate2::write::DeflateDecoder::new(&mut inflated);
    inflater.write_all(&deflated).expect("inflate");
    inflater.finish().expect("inflate");
    let inflate = started.elapsed();
    println!(
        "v2 deflated (fast): {:.1} MB, +{:.0} ms to write, +{:.0} ms to restore",
        mb(deflated.len() as u64),
        ms(deflate),
        ms(inflate)
    );
    println!(
        "summary: v1 {:.1} MB / v2 {:.1} MB = {:.1}x smaller; write v1 {:.0} ms / v2 {:.0} ms \
         ({:.0} / {:.0} ms CPU); peak extra RSS while writing v1 {:.1} MB / v2 {:.1} MB; \
         restore v1 {:.0} ms / v2 {:.0} ms ({:.0} / {:.0} ms CPU)",
        mb(v1_size),
        mb(v2_size),
        v1_size as f64 / v2_size as f64,
        ms(v1_write.wall),
        ms(v2_write.wall),
        ms(v1_write.cpu),
        ms(v2_write.cpu),
        mb(v1_write.extra_rss),
        mb(v2_write.extra_rss),
        ms(v1_restore.wall),
        ms(v2_restore.wall),
        ms(v1_restore.cpu),
        ms(v2_restore.cpu),
    );
}
