//! What every measured phase shares: how route reads are made ([`ReadMode`], [`read_phase`]),
//! the gate that waits for a quiet machine before measuring, merging per-round recorders, and
//! the progress line.

use std::sync::Arc;
use std::time::Duration;

use client::Client;

use crate::cpu;
use crate::load::{self, Readers};
use crate::raw::{self, Requests};
use crate::results::Sizes;
use crate::stats::{Recorder, Summary};
use crate::topology::Topology;

/// How S1/S2 read: the lean reader's pre-encoded requests, or the full client.
pub enum ReadMode {
    Raw(Arc<Requests>),
    Client,
}

impl ReadMode {
    /// `"raw"` or `"client"`, for `topics`; requests signed with `credentials` when given (the
    /// raw reader only).
    pub fn new(
        name: &str,
        topics: &[Arc<str>],
        credentials: Option<client::Credentials>,
    ) -> anyhow::Result<Self> {
        match name {
            "raw" => {
                let config = client::ClientConfig { credentials, ..Default::default() };
                let client = Client::with_config("127.0.0.1:9876", config)?;
                Ok(Self::Raw(Arc::new(Requests::new(&client, topics)?)))
            }
            "client" if credentials.is_some() => {
                anyhow::bail!("signed reads (ours-auth) need the raw reader")
            }
            "client" => Ok(Self::Client),
            other => anyhow::bail!("unknown reader {other:?} (raw or client)"),
        }
    }
}

/// S1-style reads against `addr`: `conns` new connections, then the readers.
pub async fn read_phase(
    addr: &str,
    conns: usize,
    topology: &Topology,
    mode: &ReadMode,
    readers: &Readers,
    seed: u64,
) -> anyhow::Result<(Recorder, Duration)> {
    let probe = topology.topics[0].clone();
    if let ReadMode::Raw(requests) = mode {
        raw::probe(addr, &probe, requests.credentials()).await?;
        let result = raw::run(addr, conns, requests.clone(), readers, seed).await?;
        return Ok((result.all, result.elapsed));
    }
    let clients = load::connect_clients(addr, conns, 64, &probe).await?;
    let result = load::run_readers(&clients, topology.topics.clone(), readers, None, seed).await;
    for c in &clients {
        c.close().await;
    }
    Ok((result.all, result.elapsed))
}

/// Merges per-round recorders (QPS over the summed measured time).
pub fn merged(parts: &[(Recorder, Duration)]) -> Option<Summary> {
    let mut it = parts.iter();
    let (first, mut elapsed) = it.next().map(|(r, e)| (r.clone(), *e))?;
    let mut all = first;
    for (r, e) in it {
        all.merge(r);
        elapsed += *e;
    }
    Some(all.summary(elapsed))
}

pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// One progress line for a read phase.
pub fn line(s: &Summary) -> String {
    format!(
        "{:>9.0} req/s  p50 {:>7.3} p90 {:>7.3} p99 {:>7.3} p99.9 {:>8.3} max {:>8.3} ms  errors {}",
        s.qps,
        s.p50_us as f64 / 1e3,
        s.p90_us as f64 / 1e3,
        s.p99_us as f64 / 1e3,
        s.p999_us as f64 / 1e3,
        s.max_us as f64 / 1e3,
        s.errors_text()
    )
}

/// Waits (bounded) for the machine to calm down before a measured phase: other users' work,
/// and our own idle servers too (a peer still working off an earlier phase's backlog, brokers'
/// keep-alive registrations catching up).
pub async fn gate(sizes: &Sizes, say: &dyn Fn(&str)) {
    if sizes.quiet_wait_s > 0 {
        cpu::wait_quiet(sizes.quiet_cores, Duration::from_secs(sizes.quiet_wait_s), &[], say).await;
    }
}
