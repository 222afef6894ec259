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
/// bodies).
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
            }
            _ = shutdown.recv() => break,
        }
    }
}

/// Applies queued unregistrations in batches: waits for one, then takes all that are queued.
/// Java: `BatchUnregistrationService#run`
async fn unregister_loop(state: Arc<State>, mut shutdown: crate::shutdown::Shutdown) {
    let Some(mut rx) = state.take_unregister_rx() else {
        return;
    };
    let mut batch = Vec::new();
    let mut requests = Vec::new();
    loop {
        tokio::select! {
            n = rx.recv_many(&mut batch, 4096) => {
                if n == 0 {
                    break;
                }
                requests.extend(batch.iter().map(|(request, _)| request.clone()));
                let outcome = state.routes.write(|t| t.apply_unregister_batch(&requests));
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
                requests.clear();
            }
            _ = shutdown.recv() => break,
        }
    }
}
