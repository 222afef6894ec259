//! The `read` agent: paced route readers on the topics of the simulated cluster, a probe that
//! opens a new connection for each request (a client starting up), and a sweeper that checks
//! whether routes are complete (every broker of the topic's cluster in `brokerDatas` and
//! `queueDatas`).
//!
//! Events: `bucket` (every bucket: the readers' and the probe's answers, TOPIC_NOT_EXIST and
//! transport failures counted by kind, latency quantiles), `phase` (on the `phase NAME` command
//! and at the end: the same figures over the phase that ended), `sweep` (each sweep's result),
//! `end`.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use client::{Client, ClientConfig, RouteOptions};
use remoting::body::TopicRouteData;
use serde_json::json;
use tokio::time::Instant;

use super::{emit, now_ms, summary_json, Control};
use crate::stats::Recorder;
use crate::topology::Topology;

/// How the readers behave.
#[derive(Debug, Clone)]
pub struct ReadConfig {
    pub addr: String,
    /// Reader connections (kept open; remade after the server closes them).
    pub conns: usize,
    /// Reader tasks per connection.
    pub depth: usize,
    /// Total paced request rate of the readers (req/s).
    pub rate: f64,
    /// Requests per second of the new-connection probe (0 = none).
    pub fresh_rate: f64,
    /// Request timeout.
    pub timeout: Duration,
    /// Length of a `bucket`.
    pub bucket: Duration,
    /// Topics checked per sweep (all when at least their number; 0 = no sweeper).
    pub sweep_sample: usize,
    /// Pause between two sweeps.
    pub sweep_pause: Duration,
}

/// What the readers and the probe recorded over one bucket or phase.
#[derive(Default)]
struct Tally {
    steady: Recorder,
    fresh: Recorder,
}

impl Tally {
    fn json(&self, elapsed: Duration) -> serde_json::Value {
        json!({
            "steady": summary_json(&self.steady.summary(elapsed)),
            "fresh": summary_json(&self.fresh.summary(elapsed)),
        })
    }
}

struct Tallies {
    bucket: Tally,
    phase: Tally,
}

impl Tallies {
    fn record(&mut self, fresh: bool, result: &Result<usize, client::Error>, latency: Duration) {
        for t in [&mut self.bucket, &mut self.phase] {
            let r = if fresh { &mut t.fresh } else { &mut t.steady };
            match result {
                Ok(bytes) => r.ok(latency, *bytes),
                Err(e) => r.error(e, latency),
            }
        }
    }
}

/// Runs the readers until `control` stops them.
pub async fn run(cfg: ReadConfig, topology: &Topology, control: Control) -> anyhow::Result<()> {
    let topics = topology.topics.clone();
    anyhow::ensure!(!topics.is_empty(), "no topics to read");
    let tallies =
        Arc::new(Mutex::new(Tallies { bucket: Tally::default(), phase: Tally::default() }));
    let client_config = ClientConfig {
        request_timeout: cfg.timeout,
        connect_timeout: cfg.timeout,
        ..ClientConfig::default()
    };
    let mut tasks = Vec::new();
    let per_task = cfg.rate / (cfg.conns * cfg.depth).max(1) as f64;
    for c in 0..cfg.conns {
        let client = Client::with_config(&cfg.addr, client_config.clone())?;
        for d in 0..cfg.depth {
            let seed = ((c as u64) << 16) ^ d as u64;
            tasks.push(tokio::spawn(paced(
                per_task,
                seed,
                control.clone(),
                topics.clone(),
                tallies.clone(),
                Source::Steady(client.clone()),
            )));
        }
    }
    if cfg.fresh_rate > 0.0 {
        let source = Source::Fresh { addr: cfg.addr.clone(), config: client_config.clone() };
        tasks.push(tokio::spawn(paced(
            cfg.fresh_rate,
            u64::MAX,
            control.clone(),
            topics.clone(),
            tallies.clone(),
            source,
        )));
    }
    if cfg.sweep_sample > 0 {
        let client = Client::with_config(&cfg.addr, client_config.clone())?;
        tasks.push(tokio::spawn(sweeper(
            client,
            topology.clone(),
            cfg.sweep_sample,
            cfg.sweep_pause,
            control.clone(),
        )));
    }

    let mut commands = control.commands.subscribe();
    let mut tick = tokio::time::interval(cfg.bucket);
    tick.tick().await;
    let (mut bucket_from, mut phase_from) = (Instant::now(), Instant::now());
    let (mut phase_name, mut phase_t0): (Arc<str>, u64) = (Arc::from("start"), now_ms());
    let mut stop = control.stop.clone();
    let end_phase = |tallies: &Mutex<Tallies>, name: &str, t0: u64, from: Instant| {
        let t = std::mem::take(&mut tallies.lock().unwrap_or_else(|e| e.into_inner()).phase);
        let mut v = t.json(from.elapsed());
        v["event"] = json!("phase");
        v["name"] = json!(name);
        v["t0"] = json!(t0);
        v["t1"] = json!(now_ms());
        emit(&v);
    };
    loop {
        tokio::select! {
            _ = tick.tick() => {
                let t = std::mem::take(&mut tallies.lock().unwrap_or_else(|e| e.into_inner()).bucket);
                let mut v = t.json(bucket_from.elapsed());
                bucket_from = Instant::now();
                v["event"] = json!("bucket");
                v["t"] = json!(now_ms());
                emit(&v);
            }
            cmd = commands.recv() => {
                let Ok(cmd) = cmd else { continue };
                match cmd.strip_prefix("phase ") {
                    Some(name) => {
                        end_phase(&tallies, &phase_name, phase_t0, phase_from);
                        phase_name = Arc::from(name.trim());
                        phase_t0 = now_ms();
                        phase_from = Instant::now();
                    }
                    None => emit(&json!({"event": "error", "t": now_ms(), "message": format!("unknown command {cmd:?}")})),
                }
            }
            _ = stop.wait_for(|s| *s) => break,
        }
    }
    for t in tasks {
        let _ = t.await;
    }
    end_phase(&tallies, &phase_name, phase_t0, phase_from);
    emit(&json!({"event": "end", "t": now_ms()}));
    Ok(())
}

/// Where a reader's requests go: a long-lived client, or a new client per request.
enum Source {
    Steady(Client),
    Fresh { addr: String, config: ClientConfig },
}

/// One reader task: a route read of a random topic every `1/rate` seconds (a late answer
/// delays the next request; missed slots are not made up).
async fn paced(
    rate: f64,
    seed: u64,
    control: Control,
    topics: Arc<Vec<Arc<str>>>,
    tallies: Arc<Mutex<Tallies>>,
    source: Source,
) {
    let interval = Duration::from_secs_f64(1.0 / rate.max(1e-3));
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut next = Instant::now() + interval.mul_f64(rng.f64());
    let mut stop = control.stop.clone();
    loop {
        tokio::select! {
            _ = tokio::time::sleep_until(next) => {}
            _ = stop.wait_for(|s| *s) => return,
        }
        next = (next + interval).max(Instant::now());
        let topic = &topics[rng.usize(..topics.len())];
        let sent = Instant::now();
        let (result, fresh) = match &source {
            Source::Steady(client) => (read(client, topic).await, false),
            Source::Fresh { addr, config } => {
                let result = match Client::with_config(addr, config.clone()) {
                    Ok(client) => {
                        let r = read(&client, topic).await;
                        client.close().await;
                        r
                    }
                    Err(e) => Err(e),
                };
                (result, true)
            }
        };
        let latency = sent.elapsed();
        tallies.lock().unwrap_or_else(|e| e.into_inner()).record(fresh, &result, latency);
    }
}

async fn read(client: &Client, topic: &str) -> Result<usize, client::Error> {
    client.get_route_body(topic, RouteOptions::default()).await.map(|(_, body)| body.len())
}

/// Whether `route` has every broker of `want` in both `brokerDatas` and `queueDatas`.
pub fn route_complete(route: &TopicRouteData, want: &HashSet<String>) -> bool {
    let brokers: HashSet<&str> =
        route.broker_datas.iter().map(|b| b.broker_name.as_str()).collect();
    let queues: HashSet<&str> = route.queue_datas.iter().map(|q| q.broker_name.as_str()).collect();
    want.iter().all(|b| brokers.contains(b.as_str()) && queues.contains(b.as_str()))
}

/// Sweeps `sample` topics (a fresh random sample each time, or all of them) and prints how
/// many routes were complete, until stopped.
async fn sweeper(
    client: Client,
    topology: Topology,
    sample: usize,
    pause: Duration,
    control: Control,
) {
    let t = topology.shape.topics_per_cluster.max(1);
    let expected: Vec<HashSet<String>> = (0..topology.shape.clusters)
        .map(|c| {
            (0..topology.shape.brokers_per_cluster)
                .map(|i| topology.broker(c, i).broker_name)
                .collect()
        })
        .collect();
    let expected = Arc::new(expected);
    let n = topology.topics.len();
    let mut rng = fastrand::Rng::with_seed(0x5eed);
    let mut stop = control.stop.clone();
    loop {
        let picks: Vec<usize> =
            if sample >= n { (0..n).collect() } else { rng.choose_multiple(0..n, sample) };
        let t0 = now_ms();
        // 16 requests in flight on the one connection.
        let chunks: Vec<Vec<usize>> =
            picks.chunks(picks.len().div_ceil(16)).map(<[usize]>::to_vec).collect();
        let mut tasks = Vec::new();
        for chunk in chunks {
            let (client, topology, expected) = (client.clone(), topology.clone(), expected.clone());
            tasks.push(tokio::spawn(async move {
                let (mut complete, mut not_exist, mut failed) = (0usize, 0usize, 0usize);
                for i in chunk {
                    let want = &expected[i / t];
                    match client.get_route(&topology.topics[i]).await {
                        Ok(route) => complete += usize::from(route_complete(&route, want)),
                        Err(e)
                            if e.response_code() == Some(remoting::ResponseCode::TopicNotExist) =>
                        {
                            not_exist += 1;
                        }
                        Err(_) => failed += 1,
                    }
                }
                (complete, not_exist, failed)
            }));
        }
        let (mut complete, mut not_exist, mut failed) = (0, 0, 0);
        for task in tasks {
            if let Ok((c, n, f)) = task.await {
                complete += c;
                not_exist += n;
                failed += f;
            }
        }
        emit(&json!({
            "event": "sweep", "t0": t0, "t1": now_ms(), "checked": picks.len(),
            "complete": complete, "not_exist": not_exist, "failed": failed,
        }));
        tokio::select! {
            _ = tokio::time::sleep(pause) => {}
            _ = stop.wait_for(|s| *s) => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use remoting::body::{BrokerData, QueueData};

    use super::*;

    fn route(brokers: &[&str], queues: &[&str]) -> TopicRouteData {
        TopicRouteData {
            broker_datas: brokers
                .iter()
                .map(|b| BrokerData { broker_name: (*b).to_owned(), ..BrokerData::default() })
                .collect(),
            queue_datas: queues
                .iter()
                .map(|b| QueueData { broker_name: (*b).to_owned(), ..QueueData::default() })
                .collect(),
            ..TopicRouteData::default()
        }
    }

    #[test]
    fn a_route_is_complete_only_with_every_broker_in_both_lists() {
        let want: HashSet<String> = ["a", "b"].iter().map(|s| (*s).to_owned()).collect();
        assert!(route_complete(&route(&["a", "b", "c"], &["b", "a"]), &want));
        assert!(!route_complete(&route(&["a"], &["a", "b"]), &want), "b has no brokerData");
        assert!(!route_complete(&route(&["a", "b"], &["a"]), &want), "b has no queueData");
        assert!(!route_complete(&TopicRouteData::default(), &want));
    }
}
