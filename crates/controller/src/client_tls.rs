//! The node's outgoing TLS files watched: when `tls.client.certPath`, `tls.client.keyPath` or
//! `tls.client.trustCertPath` changes, the client configuration is built again and the node's
//! next connections to its peers and to brokers use it (established ones keep theirs, like the
//! port's own certificate reload). A rebuild that fails — a key caught half-written, a
//! certificate whose key has not been replaced yet — is logged and keeps the configuration in
//! force; the next change of any of the files tries again.

use std::path::PathBuf;
use std::time::Duration;

use client::{ClientTls, TlsSettings};
use conf::watch::{hash_file, poll_blocking};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// What the watcher compares on each poll.
struct Watcher {
    tls: ClientTls,
    settings: TlsSettings,
    files: Vec<(PathBuf, Option<u64>)>,
}

impl Watcher {
    fn step(&mut self) {
        let mut changed = false;
        for (path, hash) in &mut self.files {
            let now = hash_file(path);
            if now.is_some() && now != *hash {
                *hash = now;
                changed = true;
            }
        }
        if !changed {
            return;
        }
        match self.tls.reload(&self.settings) {
            Ok(()) => tracing::info!("outgoing TLS (tls.client.*) reloaded"),
            Err(e) => {
                tracing::warn!(error = %e, "outgoing TLS not reloaded; the configuration in force stays")
            }
        }
    }
}

/// Polls the files `settings` names (none in test mode, where none is read) every `interval`
/// until `stop` is cancelled, reloading `tls` when one changes. `None` when there is no file
/// to watch.
pub fn spawn_watcher(
    tls: ClientTls,
    settings: TlsSettings,
    interval: Duration,
    stop: CancellationToken,
) -> Option<JoinHandle<()>> {
    if settings.test_mode {
        return None;
    }
    let paths = [&settings.cert_path, &settings.key_path, &settings.trust_cert_path];
    let files: Vec<(PathBuf, Option<u64>)> =
        paths.into_iter().flatten().map(|p| (p.clone(), hash_file(p))).collect();
    if files.is_empty() {
        return None;
    }
    let watcher = Watcher { tls, settings, files };
    Some(tokio::spawn(poll_blocking(
        watcher,
        interval,
        stop.cancelled_owned(),
        "outgoing TLS watcher",
        Watcher::step,
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn self_signed(dir: &std::path::Path, name: &str) -> PathBuf {
        let generated = rcgen::generate_simple_self_signed(vec![name.to_owned()]).expect("cert");
        let path = dir.join(format!("{name}.pem"));
        std::fs::write(&path, generated.cert.pem()).expect("write");
        path
    }

    #[tokio::test]
    async fn a_changed_trust_file_is_put_in_force_and_a_bad_one_is_not() {
        let dir = tempfile::tempdir().expect("dir");
        let trust = dir.path().join("trust.pem");
        std::fs::copy(self_signed(dir.path(), "a"), &trust).expect("copy");
        let settings = TlsSettings {
            enable: true,
            test_mode: false,
            auth_server: true,
            trust_cert_path: Some(trust.clone()),
            ..TlsSettings::default()
        };
        let tls = settings.build().expect("builds");
        let first = tls.current();
        let stop = CancellationToken::new();
        let every = Duration::from_millis(20);
        let task =
            spawn_watcher(tls.clone(), settings, every, stop.clone()).expect("a file to watch");
        std::fs::write(&trust, "not PEM").expect("write");
        tokio::time::sleep(every * 10).await;
        assert!(Arc::ptr_eq(&first, &tls.current()), "a bad file keeps the one in force");
        std::fs::copy(self_signed(dir.path(), "b"), &trust).expect("copy");
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while Arc::ptr_eq(&first, &tls.current()) {
            assert!(tokio::time::Instant::now() < deadline, "reloaded in time");
            tokio::time::sleep(every).await;
        }
        stop.cancel();
        task.await.expect("the watcher ends");
        assert!(spawn_watcher(tls, TlsSettings::default(), every, stop).is_none(), "test mode");
    }
}
