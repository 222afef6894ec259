//! The benchmark suite: starts every server as a child process, populates each with the same
//! simulated brokers, and runs the scenarios S1–S6 against them in turn (alternating, the order
//! rotated every round), collecting a [`Report`].
//!
//! * S1 route reads: C connections × D in flight, random topics.
//! * S2 S1 plus registration churn (every broker re-registers its whole table after a random
//!   0–`churn` ms pause, DataVersion bumped); registration latency under load.
//! * S3 one broker registering `big_topics` topics, `big_registrations` times, while paced
//!   readers run; reads while a registration is in flight vs. outside ([`crate::big`]).
//! * S4 RSS: empty, populated and idle, peak during S2, with S5's connections, at the end.
//! * S5 many connected clients, some of them reading.
//! * S6 start-up to the first answered request.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use client::{Client, RouteOptions};
use tokio::sync::watch;
use tokio::time::Instant;

use crate::big::BigBroker;
use crate::cpu::{self, CpuMeter};
use crate::load::{self, Fleet, Readers};
use crate::raw::{self, Requests};
use crate::server::{Kind, RssSampler, Server, Spec};
use crate::stats::{Recorder, Summary};
use crate::topology::{RegistrationBody, Topology};

pub use crate::results::{loadavg, EnvInfo, Report, ServerReport, Sizes, S2, S3, S5};

/// One server under test and its brokers.
struct Live {
    spec: Spec,
    server: Server,
    fleet: Option<Fleet>,
    keep_alive_stop: watch::Sender<bool>,
    report: ServerReport,
    /// S1 recorders and measured times, merged over rounds at the end.
    s1: Vec<(Recorder, Duration)>,
    s2: Vec<(Recorder, Duration, Recorder)>,
}

impl Live {
    fn ok(&mut self) -> bool {
        self.server.alive()
    }

    fn fail(&mut self, what: &str, e: &anyhow::Error) {
        let msg = format!("{what}: {e:#}");
        eprintln!("  ! {} {msg}", self.spec.kind.label());
        self.report.failures.push(msg);
    }
}

/// Runs the suite on `specs` (any mix of kinds; the ceiling only runs S1), with server files
/// under `workdir`. `say` receives progress lines.
pub async fn run(
    specs: &[Spec],
    sizes: &Sizes,
    workdir: &Path,
    say: &dyn Fn(&str),
) -> anyhow::Result<Vec<ServerReport>> {
    let topology = Topology::new(sizes.shape, sizes.seed);
    let bodies: Vec<Arc<RegistrationBody>> = (0..sizes.shape.clusters)
        .map(|c| Arc::new(RegistrationBody::new(topology.cluster_topics(c))))
        .collect();
    say(&format!(
        "topology: {} clusters x {} brokers x {} topics/cluster ({} topics, {} KiB per registration)",
        sizes.shape.clusters,
        sizes.shape.brokers_per_cluster,
        sizes.shape.topics_per_cluster,
        topology.topics.len(),
        bodies.first().map_or(0, |b| b.len() / 1024)
    ));
    let probe = topology.topics.first().cloned().context("the topology has no topic")?;

    // Raised during measured phases: idle servers' brokers hold their keep-alive registrations.
    let measuring = watch::Sender::new(false);

    // Start every nameserver, one at a time (S6's first sample), then populate each.
    let mut lives = Vec::new();
    for spec in specs.iter().filter(|s| s.kind.is_namesrv()) {
        let dir = workdir.join(format!("{}-0", spec.kind.label()));
        let mut server = Server::spawn(spec, &dir)?;
        let ready = server.wait_ready(Duration::from_secs(120)).await?;
        say(&format!(
            "{:>14}: up in {:.0} ms on {} (pid {})",
            spec.kind.label(),
            ms(ready),
            server.addr,
            server.pid
        ));
        let mut report = ServerReport::new(spec);
        report.startup_ms.push(ms(ready));
        tokio::time::sleep(Duration::from_secs(1)).await;
        report.mem_empty = server.memory().unwrap_or_default();
        let (keep_alive_stop, _) = watch::channel(false);
        lives.push(Live {
            spec: spec.clone(),
            server,
            fleet: None,
            keep_alive_stop,
            report,
            s1: Vec::new(),
            s2: Vec::new(),
        });
    }
    for live in &mut lives {
        let credentials = live.spec.kind.broker_credentials();
        let fleet = Fleet::new(&live.server.addr, &topology, &bodies, credentials)?;
        let started = Instant::now();
        match fleet.populate(4).await {
            Ok(rec) => {
                live.report.populate_secs = started.elapsed().as_secs_f64();
                live.report.populate = rec.summary(started.elapsed());
                say(&format!(
                    "{:>14}: {} brokers registered in {:.2} s (p50 {:.1} ms, max {:.1} ms)",
                    live.spec.kind.label(),
                    fleet.len(),
                    live.report.populate_secs,
                    live.report.populate.p50_us as f64 / 1e3,
                    live.report.populate.max_us as f64 / 1e3
                ));
                drop(fleet.keep_alive(
                    Duration::from_secs(30),
                    live.keep_alive_stop.subscribe(),
                    measuring.subscribe(),
                ));
                live.fleet = Some(fleet);
            }
            Err(e) => live.fail("populate", &e),
        }
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    for live in &mut lives {
        live.report.mem_populated = live.server.memory().unwrap_or_default();
    }

    // The ceiling answers with the body a real nameserver gives for a topic of this topology.
    let mut ceiling = None;
    if let Some(spec) = specs.iter().find(|s| s.kind == Kind::Ceiling) {
        let body = match lives.iter().find(|l| l.fleet.is_some()) {
            Some(l) => route_body(&l.server.addr, &probe).await?,
            None => anyhow::bail!(
                "the ceiling needs a populated nameserver to copy a route answer from"
            ),
        };
        let file = workdir.join("ceiling-body.json");
        std::fs::write(&file, &body)?;
        let spec = Spec { ceiling_body: Some(file), ..spec.clone() };
        let mut server = Server::spawn(&spec, &workdir.join("ceiling"))?;
        server.wait_ready(Duration::from_secs(30)).await?;
        say(&format!(
            "{:>14}: up on {} answering {} body bytes",
            "ceiling",
            server.addr,
            body.len()
        ));
        ceiling = Some((server, ServerReport::new(&spec), Vec::<(Recorder, Duration)>::new()));
    }

    let plain_mode = ReadMode::new(&sizes.reader, &topology.topics, None)?;
    // `ours-auth`'s readers sign every request (the same requests, plus the signature fields).
    let signed_mode = match specs.iter().find_map(|s| s.kind.reader_credentials()) {
        Some(credentials) => {
            Some(ReadMode::new(&sizes.reader, &topology.topics, Some(credentials))?)
        }
        None => None,
    };
    let mode_of = |kind: Kind| match (kind.reader_credentials(), &signed_mode) {
        (Some(_), Some(signed)) => signed,
        _ => &plain_mode,
    };
    let pids: Vec<u32> =
        lives.iter().map(|l| l.server.pid).chain(ceiling.as_ref().map(|c| c.0.pid)).collect();
    let readers = Readers {
        depth: sizes.depth,
        warmup: Duration::from_millis(sizes.warmup_ms),
        measure: Duration::from_millis(sizes.measure_ms),
        rate_per_task: None,
        stop: None,
    };
    // Warm every server up (the JVM's JIT above all) before anything is measured.
    let prewarm = Readers {
        warmup: Duration::ZERO,
        measure: Duration::from_millis(sizes.prewarm_ms),
        ..readers.clone()
    };
    if sizes.prewarm_ms > 0 {
        for live in lives.iter_mut().filter(|l| l.fleet.is_some()) {
            match read_phase(
                &live.server.addr,
                sizes.conns,
                &topology,
                mode_of(live.spec.kind),
                &prewarm,
                sizes.seed ^ 0xAA,
            )
            .await
            {
                Ok((rec, elapsed)) => say(&format!(
                    "warm-up {:>14}: {}",
                    live.spec.kind.label(),
                    line(&rec.summary(elapsed))
                )),
                Err(e) => live.fail("warm-up", &e),
            }
        }
    }
    let n = lives.len() + usize::from(ceiling.is_some());
    for round in 0..sizes.rounds {
        // S1, the order rotated each round; the ceiling takes its turn among the nameservers.
        let s1_round = async |addr: &str, pid: u32, kind: Kind| {
            let label = kind.label();
            gate(sizes, &pids, say).await;
            measuring.send_replace(true);
            let meter = CpuMeter::start(Some(pid), &pids);
            let seed = sizes.seed + round as u64;
            let mode = mode_of(kind);
            let result = read_phase(addr, sizes.conns, &topology, mode, &readers, seed).await;
            let cpu = meter.finish(&format!("S1 r{round}"));
            measuring.send_replace(false);
            if let Ok((rec, elapsed)) = &result {
                say(&format!("S1 r{round} {label:>14}: {}", line(&rec.summary(*elapsed))));
            }
            (cpu, result)
        };
        for k in 0..n {
            let i = (k + round) % n;
            if i < lives.len() {
                let live = &mut lives[i];
                if live.fleet.is_none() || !live.ok() {
                    continue;
                }
                let (cpu, result) =
                    s1_round(&live.server.addr, live.server.pid, live.spec.kind).await;
                live.report.cpu.push(cpu);
                match result {
                    Ok((rec, elapsed)) => {
                        live.report.s1_rounds.push(rec.summary(elapsed));
                        live.s1.push((rec, elapsed));
                    }
                    Err(e) => live.fail("S1", &e),
                }
            } else if let Some((server, report, recs)) = ceiling.as_mut() {
                let (cpu, result) = s1_round(&server.addr, server.pid, Kind::Ceiling).await;
                report.cpu.push(cpu);
                match result {
                    Ok((rec, elapsed)) => {
                        report.s1_rounds.push(rec.summary(elapsed));
                        recs.push((rec, elapsed));
                    }
                    Err(e) => report.failures.push(format!("S1: {e:#}")),
                }
            }
        }
        // S2.
        let count = lives.len();
        for k in 0..count {
            let live = &mut lives[(k + round) % count];
            if live.fleet.is_none() || !live.ok() || live.spec.kind.s1_only() {
                continue;
            }
            gate(sizes, &pids, say).await;
            measuring.send_replace(true);
            let meter = CpuMeter::start(Some(live.server.pid), &pids);
            let result = churn_phase(live, sizes, &topology, &plain_mode, &readers, round).await;
            live.report.cpu.push(meter.finish(&format!("S2 r{round}")));
            measuring.send_replace(false);
            match result {
                Ok(s2) => {
                    say(&format!(
                        "S2 r{round} {:>14}: {} | registrations {:.1}/s p50 {:.1} ms p99 {:.1} ms max {:.1} ms",
                        live.spec.kind.label(),
                        line(&s2.reads),
                        s2.registrations.qps,
                        s2.registrations.p50_us as f64 / 1e3,
                        s2.registrations.p99_us as f64 / 1e3,
                        s2.registrations.max_us as f64 / 1e3
                    ));
                    live.report.s2_rounds.push(s2);
                }
                Err(e) => live.fail("S2", &e),
            }
        }
    }
    for live in &mut lives {
        live.report.s1 = merged(&live.s1);
        if !live.s2.is_empty() {
            let reads: Vec<_> = live.s2.iter().map(|(r, e, _)| (r.clone(), *e)).collect();
            let regs: Vec<_> = live.s2.iter().map(|(_, e, g)| (g.clone(), *e)).collect();
            live.report.s2 = Some(S2 {
                reads: merged(&reads).unwrap_or_default(),
                registrations: merged(&regs).unwrap_or_default(),
            });
        }
    }

    // Metrics overhead (#12): ours against a metricsEnable=false instance, paired S1 rounds.
    if sizes.metrics_rounds > 0 {
        if let Some(live) =
            lives.iter_mut().find(|l| l.spec.kind == Kind::Ours && l.fleet.is_some())
        {
            let phase = crate::overhead::Phase {
                sizes,
                topology: &topology,
                bodies: &bodies,
                mode: &plain_mode,
                readers: &readers,
                prewarm: &prewarm,
                pids: &pids,
                measuring: &measuring,
            };
            match phase.run(&live.spec, workdir, say).await {
                Ok(overhead) => live.report.metrics_overhead = Some(overhead),
                Err(e) => live.fail("metrics overhead", &e),
            }
        }
    }

    // S3, one server after the other.
    let big = BigBroker::new(sizes);
    for live in &mut lives {
        if live.fleet.is_none() || !live.ok() || live.spec.kind.s1_only() {
            continue;
        }
        gate(sizes, &pids, say).await;
        measuring.send_replace(true);
        let meter = CpuMeter::start(Some(live.server.pid), &pids);
        let result = big.phase(&live.server.addr, sizes, &topology).await;
        live.report.cpu.push(meter.finish("S3"));
        measuring.send_replace(false);
        match result {
            Ok(s3) => {
                say(&format!(
                    "S3    {:>14}: first {:.0} ms (visible {}), again {:?} ms | reads during p99 {:.2} ms max {:.2} ms, outside p99 {:.2} ms",
                    live.spec.kind.label(),
                    s3.first_apply_ms,
                    s3.visible_ms.map_or("never".to_owned(), |v| format!("{v:.0} ms")),
                    s3.rereg_ms.iter().map(|v| v.round() as i64).collect::<Vec<_>>(),
                    s3.reads_during.p99_us as f64 / 1e3,
                    s3.reads_during.max_us as f64 / 1e3,
                    s3.reads_outside.p99_us as f64 / 1e3
                ));
                live.report.s3 = Some(s3);
            }
            Err(e) => live.fail("S3", &e),
        }
    }

    // S5, one server after the other.
    for live in &mut lives {
        if live.fleet.is_none() || !live.ok() || live.spec.kind.s1_only() {
            continue;
        }
        gate(sizes, &pids, say).await;
        measuring.send_replace(true);
        let meter = CpuMeter::start(Some(live.server.pid), &pids);
        let result = many_clients_phase(live, sizes, &topology).await;
        live.report.cpu.push(meter.finish("S5"));
        measuring.send_replace(false);
        match result {
            Ok(s5) => {
                say(&format!(
                    "S5    {:>14}: {} clients connected ({} failed) in {:.1} s, RSS {} MiB | {}",
                    live.spec.kind.label(),
                    s5.clients,
                    s5.refused,
                    s5.connect_secs,
                    s5.rss_kib / 1024,
                    line(&s5.reads)
                ));
                live.report.s5 = Some(s5);
            }
            Err(e) => live.fail("S5", &e),
        }
    }

    // Stop everything.
    let mut reports = Vec::new();
    for mut live in lives {
        live.report.mem_end = live.server.memory().unwrap_or_default();
        if !live.ok() {
            live.report.failures.push(format!("process died:\n{}", live.server.log_tail()));
        }
        live.keep_alive_stop.send_replace(true);
        if let Some(f) = &live.fleet {
            f.close().await;
        }
        live.server.stop();
        reports.push((live.spec, live.report));
    }
    if let Some((server, mut report, recs)) = ceiling {
        report.mem_end = server.memory().unwrap_or_default();
        report.s1 = merged(&recs);
        server.stop();
        reports.push((
            Spec {
                ceiling_body: None,
                ..specs.iter().find(|s| s.kind == Kind::Ceiling).cloned().context("ceiling spec")?
            },
            report,
        ));
    }

    // S6: more start-ups, alternating servers, nothing else running.
    for i in 1..sizes.s6_starts {
        for (spec, report) in
            reports.iter_mut().filter(|(s, _)| s.kind.is_namesrv() && !s.kind.s1_only())
        {
            let dir = workdir.join(format!("{}-{i}", spec.kind.label()));
            let mut server = Server::spawn(spec, &dir)?;
            match server.wait_ready(Duration::from_secs(120)).await {
                Ok(t) => report.startup_ms.push(ms(t)),
                Err(e) => report.failures.push(format!("S6 start {i}: {e:#}")),
            }
            server.stop();
        }
    }
    for (spec, report) in &reports {
        if spec.kind.is_namesrv() {
            say(&format!(
                "S6    {:>14}: start-up {:?} ms",
                spec.kind.label(),
                report.startup_ms.iter().map(|v| v.round() as i64).collect::<Vec<_>>()
            ));
        }
    }
    Ok(reports.into_iter().map(|(_, r)| r).collect())
}

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

/// S2: S1's readers while every broker churns.
async fn churn_phase(
    live: &mut Live,
    sizes: &Sizes,
    topology: &Topology,
    mode: &ReadMode,
    readers: &Readers,
    round: usize,
) -> anyhow::Result<S2> {
    let fleet = live.fleet.as_ref().context("no fleet")?;
    // The server must answer before the churn starts (not only once it runs).
    raw::probe(&live.server.addr, &topology.topics[0], None).await?;
    let (stop_tx, stop_rx) = watch::channel(false);
    let measure_from = Instant::now() + readers.warmup;
    let churn = fleet.churn(
        Duration::from_millis(sizes.churn_ms),
        measure_from,
        stop_rx,
        sizes.seed + round as u64,
    );
    let sampler = RssSampler::start(live.server.pid, Duration::from_millis(100));
    let result = read_phase(
        &live.server.addr,
        sizes.conns,
        topology,
        mode,
        readers,
        sizes.seed ^ 0x52 ^ round as u64,
    )
    .await;
    stop_tx.send_replace(true);
    let regs = churn.await?;
    let (reads, elapsed) = result?;
    live.report.rss_s2_peak_kib = live.report.rss_s2_peak_kib.max(sampler.max_kib());
    drop(sampler);
    let s2 = S2 { reads: reads.summary(elapsed), registrations: regs.summary(elapsed) };
    live.s2.push((reads, elapsed, regs));
    Ok(s2)
}

/// S5: many connected clients, some reading (one request in flight each).
async fn many_clients_phase(
    live: &mut Live,
    sizes: &Sizes,
    topology: &Topology,
) -> anyhow::Result<S5> {
    let probe = topology.topics[0].clone();
    let started = Instant::now();
    let (clients, failed, first_error) =
        load::connect_many(&live.server.addr, sizes.s5_clients, 256, &probe).await?;
    let connect_secs = started.elapsed().as_secs_f64();
    anyhow::ensure!(
        !clients.is_empty(),
        "no client could connect: {}",
        first_error.unwrap_or_default()
    );
    let sampler = RssSampler::start(live.server.pid, Duration::from_millis(100));
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
    let rss_kib = sampler.max_kib().max(live.server.memory().unwrap_or_default().rss_kib);
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

/// The GET_ROUTEINFO_BY_TOPIC body `addr` answers for `topic`.
async fn route_body(addr: &str, topic: &str) -> anyhow::Result<Vec<u8>> {
    let client = Client::new(addr)?;
    let (_, body) = client.get_route_body(topic, RouteOptions::default()).await?;
    client.close().await;
    Ok(body.to_vec())
}

/// Merges per-round recorders (QPS over the summed measured time).
fn merged(parts: &[(Recorder, Duration)]) -> Option<Summary> {
    let mut it = parts.iter();
    let (first, mut elapsed) = it.next().map(|(r, e)| (r.clone(), *e))?;
    let mut all = first;
    for (r, e) in it {
        all.merge(r);
        elapsed += *e;
    }
    Some(all.summary(elapsed))
}

pub(crate) fn ms(d: Duration) -> f64 {
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
pub(crate) async fn gate(sizes: &Sizes, _server_pids: &[u32], say: &dyn Fn(&str)) {
    if sizes.quiet_wait_s > 0 {
        cpu::wait_quiet(sizes.quiet_cores, Duration::from_secs(sizes.quiet_wait_s), &[], say).await;
    }
}
