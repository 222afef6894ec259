//! The S7 scenario: at each point, against a fresh instance of each server in turn (the order
//! rotated from point to point), the cold start, the probe registrations, calm reads, both
//! churns and, for ours, the route snapshot and the restart.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use client::{Client, ClientConfig, RouteOptions};
use tokio::sync::watch;
use tokio::time::Instant;

use super::variant::ChangingBody;
use super::watch::SnapshotWatch;
use super::{
    thousands, Axis, Churn, ChurnRound, Point, PointReport, Probe, ScaleServer, ScaleSizes,
    Snapshot,
};
use crate::cpu::{self, CpuMeter};
use crate::load::{Fleet, Readers};
use crate::phase::{line, ms, read_phase, ReadMode};
use crate::raw;
use crate::server::{Kind, RssSampler, Server, Spec};
use crate::stats::{Recorder, Summary};
use crate::topology::{
    broker_identity, random_names, Registrar, RegistrationBody, Table, Topology,
};

/// Runs S7 at every point of `sizes` against every nameserver of `specs` (S1-only kinds and
/// the ceiling are skipped), server files under `workdir`.
pub async fn run(
    specs: &[Spec],
    sizes: &ScaleSizes,
    workdir: &Path,
    say: &dyn Fn(&str),
) -> anyhow::Result<Vec<PointReport>> {
    let specs: Vec<&Spec> =
        specs.iter().filter(|s| s.kind.is_namesrv() && !s.kind.s1_only()).collect();
    let mut out = Vec::new();
    for (n, point) in sizes.points.iter().enumerate() {
        let world = World::new(point, sizes, say)?;
        let mut servers = Vec::new();
        for k in 0..specs.len() {
            let spec = specs[(k + n) % specs.len()];
            let dir = workdir.join(format!("{}-{}", point.name, spec.kind.label()));
            servers.push(world.server(spec, &dir).await);
            let _ = std::fs::remove_dir_all(&dir);
        }
        servers.sort_by_key(|s| specs.iter().position(|x| x.kind == s.kind));
        out.push(PointReport {
            point: point.clone(),
            body_kib: world.bodies.first().map_or(0, |b| b.len() / 1024),
            servers,
        });
    }
    Ok(out)
}

/// One point's topology, bodies and readers, shared by every server.
struct World<'a> {
    point: &'a Point,
    sizes: &'a ScaleSizes,
    say: &'a dyn Fn(&str),
    topology: Topology,
    bodies: Vec<Arc<RegistrationBody>>,
    changing: Vec<Arc<ChangingBody>>,
    mode: ReadMode,
    readers: Readers,
    /// The probe broker's table with 8 and with 4 queues per topic.
    probe: [Arc<RegistrationBody>; 2],
    /// The probe broker's last topic (gone once the probe is unregistered).
    probe_last: Arc<str>,
    /// Topics sampled for "every route answered" after a restart: each cluster's last.
    sample: Vec<Arc<str>>,
    /// Raised during measured phases: the brokers' keep-alive registrations wait meanwhile.
    measuring: watch::Sender<bool>,
}

impl<'a> World<'a> {
    fn new(point: &'a Point, sizes: &'a ScaleSizes, say: &'a dyn Fn(&str)) -> anyhow::Result<Self> {
        let built = std::time::Instant::now();
        let topology = Topology::new(point.shape, sizes.seed);
        let bodies = topology.bodies();
        let changing = bodies
            .iter()
            .enumerate()
            .map(|(c, b)| ChangingBody::new(b.clone(), topology.cluster_topics(c)).map(Arc::new))
            .collect::<anyhow::Result<Vec<_>>>()?;
        let mode = ReadMode::new("raw", &topology.topics, None)?;
        let probe_topics = random_names(sizes.seed ^ 0x9B0B, sizes.probe_topics, "probe");
        let probe = [
            Arc::new(RegistrationBody::with_queues(&probe_topics, 8)),
            Arc::new(RegistrationBody::with_queues(&probe_topics, 4)),
        ];
        let probe_last = probe_topics.last().cloned().context("no probe topics")?;
        let sample = (0..point.shape.clusters)
            .filter_map(|c| topology.cluster_topics(c).last().cloned())
            .collect();
        say(&format!(
            "S7 {}: {} ({} KiB per registration; bodies and requests built in {:.1} s)",
            point.name,
            point.label(),
            bodies.first().map_or(0, |b| b.len() / 1024),
            built.elapsed().as_secs_f64()
        ));
        let readers = Readers::closed_loop(sizes.depth, sizes.warmup_ms, sizes.measure_ms);
        Ok(Self {
            point,
            sizes,
            say,
            topology,
            bodies,
            changing,
            mode,
            readers,
            probe,
            probe_last,
            sample,
            measuring: watch::Sender::new(false),
        })
    }

    fn say(&self, kind: Kind, what: &str) {
        (self.say)(&format!("S7 {:>6} {:>5}: {what}", self.point.name, kind.label()));
    }

    /// Every phase against a fresh `spec` in `dir`; failures are recorded, not returned.
    async fn server(&self, spec: &Spec, dir: &Path) -> ScaleServer {
        let mut s = ScaleServer::new(spec.kind);
        if let Err(e) = self.phases(spec, dir, &mut s).await {
            self.say(spec.kind, &format!("! {e:#}"));
            s.failures.push(format!("{e:#}"));
        }
        s
    }

    async fn phases(&self, spec: &Spec, dir: &Path, s: &mut ScaleServer) -> anyhow::Result<()> {
        for n in 1..self.sizes.cold_starts {
            // A directory of its own: no route snapshot of an earlier instance is restored.
            let dir = dir.join(format!("cold-start-{n}"));
            std::fs::create_dir_all(&dir).with_context(|| format!("{}", dir.display()))?;
            let mut server = Server::spawn(spec, &dir)?;
            server.wait_ready(Duration::from_secs(120)).await?;
            tokio::time::sleep(Duration::from_secs(1)).await;
            let fleet = Fleet::new(&server.addr, &self.topology, &self.bodies, None)?;
            let result = self.cold_start(&mut server, &fleet, s).await;
            fleet.close().await;
            result?;
            let failed = s.cold.error_count();
            if failed > 0 {
                s.failures.push(format!("cold start {n}: {failed} registrations failed"));
            }
        }
        let mut server = Server::spawn(spec, dir)?;
        server.wait_ready(Duration::from_secs(120)).await?;
        tokio::time::sleep(Duration::from_secs(1)).await;
        s.rss_empty_kib = server.memory().unwrap_or_default().rss_kib;
        let watch = (spec.kind == Kind::Ours).then(|| SnapshotWatch::start(server.pid));
        let fleet = Fleet::new(&server.addr, &self.topology, &self.bodies, None)?;
        let result = self.loaded(&mut server, &fleet, s).await;
        if result.is_ok() {
            if let Some(watch) = &watch {
                s.snapshot = Some(self.snapshot(spec, dir, server, &fleet, watch).await?);
            }
        }
        fleet.close().await;
        result
    }

    /// Cold start, probe, calm reads and both churns against a running server.
    async fn loaded(
        &self,
        server: &mut Server,
        fleet: &Fleet,
        s: &mut ScaleServer,
    ) -> anyhow::Result<()> {
        self.cold_start(server, fleet, s).await?;
        // From now on every broker re-registers every 30 s outside the measured phases (as a
        // Java broker does), so none expires (120 s) while the machine is waited for.
        let (keep_alive_stop, stop_rx) = watch::channel(false);
        drop(fleet.keep_alive(Duration::from_secs(30), stop_rx, self.measuring.subscribe()));
        let result = match self.calm(server, s).await {
            Ok(()) => self.churns(server, fleet, s).await,
            Err(e) => Err(e),
        };
        keep_alive_stop.send_replace(true);
        result
    }

    /// Every broker registers once, `in_flight` at a time; a cold start whose registrations
    /// failed is reported (its failures), not dropped.
    async fn cold_start(
        &self,
        server: &mut Server,
        fleet: &Fleet,
        s: &mut ScaleServer,
    ) -> anyhow::Result<()> {
        let (kind, pid) = (server.kind, server.pid);
        fleet.warm().await;
        let sampler = RssSampler::start(pid, Duration::from_millis(50));
        let cold_start = fleet.register_all(self.sizes.in_flight);
        let (cpu, (rec, took)) = self.measured(pid, "cold start", cold_start).await;
        let peak = sampler.max_kib();
        drop(sampler);
        s.cpu.push(cpu);
        s.record_cold_start(took.as_secs_f64());
        s.cold = rec.summary(took);
        s.rss_cold_peak_kib = peak;
        self.say(
            kind,
            &format!(
                "cold start {} brokers in {:.2} s (p50 {:.0} ms, max {:.0} ms, failures {}), RSS peak {} MiB",
                thousands(fleet.len()),
                took.as_secs_f64(),
                s.cold.p50_us as f64 / 1e3,
                s.cold.max_us as f64 / 1e3,
                s.cold.errors_text(),
                peak / 1024
            ),
        );
        anyhow::ensure!(
            server.alive(),
            "the server died during the cold start:\n{}",
            server.log_tail()
        );
        Ok(())
    }

    /// The probe registrations, then reads with nothing else going on (and the steady RSS).
    async fn calm(&self, server: &Server, s: &mut ScaleServer) -> anyhow::Result<()> {
        let (kind, pid) = (server.kind, server.pid);
        let (cpu, probe) = self.measured(pid, "probe", self.probe(&server.addr)).await;
        s.cpu.push(cpu);
        s.probe = probe?;
        self.say(
            kind,
            &format!(
                "10k-topic registration new {:?} changed {:?} unchanged {:?} ms",
                round(&s.probe.new_ms),
                round(&s.probe.changed_ms),
                round(&s.probe.unchanged_ms)
            ),
        );
        let reads = self.reads(&server.addr, self.sizes.seed);
        let (cpu, calm) = self.measured(pid, "calm reads", reads).await;
        s.cpu.push(cpu);
        let (rec, elapsed) = calm?;
        s.calm = Some(rec.summary(elapsed));
        s.rss_steady_kib = server.memory().unwrap_or_default().rss_kib;
        self.say(
            kind,
            &format!(
                "calm reads {} | RSS {} MiB",
                line(&rec.summary(elapsed)),
                s.rss_steady_kib / 1024
            ),
        );
        Ok(())
    }

    /// The DataVersion-only churn, then the 1 % change churn, each in [`World::rounds`]
    /// rounds of calm reads and the churn's.
    async fn churns(
        &self,
        server: &mut Server,
        fleet: &Fleet,
        s: &mut ScaleServer,
    ) -> anyhow::Result<()> {
        let (kind, seed) = (server.kind, self.sizes.seed);
        // The first round's calm reads are the point's, measured just before.
        let calm = s.calm.clone().unwrap_or_default();
        let churn = self.rounds_of(server, fleet, s, ("DataVersion only", seed ^ 0xC1), Some(calm));
        s.churn_version = Some(churn.await?);
        self.say_churn(kind, "DataVersion-only churn", s.churn_version.as_ref());
        fleet
            .set_tables(|j| {
                self.changing[j / self.point.shape.brokers_per_cluster].clone() as Arc<dyn Table>
            })
            .await;
        let churn = self.rounds_of(server, fleet, s, ("1 % changed", seed ^ 0xC2), None);
        s.churn_change = Some(churn.await?);
        self.say_churn(kind, "real-change churn", s.churn_change.as_ref());
        anyhow::ensure!(server.alive(), "the server died:\n{}", server.log_tail());
        Ok(())
    }

    /// Rounds of each churn here: [`ScaleSizes::churn_rounds`] at the point where the targets
    /// are judged (the most topics), else one.
    fn rounds(&self) -> usize {
        let judged = self.sizes.points.iter().filter(|p| p.axis == Axis::Topics);
        let top = judged.max_by_key(|p| p.topics()).map(|p| p.name.as_str());
        if top == Some(self.point.name.as_str()) {
            self.sizes.churn_rounds.max(1)
        } else {
            1
        }
    }

    /// A churn (`what`, and the seed of its pauses) in rounds: calm reads (`first_calm` for the
    /// first round when given), then the churn's reads and registrations.
    async fn rounds_of(
        &self,
        server: &Server,
        fleet: &Fleet,
        s: &mut ScaleServer,
        (what, seed): (&str, u64),
        mut first_calm: Option<Summary>,
    ) -> anyhow::Result<Churn> {
        let (kind, pid) = (server.kind, server.pid);
        let (mut rounds, mut rss_peak_kib) = (Vec::new(), 0);
        for r in 0..self.rounds() {
            let calm = match first_calm.take() {
                Some(calm) => calm,
                None => {
                    let reads = self.reads(&server.addr, self.sizes.seed);
                    let (cpu, calm) =
                        self.measured(pid, &format!("calm reads, {what}"), reads).await;
                    s.cpu.push(cpu);
                    let (rec, elapsed) = calm?;
                    rec.summary(elapsed)
                }
            };
            let phase = format!("churn, {what}");
            let churn = self.churn(server, fleet, seed ^ ((r as u64) << 16));
            let (cpu, churn) = self.measured(pid, &phase, churn).await;
            s.cpu.push(cpu);
            let (reads, registrations, rss) = churn?;
            rss_peak_kib = rss_peak_kib.max(rss);
            let round = ChurnRound { calm, reads, registrations };
            if self.rounds() > 1 {
                let ratio = |v: Option<f64>| v.map_or("-".to_owned(), |v| format!("{v:.2}×"));
                self.say(
                    kind,
                    &format!(
                        "{what}, round {}: reads {} calm, read p99 {} calm",
                        r + 1,
                        ratio(round.qps_ratio()),
                        ratio(round.p99_ratio())
                    ),
                );
            }
            rounds.push(round);
        }
        Ok(Churn::of_rounds(rounds, rss_peak_kib))
    }

    fn say_churn(&self, kind: Kind, what: &str, c: Option<&Churn>) {
        let Some(c) = c else { return };
        let r = &c.registrations;
        self.say(
            kind,
            &format!(
                "{what}: reads {} | registrations {:.1}/s p50 {:.1} p99 {:.1} max {:.1} ms, failures {} | RSS peak {} MiB",
                line(&c.reads),
                r.qps,
                r.p50_us as f64 / 1e3,
                r.p99_us as f64 / 1e3,
                r.max_us as f64 / 1e3,
                r.errors_text(),
                c.rss_peak_kib / 1024
            ),
        );
    }

    /// The point's readers against `addr`.
    async fn reads(&self, addr: &str, seed: u64) -> anyhow::Result<(Recorder, Duration)> {
        read_phase(addr, self.sizes.conns, &self.topology, &self.mode, &self.readers, seed).await
    }

    /// Runs `f` as a measured phase of `pid`: waits for a quiet machine, meters the cores.
    async fn measured<T>(
        &self,
        pid: u32,
        phase: &str,
        f: impl std::future::Future<Output = T>,
    ) -> (crate::cpu::PhaseCpu, T) {
        if self.sizes.quiet_wait_s > 0 {
            let wait = Duration::from_secs(self.sizes.quiet_wait_s);
            cpu::wait_quiet(self.sizes.quiet_cores, wait, &[pid], self.say).await;
        }
        self.measuring.send_replace(true);
        let meter = CpuMeter::start(Some(pid), &[pid]);
        let result = f.await;
        let cpu = meter.finish(&format!("{} {phase}", self.point.name));
        self.measuring.send_replace(false);
        (cpu, result)
    }

    /// The probe broker's registrations: new, changed, unchanged, then unregistered (and
    /// gone) before the next repetition.
    async fn probe(&self, addr: &str) -> anyhow::Result<Probe> {
        let identity = broker_identity("bench-probe", "broker-probe-0", "127.0.250.1:10911");
        let timeout = Duration::from_secs(60);
        let mut registrar =
            Registrar::new(addr, identity.clone(), self.probe[0].clone(), timeout, None)?;
        let admin = Client::with_config(
            addr,
            ClientConfig { request_timeout: Duration::from_secs(10), ..ClientConfig::default() },
        )?;
        let mut probe = Probe::default();
        let pause = Duration::from_millis(300);
        for _ in 0..self.sizes.probe_reps {
            registrar.set_body(self.probe[0].clone());
            probe.new_ms.push(ms(registrar.register(true).await.context("probe, new table")?));
            tokio::time::sleep(pause).await;
            registrar.set_body(self.probe[1].clone());
            probe
                .changed_ms
                .push(ms(registrar.register(true).await.context("probe, changed table")?));
            tokio::time::sleep(pause).await;
            probe
                .unchanged_ms
                .push(ms(registrar.register(true).await.context("probe, unchanged table")?));
            admin.unregister_broker(&identity).await.context("probe unregistration")?;
            gone(&admin, &self.probe_last, Duration::from_secs(60)).await?;
            tokio::time::sleep(pause).await;
        }
        registrar.close().await;
        admin.close().await;
        Ok(probe)
    }

    /// Readers while every broker re-registers after a random 0–`churn_ms` pause: the reads,
    /// the registrations and the peak RSS.
    async fn churn(
        &self,
        server: &Server,
        fleet: &Fleet,
        seed: u64,
    ) -> anyhow::Result<(Summary, Summary, u64)> {
        raw::probe(&server.addr, &self.topology.topics[0], None).await?;
        let (stop_tx, stop_rx) = watch::channel(false);
        let measure_from = Instant::now() + self.readers.warmup;
        let churn =
            fleet.churn(Duration::from_millis(self.sizes.churn_ms), measure_from, stop_rx, seed);
        let sampler = RssSampler::start(server.pid, Duration::from_millis(100));
        let result = self.reads(&server.addr, seed).await;
        stop_tx.send_replace(true);
        let regs = churn.await?;
        let (reads, elapsed) = result?;
        Ok((reads.summary(elapsed), regs.summary(elapsed), sampler.max_kib()))
    }

    /// Ours: the snapshot once the writer has caught up with the last change, then a kill and
    /// the restart until every sampled route answers.
    async fn snapshot(
        &self,
        spec: &Spec,
        dir: &Path,
        server: Server,
        fleet: &Fleet,
        watch: &SnapshotWatch,
    ) -> anyhow::Result<Snapshot> {
        let settled = settle(watch, Duration::from_secs(90)).await;
        let file = dir.join("routes.snapshot");
        let mut snap = Snapshot {
            bytes: std::fs::metadata(&file).map_or(0, |m| m.len()),
            writes_ms: watch.writes().iter().filter_map(|w| w.wall_ms()).collect(),
            last_write_cpu_ms: settled.map_or(0.0, |w| w.cpu_ticks as f64 * 10.0),
            restart_ms: None,
        };
        drop(server); // SIGKILL: the restart restores the last periodic write
        fleet.close().await;
        let started = Instant::now();
        let mut again = Server::spawn(spec, dir)?;
        again.wait_ready(Duration::from_secs(120)).await?;
        serving(&again.addr, &self.sample, Duration::from_secs(120)).await?;
        snap.restart_ms = Some(ms(started.elapsed()));
        self.say(
            spec.kind,
            &format!(
                "route snapshot {:.1} MB, writes {:?} ms (last {:.0} ms CPU); restart to serving {:.0} ms",
                snap.bytes as f64 / 1e6,
                round(&snap.writes_ms),
                snap.last_write_cpu_ms,
                snap.restart_ms.unwrap_or_default()
            ),
        );
        Ok(snap)
    }
}

/// Waits until the snapshot writer has been idle for a write interval and a bit (so the file
/// holds the last change); the last write, if any.
async fn settle(watch: &SnapshotWatch, timeout: Duration) -> Option<super::watch::Write> {
    let quiet = Duration::from_secs(7);
    let since = Instant::now();
    let deadline = since + timeout;
    while Instant::now() < deadline {
        let writes = watch.writes();
        let busy = writes.last().is_some_and(|w| w.ended.is_none());
        let idle_since = writes.last().and_then(|w| w.ended).unwrap_or(since).max(since);
        if !busy && idle_since.elapsed() >= quiet {
            return writes.last().copied();
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    watch.writes().last().copied()
}

/// Polls `topic` until the server answers TOPIC_NOT_EXIST (bounded).
async fn gone(client: &Client, topic: &str, timeout: Duration) -> anyhow::Result<()> {
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        match client.get_route_body(topic, RouteOptions::default()).await {
            Err(e) if e.code() == Some(17) => return Ok(()),
            _ => tokio::time::sleep(Duration::from_millis(20)).await,
        }
    }
    anyhow::bail!(
        "the probe broker's topics were still routed {timeout:?} after its unregistration"
    )
}

/// Polls until every topic of `sample` has a route (bounded).
async fn serving(addr: &str, sample: &[Arc<str>], timeout: Duration) -> anyhow::Result<()> {
    let client = Client::new(addr)?;
    let deadline = Instant::now() + timeout;
    for topic in sample {
        while client.get_route_body(topic, RouteOptions::default()).await.is_err() {
            anyhow::ensure!(
                Instant::now() < deadline,
                "{topic} not routed {timeout:?} after restart"
            );
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }
    client.close().await;
    Ok(())
}

fn round(v: &[f64]) -> Vec<i64> {
    v.iter().map(|x| x.round() as i64).collect()
}
