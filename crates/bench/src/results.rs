//! The suite's results model (`latest.json`): sizes, per-server figures, environment.

use serde::{Deserialize, Serialize};

use crate::cpu::PhaseCpu;
use crate::server::{Kind, Memory, Spec};
use crate::stats::Summary;
use crate::topology::Shape;

/// Every size of the suite (each is a command-line flag of `nsbench`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Sizes {
    pub shape: Shape,
    /// S1/S2 reader connections.
    pub conns: usize,
    /// S1/S2 requests in flight per connection.
    pub depth: usize,
    pub warmup_ms: u64,
    /// Reads per server before any measured phase (JIT warm-up for Java; not counted).
    #[serde(default)]
    pub prewarm_ms: u64,
    /// S1/S2 measured time per server and round.
    pub measure_ms: u64,
    /// S2: the longest pause between two registrations of one broker.
    pub churn_ms: u64,
    /// S3: topics of the big broker.
    pub big_topics: usize,
    /// S3: registrations of the big broker (the first adds every topic).
    pub big_registrations: usize,
    /// S3: reader connections (one request in flight each).
    pub s3_conns: usize,
    /// S3: total read rate of the paced readers (requests/s).
    pub s3_rate: f64,
    /// S5: connected clients.
    pub s5_clients: usize,
    /// S5: how many of them read (one request in flight each).
    pub s5_readers: usize,
    pub s5_measure_ms: u64,
    /// S6: start-ups per server (the first is the suite's own start).
    pub s6_starts: usize,
    /// S1/S2 rounds (server order rotated each round; figures merged over rounds).
    pub rounds: usize,
    /// Paired S1 rounds of ours with metrics on and off (`metricsEnable=false`), issue #12.
    #[serde(default)]
    pub metrics_rounds: usize,
    pub seed: u64,
    /// Before each measured phase, wait until other processes use at most this many cores…
    #[serde(default)]
    pub quiet_cores: f64,
    /// … for at most this long (then measure anyway; the report shows the other load).
    #[serde(default)]
    pub quiet_wait_s: u64,
    /// S1/S2 readers: `raw` (lean pipelined reader, see `raw.rs`) or `client` (our full client).
    pub reader: String,
}

impl Sizes {
    /// The sizes, with measured phases short enough for a 2-core machine.
    pub fn full() -> Self {
        Self {
            shape: Shape { clusters: 4, brokers_per_cluster: 8, topics_per_cluster: 10_000 },
            conns: 64,
            depth: 8,
            warmup_ms: 3_000,
            prewarm_ms: 10_000,
            measure_ms: 15_000,
            churn_ms: 100,
            big_topics: 50_000,
            big_registrations: 5,
            s3_conns: 16,
            s3_rate: 4_000.0,
            s5_clients: 10_000,
            s5_readers: 1_000,
            s5_measure_ms: 10_000,
            s6_starts: 5,
            rounds: 2,
            metrics_rounds: 5,
            seed: 20_240_601,
            reader: "raw".to_owned(),
            quiet_cores: 0.2,
            quiet_wait_s: 300,
        }
    }

    /// A smoke run: same phases, small sizes.
    pub fn quick() -> Self {
        Self {
            shape: Shape { clusters: 2, brokers_per_cluster: 4, topics_per_cluster: 2_000 },
            conns: 16,
            depth: 4,
            warmup_ms: 500,
            prewarm_ms: 1_500,
            measure_ms: 3_000,
            churn_ms: 100,
            big_topics: 10_000,
            big_registrations: 2,
            s3_conns: 4,
            s3_rate: 1_000.0,
            s5_clients: 1_000,
            s5_readers: 100,
            s5_measure_ms: 2_000,
            s6_starts: 1,
            rounds: 1,
            metrics_rounds: 1,
            seed: 20_240_601,
            reader: "raw".to_owned(),
            quiet_cores: 0.2,
            quiet_wait_s: 5,
        }
    }
}

/// S2's figures for one server.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct S2 {
    pub reads: Summary,
    /// Churn registrations (latency = request to answer).
    pub registrations: Summary,
}

/// S3's figures for one server.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct S3 {
    pub topics: usize,
    pub body_bytes: usize,
    /// The first registration (every topic new): request to answer, ms.
    pub first_apply_ms: f64,
    /// From sending the first registration to its last topic being readable, ms.
    pub visible_ms: Option<f64>,
    /// Later registrations (same topics, every topic's queue count changed, DataVersion bumped):
    /// request to answer, ms.
    pub rereg_ms: Vec<f64>,
    /// Reads sent or answered while a registration was in flight.
    pub reads_during: Summary,
    /// The other reads of the same run.
    pub reads_outside: Summary,
}

/// S5's figures for one server.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct S5 {
    /// Clients that connected and were answered.
    pub clients: usize,
    /// Clients whose connection failed (refused, reset, timed out).
    #[serde(default)]
    pub refused: usize,
    /// The first such failure.
    #[serde(default)]
    pub refused_error: Option<String>,
    pub readers: usize,
    /// Time to connect every client (each answered once).
    pub connect_secs: f64,
    pub reads: Summary,
    /// VmRSS with every client connected (max sampled during the reads).
    pub rss_kib: u64,
}

/// Everything measured for one server.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ServerReport {
    pub kind: Kind,
    pub program: String,
    /// S6: spawn to first answered request, ms, one per start.
    pub startup_ms: Vec<f64>,
    pub mem_empty: Memory,
    pub mem_populated: Memory,
    /// Max VmRSS sampled during S2.
    pub rss_s2_peak_kib: u64,
    pub mem_end: Memory,
    pub populate_secs: f64,
    pub populate: Summary,
    pub s1: Option<Summary>,
    pub s1_rounds: Vec<Summary>,
    pub s2: Option<S2>,
    pub s2_rounds: Vec<S2>,
    pub s3: Option<S3>,
    pub s5: Option<S5>,
    /// Scenarios that could not run, with the reason.
    pub failures: Vec<String>,
    /// Cores used by the server, the load generator and others during each measured phase.
    #[serde(default)]
    pub cpu: Vec<PhaseCpu>,
    /// Ours only: paired S1 rounds against a second instance with `metricsEnable=false`.
    #[serde(default)]
    pub metrics_overhead: Option<MetricsOverhead>,
}

/// S1 of ours with metrics recorded (the default) and with `metricsEnable=false`, measured in
/// alternating rounds on two fresh instances populated alike.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct MetricsOverhead {
    pub on: Vec<Summary>,
    pub off: Vec<Summary>,
}

impl MetricsOverhead {
    /// The median over rounds of S1 req/s with metrics on ÷ off in the same round (a round's
    /// two runs are back to back, so the machine's drift between rounds cancels out), with
    /// the median on and off req/s.
    pub fn ratio(&self) -> Option<(f64, f64, f64)> {
        fn median(mut v: Vec<f64>) -> Option<f64> {
            v.sort_by(f64::total_cmp);
            (!v.is_empty()).then(|| v[v.len() / 2])
        }
        let ok = |s: &&Summary| s.ok > 0;
        let ratios = self
            .on
            .iter()
            .zip(&self.off)
            .filter(|(on, off)| ok(on) && ok(off) && off.qps > 0.0)
            .map(|(on, off)| on.qps / off.qps)
            .collect();
        let on = median(self.on.iter().filter(ok).map(|s| s.qps).collect())?;
        let off = median(self.off.iter().filter(ok).map(|s| s.qps).collect())?;
        Some((median(ratios)?, on, off))
    }
}

impl ServerReport {
    pub(crate) fn new(spec: &Spec) -> Self {
        Self {
            kind: spec.kind,
            program: spec.program.display().to_string(),
            startup_ms: Vec::new(),
            mem_empty: Memory::default(),
            mem_populated: Memory::default(),
            rss_s2_peak_kib: 0,
            mem_end: Memory::default(),
            populate_secs: 0.0,
            populate: Summary::default(),
            s1: None,
            s1_rounds: Vec::new(),
            s2: None,
            s2_rounds: Vec::new(),
            s3: None,
            s5: None,
            failures: Vec::new(),
            cpu: Vec::new(),
            metrics_overhead: None,
        }
    }
}

/// Where and what the suite ran.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct EnvInfo {
    pub commit: String,
    pub dirty: bool,
    pub date: String,
    pub cpu: String,
    pub cores: usize,
    pub kernel: String,
    pub java: String,
    pub versions: Vec<(String, String)>,
    pub quick: bool,
    pub wall_secs: f64,
    /// `/proc/loadavg` when the suite started and when it ended (other work on the machine).
    #[serde(default)]
    pub loadavg_before: String,
    #[serde(default)]
    pub loadavg_after: String,
}

/// The first three fields of `/proc/loadavg`.
pub fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

/// The suite's result, as written to `latest.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Report {
    pub env: EnvInfo,
    pub sizes: Sizes,
    pub servers: Vec<ServerReport>,
}

impl Report {
    /// The report of `kind`, if it ran.
    pub fn server(&self, kind: Kind) -> Option<&ServerReport> {
        self.servers.iter().find(|s| s.kind == kind)
    }
}
