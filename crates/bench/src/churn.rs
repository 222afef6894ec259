//! S2: S1's readers while every broker re-registers its whole table (DataVersion bumped)
//! after a random 0–`churn_ms` pause, in a loop; registration latency under load.

use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;

use crate::load::{Fleet, Readers};
use crate::phase::{read_phase, ReadMode};
use crate::raw;
use crate::results::Sizes;
use crate::server::{RssSampler, Server};
use crate::stats::Recorder;
use crate::topology::Topology;

/// What one S2 round measured.
pub struct Churned {
    pub reads: Recorder,
    /// The measured time of the reads (the registrations' too).
    pub elapsed: Duration,
    pub registrations: Recorder,
    /// Max VmRSS of the server during the round.
    pub rss_peak_kib: u64,
}

/// One S2 round against `server`, whose brokers are `fleet`.
pub async fn phase(
    server: &Server,
    fleet: &Fleet,
    sizes: &Sizes,
    topology: &Topology,
    mode: &ReadMode,
    readers: &Readers,
    round: usize,
) -> anyhow::Result<Churned> {
    let addr = &server.addr;
    // The server must answer before the churn starts (not only once it runs).
    raw::probe(addr, &topology.topics[0], None).await?;
    let (stop_tx, stop_rx) = watch::channel(false);
    let measure_from = Instant::now() + readers.warmup;
    let churn = fleet.churn(
        Duration::from_millis(sizes.churn_ms),
        measure_from,
        stop_rx,
        sizes.seed + round as u64,
    );
    let sampler = RssSampler::start(server.pid, Duration::from_millis(100));
    let seed = sizes.seed ^ 0x52 ^ round as u64;
    let result = read_phase(addr, sizes.conns, topology, mode, readers, seed).await;
    stop_tx.send_replace(true);
    let registrations = churn.await?;
    let (reads, elapsed) = result?;
    Ok(Churned { reads, elapsed, registrations, rss_peak_kib: sampler.max_kib() })
}
