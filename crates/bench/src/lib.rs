//! Benchmark suite for RocketMQ nameservers: a load generator built on our client, server
//! process control with RSS sampling, the S1–S6 scenarios and the report writer.
