//! Who may send what: the access each request code needs and the roles that grant it. One table
//! ([`access_of`]); the README's access-control table is this one.

use remoting::{RemotingCommand, RequestCode as C};

/// What a request needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Access {
    /// Reads (routes, cluster, topic lists, KV and config reads) and codes this server does not
    /// serve (they change nothing). Open in `authenticationMode=writes`.
    Read,
    /// What a broker sends: registration, unregistration, heartbeats, data-version queries,
    /// topic registration, its member group.
    Broker,
    /// Everything else that changes state: KV writes, config updates, write permissions, topic
    /// deletion.
    Admin,
}

/// An account's role. Each role grants its own requests and every lesser role's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Reads only.
    Reader,
    /// Broker requests and reads.
    Broker,
    /// Everything.
    Admin,
}

impl Role {
    /// Whether this role may send a request needing `access`.
    pub fn allows(self, access: Access) -> bool {
        let needed = match access {
            Access::Read => Role::Reader,
            Access::Broker => Role::Broker,
            Access::Admin => Role::Admin,
        };
        self >= needed
    }

    /// The role's name as written in the accounts file.
    pub fn name(self) -> &'static str {
        match self {
            Role::Reader => "reader",
            Role::Broker => "broker",
            Role::Admin => "admin",
        }
    }
}

/// The ext field of CONTROLLER_ELECT_MASTER saying an operator chose the new master.
const DESIGNATE_ELECT: &str = "designateElect";

/// The access `request` needs: [`access_of`] its code, except that CONTROLLER_ELECT_MASTER
/// (1002) with `designateElect=true` — an operator naming the new master (`mqadmin
/// electMaster`) — needs `admin`, while a broker's own request for an election of its group
/// (`designateElect` false or absent) needs `broker` and is held to the account's ownership.
/// Java: `ElectMasterRequestHeader#ofAdminTrigger` / `#ofBrokerTrigger`
pub fn access_of_request(request: &RemotingCommand) -> Access {
    let access = access_of(request.code);
    if request.code == C::ControllerElectMaster.to_i32()
        && request.ext(DESIGNATE_ELECT).is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
    {
        return Access::Admin;
    }
    access
}

/// The access a request code needs.
pub fn access_of(code: i32) -> Access {
    match C::from_i32(code) {
        C::RegisterBroker
        | C::UnregisterBroker
        | C::BrokerHeartbeat
        | C::QueryDataVersion
        | C::RegisterTopicInNamesrv
        | C::GetBrokerMemberGroup => Access::Broker,
        C::PutKvConfig
        | C::DeleteKvConfig
        | C::WipeWritePermOfBroker
        | C::AddWritePermOfBroker
        | C::DeleteTopicInNamesrv
        | C::UpdateNamesrvConfig => Access::Admin,
        // The controller's requests (the nameserver answers them REQUEST_CODE_NOT_SUPPORTED) by
        // what they do: a broker's own replication bookkeeping (Java 5.5's `BrokerOuterAPI`
        // sends 1001, 1002 for its own group, 1003, 1004, 1012, 1013 and the heartbeat 904),
        // an operator's changes, reads.
        C::ControllerAlterSyncStateSet
        | C::ControllerElectMaster
        | C::ControllerRegisterBroker
        | C::ControllerGetNextBrokerId
        | C::ControllerApplyBrokerId
        | C::NotifyBrokerRoleChanged => Access::Broker,
        C::UpdateControllerConfig | C::CleanBrokerData => Access::Admin,
        C::ControllerGetReplicaInfo
        | C::ControllerGetMetadataInfo
        | C::ControllerGetSyncStateData
        | C::GetBrokerEpochCache
        | C::GetControllerConfig => Access::Read,
        C::GetKvConfig
        | C::GetKvlistByNamespace
        | C::GetRouteinfoByTopic
        | C::GetBrokerClusterInfo
        | C::GetAllTopicListFromNameserver
        | C::GetTopicsByCluster
        | C::GetSystemTopicListFromNs
        | C::GetUnitTopicList
        | C::GetHasUnitSubTopicList
        | C::GetHasUnitSubUnunitTopicList
        | C::GetNamesrvConfig
        | C::NotifyMinBrokerIdChange
        | C::Unknown(_) => Access::Read,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every request code this server serves, with the access the issue's table gives it.
    const TABLE: &[(C, Access)] = &[
        (C::PutKvConfig, Access::Admin),
        (C::GetKvConfig, Access::Read),
        (C::DeleteKvConfig, Access::Admin),
        (C::RegisterBroker, Access::Broker),
        (C::UnregisterBroker, Access::Broker),
        (C::GetRouteinfoByTopic, Access::Read),
        (C::GetBrokerClusterInfo, Access::Read),
        (C::WipeWritePermOfBroker, Access::Admin),
        (C::GetAllTopicListFromNameserver, Access::Read),
        (C::DeleteTopicInNamesrv, Access::Admin),
        (C::RegisterTopicInNamesrv, Access::Broker),
        (C::GetKvlistByNamespace, Access::Read),
        (C::GetTopicsByCluster, Access::Read),
        (C::GetSystemTopicListFromNs, Access::Read),
        (C::GetUnitTopicList, Access::Read),
        (C::GetHasUnitSubTopicList, Access::Read),
        (C::GetHasUnitSubUnunitTopicList, Access::Read),
        (C::UpdateNamesrvConfig, Access::Admin),
        (C::GetNamesrvConfig, Access::Read),
        (C::QueryDataVersion, Access::Broker),
        (C::AddWritePermOfBroker, Access::Admin),
        (C::GetBrokerMemberGroup, Access::Broker),
        (C::BrokerHeartbeat, Access::Broker),
    ];

    #[test]
    fn each_role_is_allowed_exactly_its_requests_for_every_code() {
        for &(code, access) in TABLE {
            assert_eq!(access_of(code.to_i32()), access, "{code:?}");
            for role in [Role::Reader, Role::Broker, Role::Admin] {
                let expected = match role {
                    Role::Reader => access == Access::Read,
                    Role::Broker => access != Access::Admin,
                    Role::Admin => true,
                };
                assert_eq!(role.allows(access), expected, "{} sending {code:?}", role.name());
            }
        }
    }

    #[test]
    fn the_controller_codes_need_what_the_issue_says() {
        for (code, access) in [
            (C::ControllerAlterSyncStateSet, Access::Broker),
            (C::ControllerElectMaster, Access::Broker),
            (C::ControllerRegisterBroker, Access::Broker),
            (C::ControllerGetNextBrokerId, Access::Broker),
            (C::ControllerApplyBrokerId, Access::Broker),
            (C::ControllerGetReplicaInfo, Access::Read),
            (C::ControllerGetMetadataInfo, Access::Read),
            (C::ControllerGetSyncStateData, Access::Read),
            (C::GetBrokerEpochCache, Access::Read),
            (C::GetControllerConfig, Access::Read),
            (C::UpdateControllerConfig, Access::Admin),
            (C::CleanBrokerData, Access::Admin),
        ] {
            assert_eq!(access_of(code.to_i32()), access, "{code:?}");
        }
        let elect = |designate: Option<&str>| {
            let mut cmd = RemotingCommand::request(C::ControllerElectMaster);
            let mut ext = remoting::ExtFields::default();
            ext.insert("brokerName", "bn");
            if let Some(d) = designate {
                ext.insert("designateElect", d);
            }
            cmd.ext_fields = Some(ext);
            access_of_request(&cmd)
        };
        assert_eq!(elect(None), Access::Broker);
        assert_eq!(elect(Some("false")), Access::Broker);
        assert_eq!(elect(Some("true")), Access::Admin, "an operator's election");
    }

    #[test]
    fn codes_this_server_does_not_serve_change_nothing_and_count_as_reads() {
        assert_eq!(access_of(9999), Access::Read);
        assert_eq!(access_of(C::NotifyMinBrokerIdChange.to_i32()), Access::Read);
    }
}
