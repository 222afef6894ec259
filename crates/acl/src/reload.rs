//! Accounts hot reload: polls the accounts file like the TLS certificates (every 500 ms, a
//! content hash) and puts a changed, valid file in force at once. A broken file keeps the
//! previous accounts and logs why; so does a removed one (an editor's save may remove it for a
//! moment; revoke an account by editing the file). The task also forgets ended failure windows.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinHandle;
use tracing::{error, info, warn};

use super::{warn_if_world_readable, Accounts, Auth};
use conf::watch::{hash_file, poll_blocking};

/// Starts the reloader with the TLS reloader's 500 ms period; see [`spawn_reloader_every`].
pub fn spawn_reloader(auth: Arc<Auth>, shutdown: impl Future + Send + 'static) -> JoinHandle<()> {
    spawn_reloader_every(auth, conf::watch::DEFAULT_INTERVAL, shutdown)
}

/// Starts a task that polls `auth`'s accounts file every `interval` and reloads it when its
/// content changes from what it was at this call. Ends when `shutdown` completes.
pub fn spawn_reloader_every(
    auth: Arc<Auth>,
    interval: Duration,
    shutdown: impl Future + Send + 'static,
) -> JoinHandle<()> {
    let watcher = Watcher { last: hash_file(auth.path()), missing_reported: false };
    tokio::spawn(poll_blocking(watcher, interval, shutdown, "accounts file watcher", move |w| {
        auth.prune_failures(tokio::time::Instant::now());
        w.step(&auth);
    }))
}

/// The content hash last put in force (or found broken).
struct Watcher {
    last: Option<u64>,
    missing_reported: bool,
}

impl Watcher {
    /// One poll: reload when the content changed.
    fn step(&mut self, auth: &Auth) {
        let path = auth.path();
        let Some(hash) = hash_file(path) else {
            if !self.missing_reported {
                warn!(path = %path.display(), "the accounts file cannot be read; keeping the previous accounts");
                self.missing_reported = true;
            }
            return;
        };
        self.missing_reported = false;
        if Some(hash) == self.last {
            return;
        }
        self.last = Some(hash);
        match Accounts::load(path) {
            Ok(accounts) => {
                warn_if_world_readable(path);
                info!(path = %path.display(), accounts = accounts.len(), "accounts file reloaded");
                crate::warn_overlapping_brokers(&accounts);
                auth.replace_accounts(accounts);
            }
            Err(e) => {
                error!(error = %e, "accounts file not reloaded; keeping the previous accounts")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::AuthMode;

    const ONE: &str = "accounts: [{accessKey: one, secretKey: s1, role: admin}]";
    const TWO: &str = "accounts: [{accessKey: two, secretKey: s2, role: reader}]";

    fn auth(dir: &tempfile::TempDir) -> Auth {
        let path = dir.path().join("auth.yml");
        std::fs::write(&path, ONE).expect("write");
        Auth::new(AuthMode::Writes, path.clone(), Accounts::load(&path).expect("valid"))
    }

    fn names(auth: &Auth) -> (bool, bool) {
        let accounts = auth.accounts();
        (accounts.by_access_key("one").is_some(), accounts.by_access_key("two").is_some())
    }

    #[test]
    fn a_valid_change_is_put_in_force_and_a_broken_or_removed_file_keeps_the_accounts() {
        let dir = tempfile::tempdir().expect("dir");
        let auth = auth(&dir);
        let mut watcher = Watcher { last: hash_file(auth.path()), missing_reported: false };
        watcher.step(&auth);
        assert_eq!(names(&auth), (true, false), "unchanged");

        std::fs::write(auth.path(), TWO).expect("write");
        watcher.step(&auth);
        assert_eq!(names(&auth), (false, true), "valid change in force");

        std::fs::write(auth.path(), "accounts: [{accessKey: three, role: nobody}]").expect("write");
        watcher.step(&auth);
        assert_eq!(names(&auth), (false, true), "broken file: previous accounts kept");

        std::fs::remove_file(auth.path()).expect("remove");
        watcher.step(&auth);
        assert!(watcher.missing_reported);
        assert_eq!(names(&auth), (false, true), "removed file: previous accounts kept");

        std::fs::write(auth.path(), ONE).expect("write");
        watcher.step(&auth);
        assert_eq!(names(&auth), (true, false), "restored file in force");
    }

    #[tokio::test]
    async fn the_task_reloads_a_changed_file_and_stops_on_shutdown() {
        let dir = tempfile::tempdir().expect("dir");
        let auth = Arc::new(auth(&dir));
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let task = spawn_reloader_every(Arc::clone(&auth), Duration::from_millis(20), stopped);
        std::fs::write(auth.path(), TWO).expect("write");
        // Polls for the outcome with a generous deadline (the poll period is 20 ms).
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        while names(&auth) != (false, true) {
            assert!(tokio::time::Instant::now() < deadline, "not reloaded");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        stop.send(()).expect("send");
        task.await.expect("task ends");
    }
}
