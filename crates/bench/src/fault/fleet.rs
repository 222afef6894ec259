//! The `fleet` agent: simulated brokers that register with one nameserver and keep
//! re-registering every period (spread over it, like Java brokers' `registerNameServerPeriod`),
//! across restarts of the nameserver (each broker's connection is remade on its next
//! registration). On the `register-all` command every broker registers at once (a registration
//! storm) and the storm's figures are printed.
//!
//! Events: `populated` (first registration of every broker), `regs` (per second: answered and
//! failed registrations), `storm` (one per `register-all`), `end`.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;
use tokio::sync::{mpsc, Semaphore};
use tokio::time::Instant;

use super::{emit, now_ms, summary_json, Control};
use crate::stats::{error_kind, Recorder};
use crate::topology::{Registrar, RegistrationBody, Topology};

/// How the fleet behaves.
#[derive(Debug, Clone)]
pub struct FleetConfig {
    pub addr: String,
    /// Re-registration period of each broker.
    pub period: Duration,
    /// Brokers registering at the same time during the first registration.
    pub parallel: usize,
    /// Timeout of one registration (Java brokers: `registerBrokerTimeoutMills` = 24 s).
    pub timeout: Duration,
    /// Read and write queues per topic.
    pub queues: i32,
    /// Move every broker's DataVersion on with each periodic registration (the nameserver
    /// then re-applies the table, and a route snapshot has something new to write).
    pub bump: bool,
}

/// Runs the fleet until `control` stops it.
pub async fn run(cfg: FleetConfig, topology: &Topology, control: Control) -> anyhow::Result<()> {
    let bodies: Vec<Arc<RegistrationBody>> = (0..topology.shape.clusters)
        .map(|c| Arc::new(RegistrationBody::with_queues(topology.cluster_topics(c), cfg.queues)))
        .collect();
    let brokers: Vec<Arc<tokio::sync::Mutex<Registrar>>> = topology
        .brokers()
        .into_iter()
        .map(|(c, id)| Registrar::new(&cfg.addr, id, bodies[c].clone(), cfg.timeout))
        .map(|r| r.map(|r| Arc::new(tokio::sync::Mutex::new(r))))
        .collect::<anyhow::Result<_>>()?;
    let n = brokers.len();

    // First registration, `parallel` at a time; failures are reported, not fatal (the server
    // may be down; the periodic registrations retry).
    let t0 = now_ms();
    let started = Instant::now();
    let sem = Arc::new(Semaphore::new(cfg.parallel.max(1)));
    let first: Vec<_> = brokers
        .iter()
        .map(|b| {
            let (b, sem) = (b.clone(), sem.clone());
            tokio::spawn(async move {
                let _permit = sem.acquire().await;
                b.lock().await.register(false).await
            })
        })
        .collect();
    let mut rec = Recorder::new();
    for t in first {
        match t.await? {
            Ok(l) => rec.ok(l, 0),
            Err(e) => rec.error(&e, Duration::ZERO),
        }
    }
    let s = rec.summary(started.elapsed());
    emit(
        &json!({"event": "populated", "t0": t0, "t1": now_ms(), "brokers": n, "regs": summary_json(&s)}),
    );

    let tally = Arc::new(Mutex::new(Recorder::new()));
    let (storm_tx, mut storm_rx) = mpsc::unbounded_channel::<(Result<Duration, String>, bool)>();
    let mut triggers = Vec::with_capacity(n);
    let mut tasks = Vec::with_capacity(n);
    let base = Instant::now();
    for (j, b) in brokers.iter().enumerate() {
        let (trigger_tx, mut trigger_rx) = mpsc::unbounded_channel::<()>();
        triggers.push(trigger_tx);
        let (b, tally, storm_tx, bump) = (b.clone(), tally.clone(), storm_tx.clone(), cfg.bump);
        let mut stop = control.stop.clone();
        let period = cfg.period;
        // Broker j is first due at (j+1)/n of a period: the fleet spreads evenly.
        let mut due = base + period.mul_f64((j + 1) as f64 / n as f64);
        tasks.push(tokio::spawn(async move {
            loop {
                let storm = tokio::select! {
                    _ = tokio::time::sleep_until(due) => false,
                    Some(()) = trigger_rx.recv() => true,
                    _ = stop.wait_for(|s| *s) => return,
                };
                let started = Instant::now();
                let mut result = b.lock().await.register(bump && !storm).await;
                if storm {
                    // The connection may be the one the nameserver's restart broke, not yet seen
                    // closed: a broker's client reconnects and sends again.
                    let stale = result.as_ref().is_err_and(client::Error::is_transport);
                    if stale {
                        result = b.lock().await.register(false).await;
                    }
                    let _ = storm_tx.send((result.as_ref().map(|d| *d).map_err(error_kind), stale));
                }
                {
                    let mut t = tally.lock().unwrap_or_else(|e| e.into_inner());
                    match &result {
                        Ok(l) => t.ok(*l, 0),
                        Err(e) => t.error(e, started.elapsed()),
                    }
                }
                due = Instant::now() + period;
            }
        }));
    }
    drop(storm_tx);

    let mut commands = control.commands.subscribe();
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    tick.tick().await;
    let mut tick_from = Instant::now();
    let mut stop = control.stop.clone();
    loop {
        tokio::select! {
            _ = tick.tick() => {
                let rec = std::mem::take(&mut *tally.lock().unwrap_or_else(|e| e.into_inner()));
                let s = rec.summary(tick_from.elapsed());
                tick_from = Instant::now();
                if s.ok > 0 || s.error_count() > 0 {
                    emit(&json!({"event": "regs", "t": now_ms(), "regs": summary_json(&s)}));
                }
            }
            cmd = commands.recv() => {
                let Ok(cmd) = cmd else { continue };
                if &*cmd != "register-all" {
                    emit(&json!({"event": "error", "t": now_ms(), "message": format!("unknown command {cmd:?}")}));
                    continue;
                }
                let t0 = now_ms();
                let started = Instant::now();
                for t in &triggers {
                    let _ = t.send(());
                }
                let (mut rec, mut retried) = (Recorder::new(), 0);
                for _ in 0..n {
                    let Some((result, stale)) = storm_rx.recv().await else { break };
                    retried += usize::from(stale);
                    match result {
                        Ok(l) => rec.ok(l, 0),
                        Err(kind) => rec.count_error(&kind),
                    }
                }
                let s = rec.summary(started.elapsed());
                emit(&json!({
                    "event": "storm", "t0": t0, "t1": now_ms(), "brokers": n,
                    "retried_on_stale_connection": retried, "regs": summary_json(&s),
                }));
            }
            _ = stop.wait_for(|s| *s) => break,
        }
    }
    for t in tasks {
        let _ = t.await;
    }
    emit(&json!({"event": "end", "t": now_ms()}));
    Ok(())
}
