//! Shutdown signalling: one `watch` channel that every task listens to.

use tokio::sync::watch;

/// The sending half: flip it once to ask every task to stop.
#[derive(Debug, Clone)]
pub struct ShutdownTrigger(watch::Sender<bool>);

/// A listener: `recv().await` returns once shutdown has been asked for (at once if it already was).
#[derive(Debug, Clone)]
pub struct Shutdown(watch::Receiver<bool>);

/// A new trigger and its first listener.
pub fn channel() -> (ShutdownTrigger, Shutdown) {
    let (tx, rx) = watch::channel(false);
    (ShutdownTrigger(tx), Shutdown(rx))
}

impl ShutdownTrigger {
    /// Asks every listener to stop; idempotent.
    pub fn trigger(&self) {
        self.0.send_replace(true);
    }

    /// A new listener.
    pub fn subscribe(&self) -> Shutdown {
        Shutdown(self.0.subscribe())
    }
}

impl Shutdown {
    /// True once shutdown has been asked for.
    pub fn is_shutdown(&self) -> bool {
        *self.0.borrow()
    }

    /// Waits until shutdown is asked for (or every trigger is dropped).
    pub async fn recv(&mut self) {
        let _ = self.0.wait_for(|v| *v).await;
    }
}
