//! Elections and what follows them: an election asked for by a broker or an admin (1002), the
//! leader's own elections when a master stops heartbeating or loses its connection, and the
//! NOTIFY_BROKER_ROLE_CHANGED that announces a new master.
//! Java: `ControllerManager#onBrokerInactive`, `#triggerElectMaster`,
//! `DLedgerController#scanInactiveMasterAndTriggerReelect`

use std::sync::Arc;
use std::time::Duration;

use remoting::headers::{ElectMasterRequestHeader, GetReplicaInfoRequestHeader};
use remoting::{RemotingCommand, ResponseCode};

use crate::liveness::Inactive;
use crate::metrics::{ElectionResult, Trigger};
use crate::node::{Node, NodeError};
use crate::notify::RoleChange;
use crate::proposal::elect_proposal;

/// How long the leader waits for one attempt of its own election (Java: 3 s).
const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(3);

/// Runs an election (counted by `trigger` and result) and, when a new master was elected and
/// `notifyBrokerRoleChanged` is on, tells the group's live brokers.
/// Java: `ControllerRequestProcessor#handleControllerElectMaster`
pub async fn elect(
    node: &Arc<Node>,
    header: ElectMasterRequestHeader,
    trigger: Trigger,
) -> Result<RemotingCommand, NodeError> {
    let response = match node.propose(elect_proposal(header)).await {
        Ok(response) => response,
        Err(e) => {
            // A follower's refusal decided nothing; a leader that could not commit did try.
            if !matches!(e, NodeError::NotLeader { .. }) {
                node.metrics().election(trigger, ElectionResult::Failed);
            }
            return Err(e);
        }
    };
    node.metrics().election(trigger, ElectionResult::of_code(response.code));
    if response.code == ResponseCode::Success.to_i32()
        && node.config().load().notify_broker_role_changed
    {
        notify_role_changed(node, &RoleChange::of_election(&response));
    }
    Ok(response)
}

/// Announces a new master to every live member of its group. Java:
/// `ControllerManager#notifyBrokerRoleChanged`
pub fn notify_role_changed(node: &Node, change: &RoleChange) {
    let Some(group) = &change.member_group else { return };
    if change.master_broker_id.is_none() {
        tracing::warn!(broker = %group.broker_name, "role change without a master id; not notified");
        return;
    }
    let now = tokio::time::Instant::now();
    let live: Vec<String> = node.with_heartbeats(|t| {
        group
            .broker_addrs
            .0
            .iter()
            .filter(|(id, _)| {
                t.is_alive(
                    &crate::liveness::BrokerKey {
                        cluster: group.cluster.clone(),
                        broker_name: group.broker_name.clone(),
                        broker_id: **id,
                    },
                    now,
                )
            })
            .map(|(_, addr)| addr.clone())
            .collect()
    });
    for addr in live {
        node.notifier().send(node.client(), &addr, change);
    }
}

/// A broker expired or lost its connection (`trigger` says which): if it was its group's
/// master and this node leads, elect a new one. Java: `ControllerManager#onBrokerInactive`
pub async fn on_broker_inactive(node: &Arc<Node>, gone: Inactive, trigger: Trigger) {
    let key = gone.key;
    if node.stop_token().is_cancelled() {
        // A stopping controller closes every broker connection; like Java's (its heartbeat
        // manager and controller stop before its channels close) it elects nobody for that.
        tracing::debug!(broker = %key.broker_name, id = key.broker_id, "broker connection closed by the controller's shutdown");
        return;
    }
    if !node.is_leader() {
        tracing::warn!(broker = %key.broker_name, id = key.broker_id, "broker inactive (not the leader: nothing to do)");
        return;
    }
    let req = GetReplicaInfoRequestHeader { broker_name: Some(key.broker_name.clone()) };
    let master = match node
        .read(|t, _| t.replica_info(&req).header.and_then(|h| h.master_broker_id))
        .await
    {
        Ok(m) => m,
        Err(e) => {
            tracing::error!(broker = %key.broker_name, error = %e, "failed to read replica info of an inactive broker");
            return;
        }
    };
    if master != Some(key.broker_id) {
        tracing::warn!(broker = %key.broker_name, id = key.broker_id, "a slave broker became inactive");
        return;
    }
    tracing::warn!(broker = %key.broker_name, id = key.broker_id, "the master broker became inactive; electing");
    trigger_election(node, &key.broker_name, trigger).await;
}

/// The leader elects in `broker_name` itself, up to `electMasterMaxRetryCount` attempts while
/// an attempt fails (like Java, each failed attempt with nobody to elect is itself recorded).
/// Java: `ControllerManager#triggerElectMaster`
pub async fn trigger_election(node: &Arc<Node>, broker_name: &str, trigger: Trigger) -> bool {
    let attempts = node.config().load().elect_master_max_retry_count.max(1);
    for attempt in 0..attempts {
        let header = ElectMasterRequestHeader {
            cluster_name: Some(String::new()),
            broker_name: Some(broker_name.to_owned()),
            broker_id: Some(-1),
            designate_elect: Some(false),
            invoke_time: Some(now_millis()),
        };
        match tokio::time::timeout(ATTEMPT_TIMEOUT, elect(node, header, trigger)).await {
            Ok(Ok(r)) if r.code == ResponseCode::Success.to_i32() => {
                tracing::info!(broker = %broker_name, "new master elected by the controller");
                return true;
            }
            Ok(Ok(r)) => {
                tracing::error!(broker = %broker_name, attempt, code = r.code, remark = ?r.remark, "controller-triggered election failed");
            }
            Ok(Err(e)) => {
                tracing::warn!(broker = %broker_name, attempt, error = %e, "controller-triggered election failed")
            }
            Err(_) => {
                node.metrics().election(trigger, ElectionResult::Failed);
                tracing::warn!(broker = %broker_name, attempt, "controller-triggered election timed out")
            }
        }
    }
    false
}

/// The leader's periodic look for groups whose master is gone while another member lives.
/// Java: `DLedgerController#scanInactiveMasterAndTriggerReelect`
pub async fn scan_inactive_masters(node: &Arc<Node>) {
    if !node.is_leader() {
        return;
    }
    let groups = match node.read(|t, live| t.groups_needing_election(live)).await {
        Ok(g) => g,
        Err(_) => return,
    };
    for name in groups {
        tracing::warn!(broker = %name, "master inactive while other members live; electing");
        trigger_election(node, &name, Trigger::HeartbeatTimeout).await;
    }
}

/// Milliseconds since the Unix epoch (the `invokeTime` Java headers carry).
pub fn now_millis() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}
