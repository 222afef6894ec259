//! The nameserver daemon.
