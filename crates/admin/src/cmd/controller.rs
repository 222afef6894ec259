//! The controller commands (`-a controllerAddress`): `getControllerMetaData`,
//! `getSyncStateSet`, `electMaster`, `cleanBrokerMetadata`, `getControllerConfig`,
//! `updateControllerConfig`. Like Java's admin, requests that must reach the leader ask the
//! controller of `-a` for the metadata first and then talk to the leader it names.

use std::collections::BTreeMap;
use std::time::Duration;

use remoting::body::ReplicaIdentity;
use serde_json::json;

use super::{all_ok, on_each};
use crate::{AdminError, Brokers, Ctx, Exit};

/// Java `String.valueOf` of an optional value.
fn show<T: ToString>(v: Option<T>) -> String {
    v.map_or_else(|| "null".to_owned(), |v| v.to_string())
}

/// Java: GetControllerMetaDataSubCommand.
pub(crate) async fn metadata(ctx: &mut Ctx<'_>) -> Result<Exit, AdminError> {
    let meta = ctx.client.get_controller_metadata().await?;
    let peers: Vec<&str> =
        meta.peers.as_deref().unwrap_or("").split(';').filter(|p| !p.is_empty()).collect();
    if ctx.json {
        ctx.json(&json!({
            "group": meta.group,
            "controllerLeaderId": meta.controller_leader_id,
            "controllerLeaderAddress": meta.controller_leader_address,
            "isLeader": meta.is_leader,
            "peers": peers,
        }))?;
        return Ok(0);
    }
    write!(ctx.out, "\n#ControllerGroup\t{}", show(meta.group))?;
    write!(ctx.out, "\n#ControllerLeaderId\t{}", show(meta.controller_leader_id))?;
    write!(ctx.out, "\n#ControllerLeaderAddress\t{}", show(meta.controller_leader_address))?;
    for peer in peers {
        write!(ctx.out, "\n#Peer:\t{peer}")?;
    }
    writeln!(ctx.out)?;
    Ok(0)
}

/// Java `ReplicaIdentity#toString`.
fn identity(r: &ReplicaIdentity) -> String {
    format!(
        "ReplicaIdentity{{brokerName='{}', brokerId={}, brokerAddress='{}', alive={}}}",
        r.broker_name,
        r.broker_id,
        r.broker_address,
        show(r.alive)
    )
}

/// Java: GetSyncStateSetSubCommand. `-c` takes the cluster's broker names from the name
/// servers of `-n`; `-i` repeats every that many seconds until interrupted.
pub(crate) async fn sync_state_set(ctx: &mut Ctx<'_>, which: &Brokers) -> Result<Exit, AdminError> {
    let (cluster, broker) = (which.cluster_name.as_deref(), which.broker_name.as_deref());
    loop {
        let names: Vec<String> = match (broker, cluster) {
            (Some(b), _) => vec![b.trim().to_owned()],
            (None, Some(c)) => {
                let namesrv = ctx.namesrv.as_ref().ok_or_else(|| {
                    AdminError::Usage("-c needs the name servers (-n or NAMESRV_ADDR) to list the cluster's brokers".into())
                })?;
                let info = namesrv.cluster_info().await?;
                info.cluster_addr_table
                    .get(c.trim())
                    .map(|s| s.iter().cloned().collect())
                    .unwrap_or_default()
            }
            (None, None) => {
                return Err(AdminError::Usage(
                    "getSyncStateSet needs -b brokerName or -c clusterName".into(),
                ))
            }
        };
        if !names.is_empty() {
            let names = &names;
            let info = ctx
                .client
                .on_controller_leader(
                    |leader| async move { leader.get_sync_state_data(names).await },
                )
                .await?;
            if ctx.json {
                ctx.json(&info.replicas_info_table)?;
            } else {
                for (name, r) in &info.replicas_info_table {
                    write!(
                        ctx.out,
                        "\n#brokerName\t{name}\n#MasterBrokerId\t{}\n#MasterAddr\t{}\n#MasterEpoch\t{}\n#SyncStateSetEpoch\t{}\n#SyncStateSetNums\t{}\n",
                        show(r.master_broker_id),
                        show(r.master_address.as_deref()),
                        r.master_epoch,
                        r.sync_state_set_epoch,
                        r.in_sync_replicas.len()
                    )?;
                    for m in &r.in_sync_replicas {
                        write!(ctx.out, "\nInSyncReplica:\t{}\n", identity(m))?;
                    }
                    for m in &r.not_in_sync_replicas {
                        write!(ctx.out, "\nNotInSyncReplica:\t{}\n", identity(m))?;
                    }
                }
            }
        }
        match which.interval {
            None => return Ok(0),
            Some(seconds) => {
                ctx.out.flush()?;
                tokio::time::sleep(Duration::from_secs(seconds.max(1))).await;
            }
        }
    }
}

/// Java: ReElectMasterSubCommand. Unlike Java (which decodes the answer's body as the wrong
/// type and prints no members), the group's members are listed.
pub(crate) async fn elect_master(
    ctx: &mut Ctx<'_>,
    cluster: &str,
    broker: &str,
    broker_id: i64,
) -> Result<Exit, AdminError> {
    let (h, body) = ctx
        .client
        .on_controller_leader(|leader| async move {
            leader.elect_master(cluster, broker, broker_id).await
        })
        .await?;
    let members: BTreeMap<i64, String> =
        body.broker_member_group.map(|g| g.broker_addrs.0).unwrap_or_default();
    if ctx.json {
        ctx.json(&json!({
            "clusterName": cluster,
            "brokerName": broker,
            "masterBrokerId": h.master_broker_id,
            "masterAddress": h.master_address,
            "masterEpoch": h.master_epoch,
            "syncStateSetEpoch": h.sync_state_set_epoch,
            "brokers": members,
        }))?;
        return Ok(0);
    }
    write!(ctx.out, "\n#ClusterName\t{cluster}")?;
    write!(ctx.out, "\n#BrokerName\t{broker}")?;
    write!(ctx.out, "\n#BrokerMasterAddr\t{}", show(h.master_address))?;
    write!(ctx.out, "\n#MasterEpoch\t{}", show(h.master_epoch))?;
    writeln!(ctx.out, "\n#SyncStateSetEpoch\t{}", show(h.sync_state_set_epoch))?;
    for (id, addr) in &members {
        writeln!(ctx.out, "\t#Broker\t{id}\t{addr}")?;
    }
    Ok(0)
}

/// Java: CleanControllerBrokerMetaSubCommand.
pub(crate) async fn clean(
    ctx: &mut Ctx<'_>,
    cluster: Option<&str>,
    broker: &str,
    ids: Option<&str>,
    clean_living: bool,
) -> Result<Exit, AdminError> {
    let cluster = cluster.map(str::trim).filter(|c| !c.is_empty());
    if !clean_living && cluster.is_none() {
        return Err(AdminError::Usage(
            "cleanLivingBroker option is false, clusterName option can not be empty.".into(),
        ));
    }
    if let Some(ids) = ids {
        if ids.trim().split(';').any(|id| id.parse::<i64>().is_err()) {
            return Err(AdminError::Usage(
                "please set the option <brokerControllerIdsToClean> according to the format".into(),
            ));
        }
    }
    ctx.client
        .on_controller_leader(|leader| async move {
            leader
                .clean_controller_broker_data(cluster, broker, ids.map(str::trim), clean_living)
                .await
        })
        .await?;
    if ctx.json {
        ctx.json(&json!({ "brokerName": broker, "cleaned": true }))?;
    } else {
        writeln!(ctx.out, "clear broker {broker} metadata from controller success! ")?;
    }
    Ok(0)
}

/// Java: GetControllerConfigSubCommand (every controller of `-a`).
pub(crate) async fn get_config(ctx: &mut Ctx<'_>) -> Result<Exit, AdminError> {
    let configs =
        all_ok(on_each(&ctx.client, |c| async move { c.get_controller_config().await }).await)?;
    super::print_configs(ctx, &configs)
}

/// Java: UpdateControllerConfigSubCommand (every controller of `-a`).
pub(crate) async fn update_config(
    ctx: &mut Ctx<'_>,
    key: &str,
    value: &str,
) -> Result<Exit, AdminError> {
    let props: BTreeMap<String, String> = [(key.to_owned(), value.to_owned())].into();
    let props = &props;
    let done = all_ok(
        on_each(&ctx.client, |c| async move { c.update_controller_config(props).await }).await,
    )?;
    let list: Vec<&str> = done.iter().map(|(a, _)| a.as_str()).collect();
    if ctx.json {
        ctx.json(&json!({ "controllers": list, "key": key, "value": value }))?;
    } else {
        writeln!(
            ctx.out,
            "update controller config success![{}]\n{key} : {value}",
            list.join(", ")
        )?;
    }
    Ok(0)
}
