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
//!
//! [`run`] reads as the list of phases; each phase is a method of [`Suite`] (what every phase
//! shares) over the servers still running ([`Live`]).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use client::{Client, RouteOptions};
use tokio::sync::watch;
use tokio::time::Instant;

use crate::big::BigBroker;
use crate::churn;
use crate::cpu::{CpuMeter, PhaseCpu};
use crate::load::{Fleet, Readers};
use crate::phase::{gate, line, merged, ms, read_phase, ReadMode};
use crate::server::{Kind, Server, Spec};
use crate::stats::Recorder;
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

    /// Populated, running, and not an S1-only kind: takes part in S2, S3 and S5.
    fn in_full_suite(&mut self) -> bool {
        self.fleet.is_some() && self.ok() && !self.spec.kind.s1_only()
    }

    fn fail(&mut self, what: &str, e: &anyhow::Error) {
        let msg = format!("{what}: {e:#}");
        eprintln!("  ! {} {msg}", self.spec.kind.label());
        self.report.failures.push(msg);
    }
}

/// The ceiling server, its report and its S1 recorders.
struct Ceiling {
    server: Server,
    report: ServerReport,
    s1: Vec<(Recorder, Duration)>,
}

/// What every phase shares: sizes, topology, bodies, read modes, the measuring flag.
struct Suite<'a> {
    specs: &'a [Spec],
    sizes: &'a Sizes,
    workdir: &'a Path,
    say: &'a dyn Fn(&str),
    topology: Topology,
    bodies: Vec<Arc<RegistrationBody>>,
    /// Raised during measured phases: idle servers' brokers hold their keep-alive registrations.
    measuring: watch::Sender<bool>,
    plain_mode: ReadMode,
    /// `ours-auth`'s readers sign every request (the same requests, plus the signature fields).
    signed_mode: Option<ReadMode>,
    readers: Readers,
    prewarm: Readers,
}

/// Runs the suite on `specs` (any mix of kinds; the ceiling only runs S1), with server files
/// under `workdir`. `say` receives progress lines.
pub async fn run(
    specs: &[Spec],
    sizes: &Sizes,
    workdir: &Path,
    say: &dyn Fn(&str),
) -> anyhow::Result<Vec<ServerReport>> {
    let suite = Suite::new(specs, sizes, workdir, say)?;
    let mut lives = suite.start_servers().await?;
    suite.populate(&mut lives).await;
    let mut ceiling = suite.start_ceiling(&lives).await?;
    let pids: Vec<u32> =
        lives.iter().map(|l| l.server.pid).chain(ceiling.as_ref().map(|c| c.server.pid)).collect();
    suite.warm_up(&mut lives).await;
    for round in 0..sizes.rounds {
        suite.s1_round(&mut lives, ceiling.as_mut(), &pids, round).await;
        suite.s2_round(&mut lives, &pids, round).await;
    }
    merge_rounds(&mut lives);
    suite.metrics_overhead(&mut lives, &pids).await;
    suite.s3(&mut lives, &pids).await;
    suite.s5(&mut lives, &pids).await;
    let mut reports = stop(lives, ceiling, specs).await?;
    suite.s6(&mut reports).await?;
    Ok(reports.into_iter().map(|(_, r)| r).collect())
}

impl<'a> Suite<'a> {
    fn new(
        specs: &'a [Spec],
        sizes: &'a Sizes,
        workdir: &'a Path,
        say: &'a dyn Fn(&str),
    ) -> anyhow::Result<Self> {
        let topology = Topology::new(sizes.shape, sizes.seed);
        let bodies = topology.bodies();
        say(&format!(
            "topology: {} clusters x {} brokers x {} topics/cluster ({} topics, {} KiB per registration)",
            sizes.shape.clusters,
            sizes.shape.brokers_per_cluster,
            sizes.shape.topics_per_cluster,
            topology.topics.len(),
            bodies.first().map_or(0, |b| b.len() / 1024)
        ));
        anyhow::ensure!(!topology.topics.is_empty(), "the topology has no topic");
        let plain_mode = ReadMode::new(&sizes.reader, &topology.topics, None)?;
        let signed_mode = match specs.iter().find_map(|s| s.kind.reader_credentials()) {
            Some(credentials) => {
                Some(ReadMode::new(&sizes.reader, &topology.topics, Some(credentials))?)
            }
            None => None,
        };
        let readers = Readers::closed_loop(sizes.depth, sizes.warmup_ms, sizes.measure_ms);
        // Warm every server up (the JVM's JIT above all) before anything is measured.
        let prewarm = Readers {
            warmup: Duration::ZERO,
            measure: Duration::from_millis(sizes.prewarm_ms),
            ..readers.clone()
        };
        Ok(Self {
            specs,
            sizes,
            workdir,
            say,
            topology,
            bodies,
            measuring: watch::Sender::new(false),
            plain_mode,
            signed_mode,
            readers,
            prewarm,
        })
    }

    /// How `kind`'s readers read (signed for `ours-auth`).
    fn mode_of(&self, kind: Kind) -> &ReadMode {
        match (kind.reader_credentials(), &self.signed_mode) {
            (Some(_), Some(signed)) => signed,
            _ => &self.plain_mode,
        }
    }

    /// Starts every nameserver, one at a time (S6's first sample), with its empty RSS.
    async fn start_servers(&self) -> anyhow::Result<Vec<Live>> {
        let mut lives = Vec::new();
        for spec in self.specs.iter().filter(|s| s.kind.is_namesrv()) {
            let dir = self.workdir.join(format!("{}-0", spec.kind.label()));
            let mut server = Server::spawn(spec, &dir)?;
            let ready = server.wait_ready(Duration::from_secs(120)).await?;
            (self.say)(&format!(
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
        Ok(lives)
    }

    /// Registers every server's brokers (4 at a time) and starts their keep-alives; the
    /// populated RSS 2 s later.
    async fn populate(&self, lives: &mut [Live]) {
        for live in lives.iter_mut() {
            let credentials = live.spec.kind.broker_credentials();
            let fleet =
                match Fleet::new(&live.server.addr, &self.topology, &self.bodies, credentials) {
                    Ok(fleet) => fleet,
                    Err(e) => {
                        live.fail("populate", &e);
                        continue;
                    }
                };
            let started = Instant::now();
            match fleet.populate(4).await {
                Ok(rec) => {
                    live.report.populate_secs = started.elapsed().as_secs_f64();
                    live.report.populate = rec.summary(started.elapsed());
                    (self.say)(&format!(
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
                        self.measuring.subscribe(),
                    ));
                    live.fleet = Some(fleet);
                }
                Err(e) => live.fail("populate", &e),
            }
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
        for live in lives.iter_mut() {
            live.report.mem_populated = live.server.memory().unwrap_or_default();
        }
    }

    /// The ceiling, answering with the body a real nameserver gives for a topic of this
    /// topology (when it is one of the specs).
    async fn start_ceiling(&self, lives: &[Live]) -> anyhow::Result<Option<Ceiling>> {
        let Some(spec) = self.specs.iter().find(|s| s.kind == Kind::Ceiling) else {
            return Ok(None);
        };
        let probe = &self.topology.topics[0];
        let body = match lives.iter().find(|l| l.fleet.is_some()) {
            Some(l) => route_body(&l.server.addr, probe).await?,
            None => anyhow::bail!(
                "the ceiling needs a populated nameserver to copy a route answer from"
            ),
        };
        let file = self.workdir.join("ceiling-body.json");
        std::fs::write(&file, &body)?;
        let spec = Spec { ceiling_body: Some(file), ..spec.clone() };
        let mut server = Server::spawn(&spec, &self.workdir.join("ceiling"))?;
        server.wait_ready(Duration::from_secs(30)).await?;
        (self.say)(&format!(
            "{:>14}: up on {} answering {} body bytes",
            "ceiling",
            server.addr,
            body.len()
        ));
        Ok(Some(Ceiling { server, report: ServerReport::new(&spec), s1: Vec::new() }))
    }

    /// Unmeasured reads against every populated server (`prewarm_ms`).
    async fn warm_up(&self, lives: &mut [Live]) {
        if self.sizes.prewarm_ms == 0 {
            return;
        }
        for live in lives.iter_mut().filter(|l| l.fleet.is_some()) {
            let mode = self.mode_of(live.spec.kind);
            let seed = self.sizes.seed ^ 0xAA;
            let addr = &live.server.addr;
            match read_phase(addr, self.sizes.conns, &self.topology, mode, &self.prewarm, seed)
                .await
            {
                Ok((rec, elapsed)) => (self.say)(&format!(
                    "warm-up {:>14}: {}",
                    live.spec.kind.label(),
                    line(&rec.summary(elapsed))
                )),
                Err(e) => live.fail("warm-up", &e),
            }
        }
    }

    /// Runs `f` as a measured phase of the server `pid`: waits for a quiet machine, raises the
    /// measuring flag, and meters the cores used.
    async fn measured<T>(
        &self,
        pid: u32,
        pids: &[u32],
        phase: &str,
        f: impl std::future::Future<Output = T>,
    ) -> (PhaseCpu, T) {
        gate(self.sizes, self.say).await;
        self.measuring.send_replace(true);
        let meter = CpuMeter::start(Some(pid), pids);
        let result = f.await;
        let cpu = meter.finish(phase);
        self.measuring.send_replace(false);
        (cpu, result)
    }

    /// One S1 measurement against `addr`.
    async fn s1_one(
        &self,
        addr: &str,
        pid: u32,
        kind: Kind,
        pids: &[u32],
        round: usize,
    ) -> (PhaseCpu, anyhow::Result<(Recorder, Duration)>) {
        let seed = self.sizes.seed + round as u64;
        let mode = self.mode_of(kind);
        let reads = read_phase(addr, self.sizes.conns, &self.topology, mode, &self.readers, seed);
        let (cpu, result) = self.measured(pid, pids, &format!("S1 r{round}"), reads).await;
        if let Ok((rec, elapsed)) = &result {
            (self.say)(&format!(
                "S1 r{round} {:>14}: {}",
                kind.label(),
                line(&rec.summary(*elapsed))
            ));
        }
        (cpu, result)
    }

    /// S1, the order rotated each round; the ceiling takes its turn among the nameservers.
    async fn s1_round(
        &self,
        lives: &mut [Live],
        mut ceiling: Option<&mut Ceiling>,
        pids: &[u32],
        round: usize,
    ) {
        let n = lives.len() + usize::from(ceiling.is_some());
        for k in 0..n {
            let i = (k + round) % n;
            if i < lives.len() {
                let live = &mut lives[i];
                if live.fleet.is_none() || !live.ok() {
                    continue;
                }
                let (addr, pid, kind) = (live.server.addr.clone(), live.server.pid, live.spec.kind);
                let (cpu, result) = self.s1_one(&addr, pid, kind, pids, round).await;
                live.report.cpu.push(cpu);
                match result {
                    Ok((rec, elapsed)) => {
                        live.report.s1_rounds.push(rec.summary(elapsed));
                        live.s1.push((rec, elapsed));
                    }
                    Err(e) => live.fail("S1", &e),
                }
            } else if let Some(c) = ceiling.as_deref_mut() {
                let (addr, pid) = (c.server.addr.clone(), c.server.pid);
                let (cpu, result) = self.s1_one(&addr, pid, Kind::Ceiling, pids, round).await;
                c.report.cpu.push(cpu);
                match result {
                    Ok((rec, elapsed)) => {
                        c.report.s1_rounds.push(rec.summary(elapsed));
                        c.s1.push((rec, elapsed));
                    }
                    Err(e) => c.report.failures.push(format!("S1: {e:#}")),
                }
            }
        }
    }

    /// S2, the order rotated each round.
    async fn s2_round(&self, lives: &mut [Live], pids: &[u32], round: usize) {
        let count = lives.len();
        for k in 0..count {
            let live = &mut lives[(k + round) % count];
            if !live.in_full_suite() {
                continue;
            }
            let Some(fleet) = live.fleet.as_ref() else { continue };
            let pid = live.server.pid;
            let (mode, readers) = (&self.plain_mode, &self.readers);
            let churn =
                churn::phase(&live.server, fleet, self.sizes, &self.topology, mode, readers, round);
            let (cpu, result) = self.measured(pid, pids, &format!("S2 r{round}"), churn).await;
            let result = result.map(|c| {
                live.report.rss_s2_peak_kib = live.report.rss_s2_peak_kib.max(c.rss_peak_kib);
                let s2 = S2 {
                    reads: c.reads.summary(c.elapsed),
                    registrations: c.registrations.summary(c.elapsed),
                };
                live.s2.push((c.reads, c.elapsed, c.registrations));
                s2
            });
            live.report.cpu.push(cpu);
            match result {
                Ok(s2) => {
                    (self.say)(&format!(
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

    /// Metrics overhead (#12): ours against a metricsEnable=false instance, paired S1 rounds.
    async fn metrics_overhead(&self, lives: &mut [Live], pids: &[u32]) {
        if self.sizes.metrics_rounds == 0 {
            return;
        }
        let Some(live) = lives.iter_mut().find(|l| l.spec.kind == Kind::Ours && l.fleet.is_some())
        else {
            return;
        };
        let phase = crate::overhead::Phase {
            sizes: self.sizes,
            topology: &self.topology,
            bodies: &self.bodies,
            mode: &self.plain_mode,
            readers: &self.readers,
            prewarm: &self.prewarm,
            pids,
            measuring: &self.measuring,
        };
        match phase.run(&live.spec, self.workdir, self.say).await {
            Ok(overhead) => live.report.metrics_overhead = Some(overhead),
            Err(e) => live.fail("metrics overhead", &e),
        }
    }

    /// S3, one server after the other.
    async fn s3(&self, lives: &mut [Live], pids: &[u32]) {
        let big = BigBroker::new(self.sizes);
        for live in lives.iter_mut() {
            if !live.in_full_suite() {
                continue;
            }
            let phase = big.phase(&live.server.addr, self.sizes, &self.topology);
            let (cpu, result) = self.measured(live.server.pid, pids, "S3", phase).await;
            live.report.cpu.push(cpu);
            match result {
                Ok(s3) => {
                    (self.say)(&format!(
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
    }

    /// S5, one server after the other.
    async fn s5(&self, lives: &mut [Live], pids: &[u32]) {
        for live in lives.iter_mut() {
            if !live.in_full_suite() {
                continue;
            }
            let pid = live.server.pid;
            let phase = crate::crowd::phase(&live.server.addr, pid, self.sizes, &self.topology);
            let (cpu, result) = self.measured(pid, pids, "S5", phase).await;
            live.report.cpu.push(cpu);
            match result {
                Ok(s5) => {
                    (self.say)(&format!(
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
    }

    /// S6: more start-ups, alternating servers, nothing else running.
    async fn s6(&self, reports: &mut [(Spec, ServerReport)]) -> anyhow::Result<()> {
        for i in 1..self.sizes.s6_starts {
            for (spec, report) in
                reports.iter_mut().filter(|(s, _)| s.kind.is_namesrv() && !s.kind.s1_only())
            {
                let dir = self.workdir.join(format!("{}-{i}", spec.kind.label()));
                let mut server = Server::spawn(spec, &dir)?;
                match server.wait_ready(Duration::from_secs(120)).await {
                    Ok(t) => report.startup_ms.push(ms(t)),
                    Err(e) => report.failures.push(format!("S6 start {i}: {e:#}")),
                }
                server.stop();
            }
        }
        for (spec, report) in reports.iter() {
            if spec.kind.is_namesrv() {
                (self.say)(&format!(
                    "S6    {:>14}: start-up {:?} ms",
                    spec.kind.label(),
                    report.startup_ms.iter().map(|v| v.round() as i64).collect::<Vec<_>>()
                ));
            }
        }
        Ok(())
    }
}

/// S1 and S2 merged over the rounds.
fn merge_rounds(lives: &mut [Live]) {
    for live in lives {
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
}

/// Stops everything: each server's end-of-run memory, its brokers closed, the process killed;
/// the ceiling's report comes last.
async fn stop(
    lives: Vec<Live>,
    ceiling: Option<Ceiling>,
    specs: &[Spec],
) -> anyhow::Result<Vec<(Spec, ServerReport)>> {
    let mut reports = stop_nameservers(lives).await;
    if let Some(Ceiling { server, mut report, s1 }) = ceiling {
        report.mem_end = server.memory().unwrap_or_default();
        report.s1 = merged(&s1);
        server.stop();
        let spec =
            specs.iter().find(|s| s.kind == Kind::Ceiling).cloned().context("ceiling spec")?;
        reports.push((Spec { ceiling_body: None, ..spec }, report));
    }
    Ok(reports)
}

async fn stop_nameservers(lives: Vec<Live>) -> Vec<(Spec, ServerReport)> {
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
    reports
}

/// The GET_ROUTEINFO_BY_TOPIC body `addr` answers for `topic`.
async fn route_body(addr: &str, topic: &str) -> anyhow::Result<Vec<u8>> {
    let client = Client::new(addr)?;
    let (_, body) = client.get_route_body(topic, RouteOptions::default()).await?;
    client.close().await;
    Ok(body.to_vec())
}
