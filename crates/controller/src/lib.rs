//! The RocketMQ 5 controller: automatic master election for brokers in controller mode.
//!
//! `replicas` is the replicated state machine (pure), `elect` the election policy, `liveness`
//! the broker heartbeat table.

pub mod config;
pub mod elect;
pub mod liveness;
pub mod replicas;

pub use config::{Config, SharedConfig};
