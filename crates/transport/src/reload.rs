//! Certificate hot reload: polls the cert, key and trust files and swaps in a new acceptor.
//!
//! Java: `FileWatchService` + the listener in `NamesrvController#initialize` — poll every 500 ms,
//! compare a content hash of each file that existed at start (a deleted file keeps its old hash),
//! reload at once when the trust file changed, and when both the cert and the key changed (in any
//! order, possibly across polls). One deliberate difference: after a *failed* reload (say a key file
//! caught half-written) the cert/key flags stay set, so the next change of either file retries,
//! where Java would wait for both to change again.

use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use conf::watch::{hash_file, poll_blocking};
use tokio::task::JoinHandle;

use super::settings::{TlsMode, TlsSettings};
use super::tls::TlsContext;

pub use conf::watch::DEFAULT_INTERVAL;

/// Starts the reloader with Java's 500 ms poll interval; see [`spawn_reloader_every`].
pub fn spawn_reloader(
    ctx: Arc<TlsContext>,
    shutdown: impl Future + Send + 'static,
) -> JoinHandle<()> {
    spawn_reloader_every(ctx, DEFAULT_INTERVAL, shutdown)
}

/// Starts a task that polls the configured cert, key and trust files every `interval` and reloads
/// `ctx` when they change from their content at the time of this call. The task ends when `shutdown` completes, or at once when the mode is
/// `disabled` or no configured file exists. Reload errors are logged and keep the old acceptor.
/// Java: `FileWatchService#run`
pub fn spawn_reloader_every(
    ctx: Arc<TlsContext>,
    interval: Duration,
    shutdown: impl Future + Send + 'static,
) -> JoinHandle<()> {
    // The baseline is taken now, so a change made right after this call is not missed.
    let watcher = (ctx.mode() != TlsMode::Disabled).then(|| Watcher::new(ctx.settings()));
    tokio::spawn(async move {
        let Some(watcher) = watcher.filter(|w| !w.files.is_empty()) else {
            return;
        };
        poll_blocking(watcher, interval, shutdown, "TLS certificate watcher", move |w| {
            w.step(&ctx)
        })
        .await;
    })
}

/// Which of the three roles a file plays (one file may play several).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Roles {
    trust: bool,
    cert: bool,
    key: bool,
}

impl Roles {
    fn merge(&mut self, other: Roles) {
        self.trust |= other.trust;
        self.cert |= other.cert;
        self.key |= other.key;
    }
}

#[derive(Debug)]
struct Watched {
    path: PathBuf,
    roles: Roles,
    hash: u64,
}

/// The watched files and the cert/key change flags.
#[derive(Debug)]
struct Watcher {
    files: Vec<Watched>,
    cert_changed: bool,
    key_changed: bool,
}

impl Watcher {
    /// Watches the configured files that exist now. Java: `FileWatchService` constructor
    fn new(settings: &TlsSettings) -> Self {
        let mut files: Vec<Watched> = Vec::new();
        let candidates = [
            (&settings.cert_path, Roles { cert: true, ..Roles::default() }),
            (&settings.key_path, Roles { key: true, ..Roles::default() }),
            (&settings.trust_cert_path, Roles { trust: true, ..Roles::default() }),
        ];
        for (path, roles) in candidates {
            let Some(path) = path else { continue };
            if let Some(existing) = files.iter_mut().find(|w| &w.path == path) {
                existing.roles.merge(roles);
            } else if let Some(hash) = hash_file(path) {
                files.push(Watched { path: path.clone(), roles, hash });
            }
        }
        Watcher { files, cert_changed: false, key_changed: false }
    }

    /// Roles whose file content changed since the last poll. Unreadable files are skipped.
    fn poll(&mut self) -> Roles {
        let mut changed = Roles::default();
        for file in &mut self.files {
            if let Some(hash) = hash_file(&file.path) {
                if hash != file.hash {
                    file.hash = hash;
                    tracing::info!(path = %file.path.display(), "TLS file changed");
                    changed.merge(file.roles);
                }
            }
        }
        changed
    }

    /// Records `changed` and says whether a reload is due.
    fn should_reload(&mut self, changed: Roles) -> bool {
        self.cert_changed |= changed.cert;
        self.key_changed |= changed.key;
        changed.trust || (self.cert_changed && self.key_changed)
    }

    /// One poll: detect changes and reload if due.
    fn step(&mut self, ctx: &TlsContext) {
        let changed = self.poll();
        if !self.should_reload(changed) {
            return;
        }
        match ctx.reload() {
            Ok(()) => {
                self.cert_changed = false;
                self.key_changed = false;
                tracing::info!("TLS context reloaded");
            }
            Err(e) => {
                tracing::error!(error = %e, "TLS reload failed; keeping the current certificate");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Files {
        _dir: tempfile::TempDir,
        cert: PathBuf,
        key: PathBuf,
        trust: PathBuf,
    }

    fn files() -> Files {
        let dir = tempfile::tempdir().unwrap();
        let cert = dir.path().join("cert.pem");
        let key = dir.path().join("key.pem");
        let trust = dir.path().join("trust.pem");
        for p in [&cert, &key, &trust] {
            std::fs::write(p, "v1").unwrap();
        }
        Files { _dir: dir, cert, key, trust }
    }

    fn settings(f: &Files) -> TlsSettings {
        TlsSettings {
            cert_path: Some(f.cert.clone()),
            key_path: Some(f.key.clone()),
            trust_cert_path: Some(f.trust.clone()),
            ..TlsSettings::default()
        }
    }

    #[test]
    fn cert_and_key_must_both_change_across_polls() {
        let f = files();
        let mut w = Watcher::new(&settings(&f));
        let changed = w.poll();
        assert!(!w.should_reload(changed));
        std::fs::write(&f.cert, "v2").unwrap();
        let changed = w.poll();
        assert_eq!(changed, Roles { cert: true, ..Roles::default() });
        assert!(!w.should_reload(changed));
        std::fs::write(&f.key, "v2").unwrap();
        let changed = w.poll();
        assert!(w.should_reload(changed));
    }

    #[test]
    fn trust_change_reloads_at_once() {
        let f = files();
        let mut w = Watcher::new(&settings(&f));
        std::fs::write(&f.trust, "v2").unwrap();
        let changed = w.poll();
        assert!(w.should_reload(changed));
    }

    #[test]
    fn deleted_files_are_ignored_and_missing_files_not_watched() {
        let f = files();
        std::fs::remove_file(&f.trust).unwrap();
        let mut w = Watcher::new(&settings(&f));
        assert_eq!(w.files.len(), 2);
        std::fs::remove_file(&f.cert).unwrap();
        assert_eq!(w.poll(), Roles::default());
        std::fs::write(&f.trust, "new").unwrap();
        assert_eq!(w.poll(), Roles::default());
    }

    #[test]
    fn one_file_holding_cert_and_key_triggers_a_reload() {
        let f = files();
        let s = TlsSettings { key_path: Some(f.cert.clone()), ..settings(&f) };
        let mut w = Watcher::new(&s);
        assert_eq!(w.files.len(), 2);
        std::fs::write(&f.cert, "both").unwrap();
        let changed = w.poll();
        assert!(w.should_reload(changed));
    }

    #[test]
    fn failed_reload_keeps_flags_and_success_resets_them() {
        let f = files();
        // Test mode off and a cert that is not PEM: every reload fails.
        let s = TlsSettings { test_mode: false, trust_cert_path: None, ..settings(&f) };
        let ctx = TlsContext::without_acceptor(s.clone());
        let mut w = Watcher::new(&s);
        std::fs::write(&f.cert, "v2").unwrap();
        std::fs::write(&f.key, "v2").unwrap();
        w.step(&ctx);
        assert!(w.cert_changed && w.key_changed);
        assert!(ctx.acceptor().is_none());
        // Test mode on: the reload succeeds (self-signed) and the flags reset.
        let ctx = TlsContext::without_acceptor(TlsSettings { test_mode: true, ..s });
        std::fs::write(&f.key, "v3").unwrap();
        w.step(&ctx);
        assert!(!w.cert_changed && !w.key_changed);
        assert!(ctx.acceptor().is_some());
    }
}
