//! Test support shared by the transport tests (and, by path, the daemon's TLS tests).
#![allow(dead_code)]

pub mod pki;
