//! S5: many connected clients, some of them reading (one request in flight each), and the
//! server's RSS with all of them connected.

use std::time::Duration;

use tokio::time::Instant;

use crate::load::{self, Readers};
use crate::results::{Sizes, S5};
use crate::server::{Memory, RssSampler};
use crate::topology::Topology;

/// S5 against the server at `addr` (process `pid`).
pub async fn phase(addr: &str, pid: u32, sizes: &Sizes, topology: &Topology) -> anyhow::Result<S5> {
    let probe = topology.topics[0].clone();
    let started = Instant::now();
    let (clients, failed, first_error) =
        load::connect_many(addr, sizes.s5_clients, 256, &probe).await?;
    let connect_secs = started.elapsed().as_secs_f64();
    anyhow::ensure!(
        !clients.is_empty(),
        "no client could connect: {}",
        first_error.unwrap_or_default()
    );
    let sampler = RssSampler::start(pid, Duration::from_millis(100));
    let readers = Readers {
        depth: 1,
        warmup: Duration::from_millis(1_000),
        measure: Duration::from_millis(sizes.s5_measure_ms),
        rate_per_task: None,
        stop: None,
    };
    let n_connected = clients.len();
    let n = sizes.s5_readers.min(clients.len());
    let result =
        load::run_readers(&clients[..n], topology.topics.clone(), &readers, None, 55).await;
    let rss_kib = sampler.max_kib().max(Memory::of(pid).unwrap_or_default().rss_kib);
    drop(sampler);
    for c in &clients {
        c.close().await;
    }
    drop(clients);
    tokio::time::sleep(Duration::from_secs(1)).await;
    Ok(S5 {
        clients: n_connected,
        refused: failed,
        refused_error: first_error,
        readers: n,
        connect_secs,
        reads: result.all.summary(result.elapsed),
        rss_kib,
    })
}
