//! The RocketMQ version each live broker last registered with (the `version` of its
//! REGISTER_BROKER), for the operations API; entries go when the broker is removed, and a
//! registration that leaves no live broker (fenced by a newer stateVersion) keeps none.

use std::collections::HashMap;

use parking_lot::Mutex;

/// (cluster, broker address) → `MQVersion` ordinal.
#[derive(Debug, Default)]
pub struct BrokerVersions(Mutex<HashMap<(String, String), i32>>);

impl BrokerVersions {
    /// Records the version of a registration (no allocation when it is unchanged).
    pub fn set(&self, cluster: &str, addr: &str, version: i32) {
        let mut map = self.0.lock();
        let key = (cluster.to_owned(), addr.to_owned());
        if map.get(&key) != Some(&version) {
            map.insert(key, version);
        }
    }

    /// The version a broker registered with.
    pub fn get(&self, cluster: &str, addr: &str) -> Option<i32> {
        self.0.lock().get(&(cluster.to_owned(), addr.to_owned())).copied()
    }

    /// Brokers whose version is kept.
    pub fn len(&self) -> usize {
        self.0.lock().len()
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Forgets a removed broker.
    pub fn remove(&self, cluster: &str, addr: &str) {
        self.0.lock().remove(&(cluster.to_owned(), addr.to_owned()));
    }
}
