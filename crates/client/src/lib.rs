//! Async RocketMQ remoting client over [`remoting::RemotingCodec`]: typed calls for every
//! nameserver request ([`Client`]), a broker registration agent ([`agent`]) and a producer-side
//! route cache with latency fault tolerance ([`route_cache`]).
//!
//! Architecture invariants: the client never interprets route tables beyond what a Java client
//! does; a broken connection is never repaired in place, it is replaced on the next call.

pub mod agent;
mod client;
mod connection;
mod controller;
mod error;
mod namesrv;
pub mod properties;
pub mod route_cache;
pub mod tls;

pub use client::{parse_addrs, Client, ClientConfig};
pub use controller::LEADER_WAIT;
pub use error::{Error, Result};
pub use namesrv::{
    BrokerIdentity, QueryDataVersionResult, RegisterBroker, RegisterBrokerResult, RouteOptions,
    UnitTopics, ZONE_NAME_EXT,
};
pub use remoting::signature::Credentials;
pub use tls::{ClientTls, TlsSettings};
