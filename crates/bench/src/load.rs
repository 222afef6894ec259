//! The load: closed-loop route readers (C connections × D requests in flight, random topics),
//! the broker fleet (populate, registration churn, 30 s keep-alive) and mass connections.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use client::{Client, ClientConfig, Credentials, RouteOptions};
use tokio::sync::{watch, Mutex, Semaphore};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::stats::Recorder;
use crate::topology::{Registrar, RegistrationBody, Table, Topology};

/// How route readers run.
#[derive(Debug, Clone)]
pub struct Readers {
    /// Requests in flight per connection (one task each).
    pub depth: usize,
    /// Ramp-up before measuring (answers in it are not counted).
    pub warmup: Duration,
    /// The measured time.
    pub measure: Duration,
    /// Per-task request rate; `None` = closed loop as fast as answers come.
    pub rate_per_task: Option<f64>,
    /// Ends the run early when raised (the measured time then ends there).
    pub stop: Option<Arc<AtomicBool>>,
}

impl Readers {
    /// Closed-loop readers, `depth` in flight per connection, `warmup_ms` then `measure_ms`.
    pub fn closed_loop(depth: usize, warmup_ms: u64, measure_ms: u64) -> Self {
        Self {
            depth,
            warmup: Duration::from_millis(warmup_ms),
            measure: Duration::from_millis(measure_ms),
            rate_per_task: None,
            stop: None,
        }
    }
}

/// What readers measured: everything, and split by whether a "writer busy" flag was raised
/// when the request was sent or answered (see [`run_readers`]).
#[derive(Debug, Default)]
pub struct ReadResult {
    pub all: Recorder,
    pub flagged: Recorder,
    pub unflagged: Recorder,
    /// The measured wall time.
    pub elapsed: Duration,
}

/// `n` clients with one connection each to `addr`, every one connected and answered once
/// (a route read of `probe_topic`), at most `parallel` connecting at a time.
pub async fn connect_clients(
    addr: &str,
    n: usize,
    parallel: usize,
    probe_topic: &str,
) -> anyhow::Result<Vec<Client>> {
    let (clients, failed, first) = connect_many(addr, n, parallel, probe_topic).await?;
    match first {
        Some(e) => anyhow::bail!("{failed} of {n} connections failed, first: {e}"),
        None => Ok(clients),
    }
}

/// Like [`connect_clients`], but keeps going when some connections fail (a server may refuse
/// connections past a limit): the connected clients, and how many failed with which first error.
pub async fn connect_many(
    addr: &str,
    n: usize,
    parallel: usize,
    probe_topic: &str,
) -> anyhow::Result<(Vec<Client>, usize, Option<String>)> {
    let sem = Arc::new(Semaphore::new(parallel.max(1)));
    let mut tasks = Vec::with_capacity(n);
    for _ in 0..n {
        let config =
            ClientConfig { connect_timeout: Duration::from_secs(10), ..ClientConfig::default() };
        let client = Client::with_config(addr, config)?;
        let sem = sem.clone();
        let topic = probe_topic.to_owned();
        tasks.push(tokio::spawn(async move {
            let _permit = sem.acquire().await;
            match client.get_route_body(&topic, RouteOptions::default()).await {
                Ok(_) => Ok(client),
                Err(e) if e.code().is_some() => Ok(client),
                Err(e) => Err(e),
            }
        }));
    }
    let (mut clients, mut failed, mut first) = (Vec::with_capacity(n), 0, None);
    for t in tasks {
        match t.await? {
            Ok(c) => clients.push(c),
            Err(e) => {
                failed += 1;
                first.get_or_insert_with(|| e.to_string());
            }
        }
    }
    Ok((clients, failed, first))
}

/// Runs route readers on `clients` (one connection each), `cfg.depth` tasks per client, each
/// reading uniformly random `topics` in a closed loop (or paced at `rate_per_task`). Requests
/// sent during the warm-up are not counted. When `busy` is given, each counted request also goes
/// to `flagged` if the flag was up when it was sent or answered, else to `unflagged`.
pub async fn run_readers(
    clients: &[Client],
    topics: Arc<Vec<Arc<str>>>,
    cfg: &Readers,
    busy: Option<Arc<AtomicBool>>,
    seed: u64,
) -> ReadResult {
    let start = Instant::now();
    let measure_from = start + cfg.warmup;
    let end = measure_from + cfg.measure;
    let mut tasks: Vec<JoinHandle<(Recorder, Recorder, Recorder)>> = Vec::new();
    for (ci, client) in clients.iter().enumerate() {
        for d in 0..cfg.depth {
            let client = client.clone();
            let topics = topics.clone();
            let busy = busy.clone();
            let stop = cfg.stop.clone();
            let interval = cfg.rate_per_task.map(|r| Duration::from_secs_f64(1.0 / r.max(1e-3)));
            let mut rng = fastrand::Rng::with_seed(seed ^ ((ci as u64) << 20) ^ d as u64);
            tasks.push(tokio::spawn(async move {
                let (mut all, mut flagged, mut unflagged) =
                    (Recorder::new(), Recorder::new(), Recorder::new());
                // Spread paced tasks over one interval so they do not send in lockstep.
                let mut next = interval.map(|i| Instant::now() + i.mul_f64(rng.f64()));
                loop {
                    if let Some(at) = next {
                        tokio::time::sleep_until(at).await;
                    }
                    let sent = Instant::now();
                    if sent >= end || stop.as_ref().is_some_and(|s| s.load(Ordering::Relaxed)) {
                        break;
                    }
                    let flag_at_send = busy.as_ref().is_some_and(|b| b.load(Ordering::Relaxed));
                    let topic = &topics[rng.usize(..topics.len())];
                    let result = client.get_route_body(topic, RouteOptions::default()).await;
                    let latency = sent.elapsed();
                    if let (Some(at), Some(i)) = (next.as_mut(), interval) {
                        *at += i;
                    }
                    if sent < measure_from {
                        continue;
                    }
                    let flag =
                        flag_at_send || busy.as_ref().is_some_and(|b| b.load(Ordering::Relaxed));
                    let split = if flag { &mut flagged } else { &mut unflagged };
                    match &result {
                        Ok((_, body)) => {
                            all.ok(latency, body.len());
                            if busy.is_some() {
                                split.ok(latency, body.len());
                            }
                        }
                        Err(e) => {
                            all.error(e, latency);
                            if busy.is_some() {
                                split.error(e, latency);
                            }
                        }
                    }
                }
                (all, flagged, unflagged)
            }));
        }
    }
    let mut out = ReadResult::default();
    for t in tasks {
        if let Ok((a, f, u)) = t.await {
            out.all.merge(&a);
            out.flagged.merge(&f);
            out.unflagged.merge(&u);
        }
    }
    out.elapsed = Instant::now().min(end).saturating_duration_since(measure_from);
    out
}

/// One broker's registration: its result, and the time from its first send.
type Attempt = (Result<Duration, client::Error>, Duration);

/// The simulated brokers of one nameserver, each behind a lock so churn and keep-alive never
/// send for the same broker at once.
pub struct Fleet {
    brokers: Vec<Arc<Mutex<Registrar>>>,
}

impl Fleet {
    /// One registrar per broker of `topology`, all registering with `addr`, signing with
    /// `credentials` when given.
    pub fn new(
        addr: &str,
        topology: &Topology,
        bodies: &[Arc<RegistrationBody>],
        credentials: Option<Credentials>,
    ) -> anyhow::Result<Self> {
        let brokers = topology
            .brokers()
            .into_iter()
            .map(|(c, id)| {
                let timeout = Duration::from_secs(60);
                Registrar::new(addr, id, bodies[c].clone(), timeout, credentials.clone())
            })
            .map(|r| r.map(|r| Arc::new(Mutex::new(r))))
            .collect::<anyhow::Result<_>>()?;
        Ok(Self { brokers })
    }

    /// Writes each broker's first body ahead, into the buffer its registrations reuse: a
    /// measured cold start then does not include the generator faulting in a fresh buffer per
    /// broker (440 MB for S7's 200 brokers).
    pub async fn warm(&self) {
        for b in &self.brokers {
            b.lock().await.warm().await;
        }
    }

    /// Number of brokers.
    pub fn len(&self) -> usize {
        self.brokers.len()
    }

    pub fn is_empty(&self) -> bool {
        self.brokers.is_empty()
    }

    /// Registers every broker once, `parallel` at a time. Fails on the first failed registration.
    pub async fn populate(&self, parallel: usize) -> anyhow::Result<Recorder> {
        let mut rec = Recorder::new();
        // Like a broker: try once more (a slow server may just have timed out).
        for (result, latency) in self.register_each(parallel, true).await? {
            match result {
                Ok(l) => rec.ok(l, 0),
                Err(e) => {
                    rec.error(&e, latency);
                    anyhow::bail!("populating failed: {e}");
                }
            }
        }
        Ok(rec)
    }

    /// Registers every broker once, `parallel` at a time, from the first request to the last
    /// answer: the latencies (failures counted, not retried) and the time that took.
    pub async fn register_all(&self, parallel: usize) -> (Recorder, Duration) {
        let started = Instant::now();
        let mut rec = Recorder::new();
        match self.register_each(parallel, false).await {
            Ok(results) => {
                for (result, latency) in results {
                    match result {
                        Ok(l) => rec.ok(l, 0),
                        Err(e) => rec.error(&e, latency),
                    }
                }
            }
            Err(_) => rec.count_error("panicked"),
        }
        (rec, started.elapsed())
    }

    /// Every broker's registration (once more after a failure when `retry`), `parallel` at a
    /// time: each result with the time from its first send.
    async fn register_each(&self, parallel: usize, retry: bool) -> anyhow::Result<Vec<Attempt>> {
        let sem = Arc::new(Semaphore::new(parallel.max(1)));
        let tasks: Vec<_> = self
            .brokers
            .iter()
            .map(|b| {
                let (b, sem) = (b.clone(), sem.clone());
                tokio::spawn(async move {
                    let _permit = sem.acquire().await;
                    let started = Instant::now();
                    let mut result = b.lock().await.register(true).await;
                    if retry && result.is_err() {
                        result = b.lock().await.register(true).await;
                    }
                    (result, started.elapsed())
                })
            })
            .collect();
        let mut out = Vec::with_capacity(tasks.len());
        for t in tasks {
            out.push(t.await?);
        }
        Ok(out)
    }

    /// Gives broker `j` (in [`Topology::brokers`] order) the table `table(j)` from its next
    /// registration on.
    pub async fn set_tables(&self, table: impl Fn(usize) -> Arc<dyn Table>) {
        for (j, b) in self.brokers.iter().enumerate() {
            b.lock().await.set_body(table(j));
        }
    }

    /// Starts the churn: every broker re-registers its full table (DataVersion bumped) after a
    /// random 0–`max_delay` pause, in a loop, until `stop` flips. The handle yields the
    /// registration latencies of registrations that started at or after `measure_from`.
    pub fn churn(
        &self,
        max_delay: Duration,
        measure_from: Instant,
        stop: watch::Receiver<bool>,
        seed: u64,
    ) -> JoinHandle<Recorder> {
        let tasks: Vec<_> = self
            .brokers
            .iter()
            .enumerate()
            .map(|(i, b)| {
                let b = b.clone();
                let mut stop = stop.clone();
                let mut rng = fastrand::Rng::with_seed(seed ^ (i as u64).wrapping_mul(0x9E37_79B9));
                tokio::spawn(async move {
                    let mut rec = Recorder::new();
                    loop {
                        let pause = max_delay.mul_f64(rng.f64());
                        tokio::select! {
                            _ = tokio::time::sleep(pause) => {}
                            _ = stop.wait_for(|s| *s) => break,
                        }
                        let started = Instant::now();
                        let result = b.lock().await.register(true).await;
                        if started >= measure_from && !*stop.borrow() {
                            match result {
                                Ok(l) => rec.ok(l, 0),
                                Err(e) => rec.error(&e, started.elapsed()),
                            }
                        }
                    }
                    rec
                })
            })
            .collect();
        tokio::spawn(async move {
            let mut all = Recorder::new();
            for t in tasks {
                if let Ok(r) = t.await {
                    all.merge(&r);
                }
            }
            all
        })
    }

    /// Re-registers every broker (same DataVersion) every `period`, like a Java broker's
    /// `registerNameServerPeriod`, spread over the period, until `stop` flips; keeps the brokers
    /// from expiring during long phases. While `pause` is up (a server is being measured) nothing
    /// is sent; when it drops, every broker that is due is registered at once, so no broker goes
    /// longer than `period` plus one phase without a registration (brokers expire after 120 s).
    pub fn keep_alive(
        &self,
        period: Duration,
        stop: watch::Receiver<bool>,
        pause: watch::Receiver<bool>,
    ) -> JoinHandle<()> {
        let brokers = self.brokers.clone();
        tokio::spawn(async move {
            let n = brokers.len().max(1) as u32;
            let (mut stop, mut pause) = (stop, pause);
            let start = Instant::now();
            // Broker j is first due at j·period/n (it registered during populate).
            let mut due: Vec<Instant> =
                (0..brokers.len()).map(|j| start + period * (j as u32 + 1) / n).collect();
            let mut tick = tokio::time::interval_at(start + period / n, period / n);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    _ = tick.tick() => {}
                    _ = stop.wait_for(|s| *s) => return,
                }
                tokio::select! {
                    _ = pause.wait_for(|p| !*p) => {}
                    _ = stop.wait_for(|s| *s) => return,
                }
                for (b, at) in brokers.iter().zip(due.iter_mut()) {
                    // A round's registrations can take seconds (Java's under load): a measured
                    // phase that starts, or the end, stops it between two brokers.
                    if *stop.borrow() {
                        return;
                    }
                    if *pause.borrow() {
                        break;
                    }
                    if Instant::now() < *at {
                        continue;
                    }
                    // A broker busy churning registers anyway.
                    if let Ok(mut r) = b.try_lock() {
                        if let Err(e) = r.register(false).await {
                            tracing::warn!(error = %e, "keep-alive registration failed");
                        }
                    }
                    *at = Instant::now() + period;
                }
            }
        })
    }

    /// Closes every broker connection.
    pub async fn close(&self) {
        for b in &self.brokers {
            b.lock().await.close().await;
        }
    }
}

/// A flag raised for the lifetime of the guard.
pub struct Raised<'a>(&'a AtomicBool);

impl<'a> Raised<'a> {
    pub fn new(flag: &'a AtomicBool) -> Self {
        flag.store(true, Ordering::SeqCst);
        Self(flag)
    }
}

impl Drop for Raised<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::SeqCst);
    }
}
