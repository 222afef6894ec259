//! Files a configuration names, watched for changes: a content hash, and the polling loop that
//! runs a watcher's step on the blocking pool until shutdown (the TLS certificates and the
//! access-control accounts file are both reloaded this way).

use std::collections::hash_map::DefaultHasher;
use std::future::Future;
use std::hash::{Hash, Hasher};
use std::path::Path;
use std::time::Duration;

/// Java's poll interval (`FileWatchService`).
pub const DEFAULT_INTERVAL: Duration = Duration::from_millis(500);

/// Runs `step` on `watcher` on the blocking pool every `interval` (the first time one interval
/// from now) until `shutdown` completes; a step that panics ends the loop with an error naming
/// `what`.
pub async fn poll_blocking<W: Send + 'static>(
    mut watcher: W,
    interval: Duration,
    shutdown: impl Future,
    what: &'static str,
    step: impl Fn(&mut W) + Clone + Send + 'static,
) {
    let mut ticker = tokio::time::interval_at(tokio::time::Instant::now() + interval, interval);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        tokio::select! {
            _ = &mut shutdown => break,
            _ = ticker.tick() => {}
        }
        let step = step.clone();
        match tokio::task::spawn_blocking(move || {
            step(&mut watcher);
            watcher
        })
        .await
        {
            Ok(w) => watcher = w,
            Err(e) => {
                tracing::error!(error = %e, "{what} stopped");
                break;
            }
        }
    }
}

/// A hash of the file's content; `None` when it cannot be read.
pub fn hash_file(path: &Path) -> Option<u64> {
    let bytes = std::fs::read(path).ok()?;
    let mut hasher = DefaultHasher::new();
    bytes.hash(&mut hasher);
    Some(hasher.finish())
}
