//! S3, the big broker: one broker registering `big_topics` topics `big_registrations` times while
//! paced readers read S1 topics; reads while a registration is in flight vs. outside.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use client::{Client, ClientConfig, RouteOptions};
use tokio::time::Instant;

use crate::load::{self, Raised, Readers};
use crate::phase::ms;
use crate::results::{Sizes, S3};
use crate::topology::{broker_identity, random_names, Registrar, RegistrationBody, Topology};

/// The big broker's topics and its two tables of them (8 and 4 queues per topic): registrations
/// alternate between the tables, so every one changes every topic and is applied in full (as
/// Java always does).
pub struct BigBroker {
    topics: Vec<Arc<str>>,
    bodies: [Arc<RegistrationBody>; 2],
}

impl BigBroker {
    /// The broker of `sizes.big_topics` topics (the same for every server).
    pub fn new(sizes: &Sizes) -> Self {
        let topics = random_names(sizes.seed ^ 0xB16, sizes.big_topics, "big");
        let bodies = [
            Arc::new(RegistrationBody::with_queues(&topics, 8)),
            Arc::new(RegistrationBody::with_queues(&topics, 4)),
        ];
        Self { topics, bodies }
    }

    /// S3 against the server at `addr`: registers `sizes.big_registrations` times while paced
    /// readers run, then unregisters the broker so later phases see the S1 population only.
    pub async fn phase(
        &self,
        addr: &str,
        sizes: &Sizes,
        topology: &Topology,
    ) -> anyhow::Result<S3> {
        let identity = broker_identity("bench-big", "broker-big-0", "127.0.200.1:10911");
        let registrar = Registrar::new(
            addr,
            identity.clone(),
            self.bodies[0].clone(),
            Duration::from_secs(120),
            None,
        )?;
        let probe = topology.topics[0].clone();
        let clients = load::connect_clients(addr, sizes.s3_conns, 64, &probe).await?;
        let busy = Arc::new(AtomicBool::new(false));
        let stop = Arc::new(AtomicBool::new(false));
        let readers = Readers {
            depth: 1,
            warmup: Duration::from_millis(500),
            measure: Duration::from_secs(600),
            rate_per_task: Some(sizes.s3_rate / sizes.s3_conns.max(1) as f64),
            stop: Some(stop.clone()),
        };
        let reading = {
            let (topics, busy) = (topology.topics.clone(), busy.clone());
            tokio::spawn(async move {
                load::run_readers(&clients, topics, &readers, Some(busy), 77).await
            })
        };
        // Baseline reads first.
        tokio::time::sleep(Duration::from_millis(1_500)).await;
        let last = self.topics.last().cloned().context("no big topics")?;
        // The big broker runs on a thread and runtime of its own, as a broker is a process of
        // its own: its 10 MB writes must not hold up the readers' runtime, only the server.
        let (done_tx, done_rx) = tokio::sync::oneshot::channel();
        {
            let (addr, bodies, n) = (addr.to_owned(), self.bodies.clone(), sizes.big_registrations);
            let busy = busy.clone();
            std::thread::Builder::new().name("big-broker".into()).spawn(move || {
                let outcome = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .context("big broker runtime")
                    .and_then(|rt| {
                        rt.block_on(register(&addr, registrar, &bodies, n, &busy, &last))
                    });
                let _ = done_tx.send(outcome);
            })?;
        }
        let registered = done_rx.await.context("big broker thread")?;
        stop.store(true, Ordering::SeqCst);
        let result = reading.await?;
        let admin = Client::new(addr)?;
        let _ = admin.unregister_broker(&identity).await;
        tokio::time::sleep(Duration::from_secs(2)).await;
        let mut s3 = registered?;
        s3.topics = self.bodies[0].topics();
        s3.body_bytes = self.bodies[0].len();
        s3.reads_during = result.flagged.summary(result.elapsed);
        s3.reads_outside = result.unflagged.summary(result.elapsed);
        Ok(s3)
    }
}

/// The big broker's registrations (run on its own runtime): `n` times, 700 ms apart, its table
/// alternating between `bodies`, `busy` raised while each is in flight. Fills the first's
/// latency, when `last` became readable after it, and the others' latencies.
async fn register(
    addr: &str,
    mut registrar: Registrar,
    bodies: &[Arc<RegistrationBody>; 2],
    n: usize,
    busy: &AtomicBool,
    last: &Arc<str>,
) -> anyhow::Result<S3> {
    let mut s3 = S3::default();
    for k in 0..n {
        registrar.set_body(bodies[k % 2].clone());
        let raised = Raised::new(busy);
        let sent = Instant::now();
        let poller = (k == 0).then(|| {
            let (addr, last) = (addr.to_owned(), last.clone());
            tokio::spawn(async move { first_visible(&addr, &last, sent).await })
        });
        let took = registrar.register(true).await.context("big registration")?;
        drop(raised);
        if let Some(p) = poller {
            s3.first_apply_ms = ms(took);
            s3.visible_ms = p.await.ok().flatten().map(ms);
        } else {
            s3.rereg_ms.push(ms(took));
        }
        tokio::time::sleep(Duration::from_millis(700)).await;
    }
    registrar.close().await;
    Ok(s3)
}

/// Polls `topic` until it is readable (at most 120 s); the time since `since`.
async fn first_visible(addr: &str, topic: &str, since: Instant) -> Option<Duration> {
    let client = Client::with_config(
        addr,
        ClientConfig { request_timeout: Duration::from_secs(10), ..ClientConfig::default() },
    )
    .ok()?;
    while since.elapsed() < Duration::from_secs(120) {
        if client.get_route_body(topic, RouteOptions::default()).await.is_ok() {
            let t = since.elapsed();
            client.close().await;
            return Some(t);
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    None
}
