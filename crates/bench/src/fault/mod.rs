//! Load agents of the fault-injection suite (`reliability/run`, issue #13): simulated brokers
//! ([`fleet`]) and route readers with a completeness sweeper ([`read`]) that keep running while
//! the suite restarts, kills, partitions or attacks the nameserver under test.
//!
//! Each agent is a child process of the suite (binary `nsfault`): it prints one JSON object per
//! line on stdout (every object has an `event` and wall-clock times in Unix milliseconds, so the
//! suite can line them up with its own fault times) and reads commands, one per line, on stdin.
//! End of stdin stops it.

pub mod fleet;
pub mod read;

use std::io::Write;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::Value;
use tokio::io::AsyncBufReadExt;
use tokio::sync::{broadcast, watch};

use crate::stats::Summary;
use crate::topology::{Shape, Topology};

/// Wall-clock time in Unix milliseconds.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// Prints one event line (flushed, so the suite sees it at once).
pub fn emit(event: &Value) {
    let mut out = std::io::stdout().lock();
    // A closed stdout means the suite is gone; the stop signal follows from stdin.
    let _ = writeln!(out, "{event}");
    let _ = out.flush();
}

/// The figures of a [`Summary`] as a JSON object (latencies in microseconds).
pub fn summary_json(s: &Summary) -> Value {
    serde_json::json!({
        "ok": s.ok,
        "errors": s.errors,
        "p50_us": s.p50_us,
        "p99_us": s.p99_us,
        "p999_us": s.p999_us,
        "max_us": s.max_us,
    })
}

/// Commands from stdin and the stop signal (raised at end of stdin).
#[derive(Clone)]
pub struct Control {
    pub commands: broadcast::Sender<Arc<str>>,
    pub stop: watch::Receiver<bool>,
}

impl Control {
    /// Starts reading stdin: every non-empty line is broadcast as a command; `quit` or end of
    /// input raises `stop`.
    pub fn from_stdin() -> Self {
        let (commands, _) = broadcast::channel(64);
        let (stop_tx, stop) = watch::channel(false);
        let tx = commands.clone();
        tokio::spawn(async move {
            let mut lines = tokio::io::BufReader::new(tokio::io::stdin()).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                let line = line.trim();
                if line == "quit" {
                    break;
                }
                if !line.is_empty() {
                    let _ = tx.send(Arc::from(line));
                }
            }
            stop_tx.send_replace(true);
        });
        Self { commands, stop }
    }

    /// Resolves when stop is raised.
    pub async fn stopped(&self) {
        let mut stop = self.stop.clone();
        let _ = stop.wait_for(|s| *s).await;
    }
}

/// The simulated cluster shared by the agents of one run (they must agree on it).
#[derive(Debug, Clone, Copy, clap::Args)]
pub struct ShapeArgs {
    /// Clusters.
    #[arg(long, default_value_t = 10)]
    pub clusters: usize,
    /// Brokers per cluster.
    #[arg(long, default_value_t = 20)]
    pub brokers: usize,
    /// Topics per cluster (every broker of a cluster serves all of them).
    #[arg(long, default_value_t = 100)]
    pub topics: usize,
    /// Seed of the topic names.
    #[arg(long, default_value_t = 13)]
    pub seed: u64,
}

impl ShapeArgs {
    /// The topology these arguments describe.
    pub fn topology(&self) -> Topology {
        let shape = Shape {
            clusters: self.clusters,
            brokers_per_cluster: self.brokers,
            topics_per_cluster: self.topics,
        };
        Topology::new(shape, self.seed)
    }
}
