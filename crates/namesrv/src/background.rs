//! Background tasks: the liveness scan, the batched unregistration and the route snapshot
//! writer. Each stops on shutdown. (The certificate and accounts file watchers belong to
//! `transport` and `acl`; the daemon runs them.)

use remoting::text::clip;
use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinHandle;
use tracing::info;

use crate::metrics::RemovalReason;
use crate::shutdown::ShutdownTrigger;
use crate::state::State;
use events::{EventKind, NewEvent};

/// Java: `NamesrvController` schedules the first scan after 5 s.
const FIRST_SCAN_DELAY: Duration = Duration::from_secs(5);

/// Starts every background task; each ends when `trigger` fires.
pub fn spawn_all(state: &Arc<State>, trigger: &ShutdownTrigger) -> Vec<JoinHandle<()>> {
    let mut tasks = vec![
        tokio::spawn(scan_loop(state.clone(), trigger.subscribe())),
        tokio::spawn(unregister_loop(state.clone(), trigger.subscribe())),
    ];
    if state.work.route_snapshot.is_some() {
        tasks.push(tokio::spawn(crate::snapshot::writer_loop(state.clone(), trigger.subscribe())));
    }
    tasks
}

/// Expires silent brokers every `scanNotActiveBrokerInterval` (and drops unused shared route
/// bodies and, once idle, the decoded tables kept for sharing; not behind a decode under way).
/// Java: `RouteInfoManager#scanNotActiveBroker`
async fn scan_loop(state: Arc<State>, mut shutdown: crate::shutdown::Shutdown) {
    let period = Duration::from_millis(
        u64::try_from(state.config.load().scan_not_active_broker_interval).unwrap_or(5000).max(1),
    );
    let mut ticker =
        tokio::time::interval_at(tokio::time::Instant::now() + FIRST_SCAN_DELAY, period);
    loop {
        tokio::select! {
            _ = ticker.tick() => {
                for request in state.routes.snapshot().expire_inactive(state.now_ms()) {
                    info!(broker = %clip(&request.broker_addr), cluster = %clip(&request.cluster_name), "the broker channel expired");
                    if let Some(fence) = request.fence {
                        state.close_connection(fence.conn());
                    }
                    state.submit_unregister(request, RemovalReason::HeartbeatTimeout);
                }
                // Route bodies no topic uses any more (their topics changed or left).
                state.routes.snapshot().prune_route_bodies();
                if let Some(mut recent) = state.work.recent_tables.try_lock() {
                    recent.expire(period);
                }
            }
            _ = shutdown.recv() => break,
        }
    }
}

/// Applies queued unregistrations in batches: waits for one, then takes all that are queued.
/// A batch waits for the route table's writer and scans every topic for the queues of the
/// groups it removes (Java's `cleanTopicByUnRegisterRequests`; #25: ~100 ms at 1,000,000
/// topics), so a large table's runs on the registration lane (`State::write_scanning`).
/// Java: `BatchUnregistrationService#run`
async fn unregister_loop(state: Arc<State>, mut shutdown: crate::shutdown::Shutdown) {
    let Some(mut rx) = state.take_unregister_rx() else {
        return;
    };
    let mut batch = Vec::new();
    loop {
        tokio::select! {
            n = rx.recv_many(&mut batch, 4096) => {
                if n == 0 {
                    break;
                }
                let requests: Vec<_> = batch.iter().map(|(request, _)| request.clone()).collect();
                let applied =
                    state.write_scanning(move |t| t.apply_unregister_batch(&requests)).await;
                let Ok(outcome) = applied else {
                    break; // the lane stopped: the server is shutting down
                };
                for index in outcome.live_removed {
                    let (request, reason) = &batch[index];
                    state.sinks.metrics.brokers_removed(*reason, 1);
                    state.sinks.versions.remove(&request.cluster_name, &request.broker_addr);
                    let kind = match reason {
                        RemovalReason::HeartbeatTimeout => EventKind::BrokerExpired,
                        _ => EventKind::BrokerUnregistered,
                    };
                    state.event(
                        NewEvent::new(kind, format!("reason {}", reason.label())).broker(
                            &request.cluster_name,
                            &request.broker_name,
                            &request.broker_addr,
                            request.broker_id,
                        ),
                    );
                }
                batch.clear();
            }
            _ = shutdown.recv() => break,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::config::Config;
    use crate::route::UnregisterRequest;
    use crate::tests::{registration, HeldWriter, ADDR, CLUSTER};

    /// An unregistration waits for the route table's writer on the registration lane, not on
    /// an I/O thread: while a lane job holds the writer, the one thread of a current-thread
    /// runtime goes on running its other tasks (its reads, in a server), and the broker goes
    /// once the writer is free. Applied on the runtime's thread, the unregistration would block
    /// that thread until the watchdog released the writer.
    #[tokio::test(flavor = "current_thread")]
    async fn an_unregistration_waits_for_the_writer_off_the_io_threads() {
        let dir = tempfile::tempdir().expect("dir");
        let kv_config_path = dir.path().join("kv.json").to_string_lossy().into_owned();
        let state = crate::build_state(Config { kv_config_path, ..Config::default() }, None)
            .expect("state");
        state.routes.write(|t| t.register_owned(registration(), 1, false)).expect("registered");
        let live = |state: &State| state.routes.snapshot().last_heartbeat(CLUSTER, ADDR).is_some();
        assert!(live(&state));

        let held = HeldWriter::hold(&state).await;
        let (trigger, shutdown) = crate::shutdown::channel();
        let unregistering = tokio::spawn(unregister_loop(Arc::clone(&state), shutdown));
        let request = UnregisterRequest {
            cluster_name: CLUSTER.into(),
            broker_addr: ADDR.into(),
            broker_name: "b".into(),
            broker_id: Some(0),
            fence: None,
        };
        assert!(state.submit_unregister(request, RemovalReason::ConnectionClosed));
        // Give the unregistration task its turns on this thread.
        for _ in 0..1_000 {
            tokio::task::yield_now().await;
        }
        assert!(live(&state), "applied while the writer was held");
        assert!(
            !held.release().await,
            "the runtime's thread was blocked until the watchdog released the writer"
        );

        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while live(&state) {
            assert!(std::time::Instant::now() < deadline, "the broker was never unregistered");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        drop(trigger);
        unregistering.await.expect("the unregistration task stops on shutdown");
    }
}
