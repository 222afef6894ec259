//! NOTIFY_BROKER_ROLE_CHANGED (1008): after an election, the controller tells each live broker
//! of the group who the master is, instead of letting it find out at its next poll. One
//! notification in flight per broker address; a newer master epoch cancels an older one.
//! Java: `ControllerManager#notifyBrokerRoleChanged`, `ControllerManager.NotifyService`

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use client::Client;
use remoting::body::{
    from_json, to_legacy_json, BrokerMemberGroup, ElectMasterResponseBody, LongSet, SyncStateSet,
};
use remoting::headers::{ElectMasterResponseHeader, NotifyBrokerRoleChangedRequestHeader};
use remoting::{RemotingCommand, RequestCode};
use tokio::task::AbortHandle;

/// The oneway send's timeout (Java: 3000 ms).
const SEND_TIMEOUT: Duration = Duration::from_secs(3);

/// What an election decided, as the brokers are told it. Java: `RoleChangeNotifyEntry`
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoleChange {
    pub member_group: Option<BrokerMemberGroup>,
    pub master_address: Option<String>,
    pub master_broker_id: Option<i64>,
    pub master_epoch: i32,
    pub sync_state_set_epoch: i32,
    pub sync_state_set: LongSet,
}

impl RoleChange {
    /// Reads an election's answer. Java: `RoleChangeNotifyEntry#convert`
    pub fn of_election(response: &RemotingCommand) -> Self {
        let h: ElectMasterResponseHeader = response.decode_header();
        let body: Option<ElectMasterResponseBody> =
            response.body.as_deref().filter(|b| !b.is_empty()).and_then(|b| from_json(b).ok());
        let (member_group, sync_state_set) =
            body.map_or((None, LongSet::default()), |b| (b.broker_member_group, b.sync_state_set));
        Self {
            member_group,
            master_address: h.master_address,
            master_broker_id: h.master_broker_id,
            master_epoch: h.master_epoch.unwrap_or(0),
            sync_state_set_epoch: h.sync_state_set_epoch.unwrap_or(0),
            sync_state_set,
        }
    }

    /// The notification request. Java: `ControllerManager#doNotifyBrokerRoleChanged`
    pub fn request(&self) -> RemotingCommand {
        let header = NotifyBrokerRoleChangedRequestHeader {
            master_address: self.master_address.clone(),
            master_epoch: Some(self.master_epoch),
            sync_state_set_epoch: Some(self.sync_state_set_epoch),
            master_broker_id: self.master_broker_id,
        };
        let body = SyncStateSet {
            sync_state_set: self.sync_state_set.clone(),
            sync_state_set_epoch: self.sync_state_set_epoch,
        };
        RemotingCommand::request(RequestCode::NotifyBrokerRoleChanged)
            .with_header(&header)
            .with_body(to_legacy_json(&body))
    }
}

/// The notifications in flight, by broker address.
#[derive(Debug, Default)]
pub struct Notifier {
    pending: Mutex<HashMap<String, (i32, AbortHandle)>>,
}

impl Notifier {
    /// Sends `change` oneway to `addr` on `client`, cancelling a pending notification of an
    /// older master epoch to the same address. Java: `NotifyService#notifyBroker`
    pub fn send(&self, client: &Client, addr: &str, change: &RoleChange) {
        let mut pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((epoch, task)) = pending.get(addr) {
            if change.master_epoch > *epoch {
                task.abort();
            }
        }
        let target = client.pinned(addr);
        let (addr_owned, request, epoch) = (addr.to_owned(), change.request(), change.master_epoch);
        let task = tokio::spawn(async move {
            tracing::info!(broker = %addr_owned, master_epoch = epoch, "notify broker that its group's master changed");
            match tokio::time::timeout(SEND_TIMEOUT, target.invoke_oneway(request)).await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => {
                    tracing::warn!(broker = %addr_owned, error = %e, "failed to notify broker of the role change")
                }
                Err(_) => {
                    tracing::warn!(broker = %addr_owned, "notifying broker of the role change timed out")
                }
            }
        });
        pending.insert(addr.to_owned(), (epoch, task.abort_handle()));
    }
}
