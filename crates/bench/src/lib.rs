//! Benchmark suite for RocketMQ nameservers: a load generator built on our client, server
//! process control with RSS sampling, the S1–S6 scenarios and the report writer.
//!
//! Binaries: `nsbench` (the suite, a single-server load mode, and report rendering),
//! `nsfault` (the load agents of the fault-injection suite `reliability/run`) and
//! `ceiling` (a server answering every frame with one pre-encoded response). `bench/run` at the
//! repository root builds them, fetches the peer nameservers and runs the suite.

pub mod big;
pub mod ceiling;
pub mod chart;
pub mod churn;
pub mod cpu;
pub mod crc_patch;
pub mod crowd;
pub mod fault;
pub mod load;
pub mod overhead;
pub mod phase;
pub mod raw;
pub mod report;
pub mod results;
pub mod scale;
pub mod server;
pub mod stats;
pub mod suite;
pub mod targets;
pub mod topology;

/// What the binaries share at start: `tracing` to stderr (`RUST_LOG`, default `warn`) and a
/// multi-threaded runtime.
pub fn cli_runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    Ok(tokio::runtime::Builder::new_multi_thread().enable_all().build()?)
}
