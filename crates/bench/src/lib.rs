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
pub mod cpu;
pub mod fault;
pub mod load;
pub mod overhead;
pub mod raw;
pub mod report;
pub mod results;
pub mod server;
pub mod stats;
pub mod suite;
pub mod topology;
