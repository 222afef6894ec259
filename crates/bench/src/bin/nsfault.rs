//! `nsfault`: the load agents of the fault-injection suite (`reliability/run`): `fleet`
//! (simulated brokers) and `read` (route readers, a new-connection probe, a route sweeper).
//! JSON events on stdout, commands on stdin; see `bench::fault`.

use std::time::Duration;

use bench::fault::fleet::{self, FleetConfig};
use bench::fault::read::{self, ReadConfig};
use bench::fault::{Control, ShapeArgs};
use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(about = "Load agents of the nameserver fault-injection suite (issue #13)")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Simulated brokers: register, re-register every period; `register-all` on stdin = storm.
    Fleet {
        #[command(flatten)]
        shape: ShapeArgs,
        /// The nameserver.
        #[arg(long)]
        addr: String,
        /// Re-registration period of each broker (ms; Java's default is 30000).
        #[arg(long, default_value_t = 30_000)]
        period_ms: u64,
        /// Brokers registering at once during the first registration.
        #[arg(long, default_value_t = 32)]
        parallel: usize,
        /// Timeout of one registration (ms).
        #[arg(long, default_value_t = 24_000)]
        timeout_ms: u64,
        /// Read/write queues per topic.
        #[arg(long, default_value_t = 8)]
        queues: i32,
        /// Bump the DataVersion on every periodic registration.
        #[arg(long)]
        bump: bool,
    },
    /// Route readers, a new-connection probe and a route sweeper; `phase NAME` on stdin.
    Read {
        #[command(flatten)]
        shape: ShapeArgs,
        /// The nameserver.
        #[arg(long)]
        addr: String,
        #[arg(long, default_value_t = 8)]
        conns: usize,
        #[arg(long, default_value_t = 4)]
        depth: usize,
        /// Total request rate of the readers (req/s).
        #[arg(long, default_value_t = 1000.0)]
        rate: f64,
        /// Requests per second over a new connection each (0 = none).
        #[arg(long, default_value_t = 0.0)]
        fresh_rate: f64,
        /// Request timeout (ms).
        #[arg(long, default_value_t = 3000)]
        timeout_ms: u64,
        /// Bucket length (ms).
        #[arg(long, default_value_t = 250)]
        bucket_ms: u64,
        /// Topics checked per sweep (0 = no sweeper).
        #[arg(long, default_value_t = 0)]
        sweep_sample: usize,
        /// Pause between sweeps (ms).
        #[arg(long, default_value_t = 100)]
        sweep_pause_ms: u64,
    },
}

fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    rt.block_on(async move {
        let control = Control::from_stdin();
        match cli.cmd {
            Cmd::Fleet { shape, addr, period_ms, parallel, timeout_ms, queues, bump } => {
                let cfg = FleetConfig {
                    addr,
                    period: Duration::from_millis(period_ms),
                    parallel,
                    timeout: Duration::from_millis(timeout_ms),
                    queues,
                    bump,
                };
                fleet::run(cfg, &shape.topology(), control).await
            }
            Cmd::Read {
                shape,
                addr,
                conns,
                depth,
                rate,
                fresh_rate,
                timeout_ms,
                bucket_ms,
                sweep_sample,
                sweep_pause_ms,
            } => {
                let cfg = ReadConfig {
                    addr,
                    conns,
                    depth,
                    rate,
                    fresh_rate,
                    timeout: Duration::from_millis(timeout_ms),
                    bucket: Duration::from_millis(bucket_ms),
                    sweep_sample,
                    sweep_pause: Duration::from_millis(sweep_pause_ms),
                };
                read::run(cfg, &shape.topology(), control).await
            }
        }
    })
}
