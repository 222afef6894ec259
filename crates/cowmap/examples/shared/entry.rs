//! What the write examples share: the server's allocator and a topic entry shaped like the
//! route table's.

use std::sync::Arc;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// A topic's entry as the route table keeps it: its name inline, a shared list of queues.
pub struct Entry {
    key: cowmap::InlineKey,
    _queues: Arc<[u64]>,
    _more: [u64; 4],
}

impl Entry {
    /// The entry of topic `name`, sharing the queue list `queues`.
    pub fn new(name: &str, queues: &Arc<[u64]>) -> Arc<Self> {
        let key = cowmap::InlineKey::new(name);
        Arc::new(Self { key, _queues: queues.clone(), _more: [0; 4] })
    }
}

impl cowmap::Keyed for Entry {
    fn key(&self) -> &str {
        self.key.as_str()
    }
}
