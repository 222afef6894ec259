//! The RocketMQ 5 controller's request and response headers (Java
//! `protocol/header/controller/**`, `NotifyBrokerRoleChangedRequestHeader`), field by field in
//! Java declaration order with their Java wire names. BROKER_HEARTBEAT (904) shares the
//! nameserver's [`crate::headers::BrokerHeartbeatRequestHeader`].
//!
//! Java's primitive fields (`int`, `long`, `boolean`) are always on the wire; a response built
//! here sets them explicitly so the bytes match.

use crate::command::ExtFields;
use crate::headers::{ext_in_java_order, CommandHeader, HeaderValue};

command_header! {
    /// 1001 CONTROLLER_ALTER_SYNC_STATE_SET (the new set travels in a `SyncStateSet` body).
    /// Java: `AlterSyncStateSetRequestHeader`
    #[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
    pub struct AlterSyncStateSetRequestHeader {
        broker_name: String = "brokerName",
        master_broker_id: i64 = "masterBrokerId",
        master_epoch: i32 = "masterEpoch",
        invoke_time: i64 = "invokeTime",
    }
}

command_header! {
    /// Response to 1001. Java: `AlterSyncStateSetResponseHeader`
    #[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
    pub struct AlterSyncStateSetResponseHeader {
        new_sync_state_set_epoch: i32 = "newSyncStateSetEpoch",
    }
}

command_header! {
    /// 1002 CONTROLLER_ELECT_MASTER. A broker sends its own id (`designateElect` false); an
    /// admin sends the id it wants (`designateElect` true); the controller itself sends id -1.
    /// Java: `ElectMasterRequestHeader`
    #[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
    pub struct ElectMasterRequestHeader {
        cluster_name: String = "clusterName",
        broker_name: String = "brokerName",
        broker_id: i64 = "brokerId",
        designate_elect: bool = "designateElect",
        invoke_time: i64 = "invokeTime",
    }
}

command_header! {
    /// Response to 1002 (also for CONTROLLER_MASTER_STILL_EXIST). Java: `ElectMasterResponseHeader`
    #[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
    pub struct ElectMasterResponseHeader {
        master_broker_id: i64 = "masterBrokerId",
        master_address: String = "masterAddress",
        master_epoch: i32 = "masterEpoch",
        sync_state_set_epoch: i32 = "syncStateSetEpoch",
    }
}

command_header! {
    /// Response to 1005 CONTROLLER_GET_METADATA_INFO (the request has no header).
    /// `peers` is `id:addr;` per peer. Java: `GetMetaDataResponseHeader`
    #[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
    pub struct GetMetaDataResponseHeader {
        group: String = "group",
        controller_leader_id: String = "controllerLeaderId",
        controller_leader_address: String = "controllerLeaderAddress",
        is_leader: bool = "isLeader",
        peers: String = "peers",
    }
}

command_header! {
    /// 1004 CONTROLLER_GET_REPLICA_INFO. Java: `GetReplicaInfoRequestHeader`
    #[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
    pub struct GetReplicaInfoRequestHeader {
        broker_name: String = "brokerName",
    }
}

command_header! {
    /// Response to 1004 (the sync-state set travels in a `SyncStateSet` body).
    /// Java: `GetReplicaInfoResponseHeader`
    #[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
    pub struct GetReplicaInfoResponseHeader {
        master_broker_id: i64 = "masterBrokerId",
        master_address: String = "masterAddress",
        master_epoch: i32 = "masterEpoch",
    }
}

command_header! {
    /// 1011 CLEAN_BROKER_DATA. `brokerControllerIdsToClean` is `1;2;3`.
    /// Java: `CleanControllerBrokerDataRequestHeader`
    #[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
    pub struct CleanControllerBrokerDataRequestHeader {
        cluster_name: String = "clusterName",
        broker_name: String = "brokerName",
        broker_controller_ids_to_clean: String = "brokerControllerIdsToClean",
        is_clean_living_broker: bool = "isCleanLivingBroker",
        invoke_time: i64 = "invokeTime",
    }
}

command_header! {
    /// 1013 CONTROLLER_APPLY_BROKER_ID. `registerCheckCode` is `brokerAddress;timestamp`.
    /// Java: `ApplyBrokerIdRequestHeader`
    #[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
    pub struct ApplyBrokerIdRequestHeader {
        cluster_name: String = "clusterName",
        broker_name: String = "brokerName",
        applied_broker_id: i64 = "appliedBrokerId",
        register_check_code: String = "registerCheckCode",
    }
}

command_header! {
    /// Response to 1013. Java: `ApplyBrokerIdResponseHeader`
    #[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
    pub struct ApplyBrokerIdResponseHeader {
        cluster_name: String = "clusterName",
        broker_name: String = "brokerName",
    }
}

command_header! {
    /// 1012 CONTROLLER_GET_NEXT_BROKER_ID. Java: `GetNextBrokerIdRequestHeader`
    #[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
    pub struct GetNextBrokerIdRequestHeader {
        cluster_name: String = "clusterName",
        broker_name: String = "brokerName",
    }
}

command_header! {
    /// Response to 1012. Java: `GetNextBrokerIdResponseHeader`
    #[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
    pub struct GetNextBrokerIdResponseHeader {
        cluster_name: String = "clusterName",
        broker_name: String = "brokerName",
        next_broker_id: i64 = "nextBrokerId",
    }
}

command_header! {
    /// 1003 CONTROLLER_REGISTER_BROKER. Java: `RegisterBrokerToControllerRequestHeader`
    #[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
    pub struct RegisterBrokerToControllerRequestHeader {
        cluster_name: String = "clusterName",
        broker_name: String = "brokerName",
        broker_id: i64 = "brokerId",
        broker_address: String = "brokerAddress",
        invoke_time: i64 = "invokeTime",
    }
}

command_header! {
    /// Response to 1003: the master, when one exists and is alive (the sync-state set travels
    /// in a `SyncStateSet` body). Java: `RegisterBrokerToControllerResponseHeader`
    #[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
    pub struct RegisterBrokerToControllerResponseHeader {
        cluster_name: String = "clusterName",
        broker_name: String = "brokerName",
        master_broker_id: i64 = "masterBrokerId",
        master_address: String = "masterAddress",
        master_epoch: i32 = "masterEpoch",
        sync_state_set_epoch: i32 = "syncStateSetEpoch",
    }
}

command_header! {
    /// 1008 NOTIFY_BROKER_ROLE_CHANGED, sent by the controller to a group's brokers (oneway;
    /// the sync-state set travels in a `SyncStateSet` body).
    /// Java: `NotifyBrokerRoleChangedRequestHeader`
    #[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
    pub struct NotifyBrokerRoleChangedRequestHeader {
        master_address: String = "masterAddress",
        master_epoch: i32 = "masterEpoch",
        sync_state_set_epoch: i32 = "syncStateSetEpoch",
        master_broker_id: i64 = "masterBrokerId",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(e: &ExtFields) -> Vec<&str> {
        e.iter().map(|(k, _)| k).collect()
    }

    /// Java spells the boolean fields `isLeader` / `isCleanLivingBroker` on the wire (field
    /// names, not bean properties).
    #[test]
    fn boolean_fields_keep_their_is_prefix() {
        let h = GetMetaDataResponseHeader { is_leader: Some(true), ..Default::default() };
        assert_eq!(h.to_ext().get("isLeader"), Some("true"));
        let h = CleanControllerBrokerDataRequestHeader {
            is_clean_living_broker: Some(false),
            ..Default::default()
        };
        assert_eq!(h.to_ext().get("isCleanLivingBroker"), Some("false"));
    }

    /// A JDK HashMap with these five keys iterates them in this order (bucket = hash ^ hash>>>16
    /// masked by 15, insertion order within a bucket).
    #[test]
    fn metadata_header_is_in_jdk_hash_map_order() {
        let h = GetMetaDataResponseHeader {
            group: Some("g".into()),
            controller_leader_id: Some("n0".into()),
            controller_leader_address: Some("127.0.0.1:9878".into()),
            is_leader: Some(true),
            peers: Some("n0:127.0.0.1:9878;".into()),
        };
        let mut want = vec![
            ("group", String::new()),
            ("controllerLeaderId", String::new()),
            ("controllerLeaderAddress", String::new()),
            ("isLeader", String::new()),
            ("peers", String::new()),
        ];
        crate::headers::java_hash_map_order(&mut want);
        let want: Vec<&str> = want.iter().map(|(k, _)| *k).collect();
        assert_eq!(keys(&h.to_ext()), want);
        assert_eq!(GetMetaDataResponseHeader::from_ext(Some(&h.to_ext())), h);
    }
}
