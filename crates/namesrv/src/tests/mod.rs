//! What the core's tests share across modules (a tests directory: not counted as the core's
//! code).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use remoting::body::{TopicConfig, TopicConfigAndMappingSerializeWrapper};

use crate::route::RegisterBroker;
use crate::state::State;

pub(crate) const CLUSTER: &str = "C";
pub(crate) const ADDR: &str = "10.0.0.1:10911";

/// A registration of broker `b` (id 0, cluster `C`) with topics `T1`, `T2`, …: enough for a
/// write that scans every topic to run on the lane ([`crate::state::SCAN_ON_LANE_TOPICS`]).
pub(crate) fn registration() -> RegisterBroker {
    let mut topic_config = TopicConfigAndMappingSerializeWrapper::default();
    for i in 1..=crate::state::SCAN_ON_LANE_TOPICS {
        let topic = format!("T{i}");
        std::sync::Arc::make_mut(&mut topic_config.topic_config_table)
            .insert(topic.clone(), TopicConfig::named(topic));
    }
    RegisterBroker {
        cluster: CLUSTER.into(),
        broker_addr: ADDR.into(),
        broker_name: "b".into(),
        broker_id: 0,
        ha_server_addr: String::new(),
        zone_name: None,
        heartbeat_timeout_millis: None,
        enable_acting_master: None,
        topic_config,
        filter_server_list: None,
        conn: 1,
        request_digest: None,
        version_frame: None,
        delta_base: None,
    }
}

/// The route table's writer held by a lane job until released, or until a watchdog
/// releases it after 3 s (a runtime thread blocked on the writer cannot).
pub(crate) struct HeldWriter {
    release: std::sync::mpsc::Sender<()>,
    done: std::sync::mpsc::Sender<()>,
    fired: Arc<AtomicBool>,
    job: tokio::task::JoinHandle<()>,
    watchdog: std::thread::JoinHandle<()>,
}

impl HeldWriter {
    pub(crate) async fn hold(state: &Arc<State>) -> Self {
        let (release, released) = std::sync::mpsc::channel::<()>();
        let (held_tx, held_rx) = tokio::sync::oneshot::channel::<()>();
        let job = tokio::spawn({
            let (state, holder) = (Arc::clone(state), Arc::clone(state));
            async move {
                let hold = move || {
                    holder.routes.write_batched(|_| {
                        let _ = held_tx.send(());
                        let _ = released.recv_timeout(Duration::from_secs(5));
                    })
                };
                state.work.lane.run(hold).await.expect("lane job");
            }
        });
        held_rx.await.expect("the lane job holds the writer");
        let fired = Arc::new(AtomicBool::new(false));
        let (done, done_rx) = std::sync::mpsc::channel::<()>();
        let watchdog = std::thread::spawn({
            let (fired, release) = (Arc::clone(&fired), release.clone());
            move || {
                if done_rx.recv_timeout(Duration::from_secs(3)).is_err() {
                    fired.store(true, Ordering::SeqCst);
                    let _ = release.send(());
                }
            }
        });
        Self { release, done, fired, job, watchdog }
    }

    /// Releases the writer; whether the watchdog had released it already (this thread
    /// was blocked meanwhile).
    pub(crate) async fn release(self) -> bool {
        let _ = self.done.send(());
        let fired = self.fired.load(Ordering::SeqCst);
        let _ = self.release.send(());
        self.job.await.expect("lane job task");
        self.watchdog.join().expect("watchdog");
        fired
    }
}
