//! The subcommands, one module per noun, and helpers shared by them.

mod cluster;
mod controller;
mod diff;
mod epoch;
mod kv;
mod namesrv;
mod topic;

use std::future::Future;

use client::Client;

use crate::{AdminError, Command, Ctx, Exit};

/// Dispatches one subcommand.
pub(crate) async fn run(ctx: &mut Ctx<'_>, command: Command) -> Result<Exit, AdminError> {
    match command {
        Command::ClusterList { cluster_name } => {
            cluster::cluster_list(ctx, cluster_name.as_deref()).await
        }
        Command::TopicList { cluster_model } => topic::topic_list(ctx, cluster_model).await,
        Command::TopicRoute { topic, list } => topic::topic_route(ctx, topic.trim(), list).await,
        Command::TopicClusterList { topic } => topic::topic_cluster_list(ctx, topic.trim()).await,
        Command::DeleteTopic { topic, cluster_name } => {
            topic::delete_topic(ctx, topic.trim(), cluster_name.trim()).await
        }
        Command::UpdateOrderConf { topic, order_conf, method } => {
            topic::update_order_conf(ctx, topic.trim(), order_conf.as_deref(), method).await
        }
        Command::GetNamesrvConfig => namesrv::get_config(ctx).await,
        Command::UpdateNamesrvConfig { key, value } => {
            namesrv::update_config(ctx, key.trim(), value.trim()).await
        }
        Command::WipeWritePerm { broker_name } => {
            namesrv::write_perm(ctx, broker_name.trim(), false).await
        }
        Command::AddWritePerm { broker_name } => {
            namesrv::write_perm(ctx, broker_name.trim(), true).await
        }
        Command::UpdateKvConfig { namespace, key, value } => {
            kv::update(ctx, namespace.trim(), key.trim(), value.trim()).await
        }
        Command::DeleteKvConfig { namespace, key } => {
            kv::delete(ctx, namespace.trim(), key.trim()).await
        }
        Command::GetKvConfig { namespace, key } => kv::get(ctx, namespace.trim(), key.trim()).await,
        Command::GetKvListByNamespace { namespace } => kv::list(ctx, namespace.trim()).await,
        Command::NsDiff => diff::ns_diff(ctx).await,
        Command::GetControllerMetaData { .. } => controller::metadata(ctx).await,
        Command::GetSyncStateSet { which, .. } => controller::sync_state_set(ctx, &which).await,
        Command::GetBrokerEpoch { which } => epoch::broker_epoch(ctx, &which).await,
        Command::ElectMaster { broker_id, broker_name, cluster_name, .. } => {
            controller::elect_master(ctx, cluster_name.trim(), broker_name.trim(), broker_id).await
        }
        Command::CleanBrokerMetadata {
            ids_to_clean,
            broker_name,
            cluster_name,
            clean_living_broker,
            ..
        } => {
            controller::clean(
                ctx,
                cluster_name.as_deref(),
                broker_name.trim(),
                ids_to_clean.as_deref(),
                clean_living_broker,
            )
            .await
        }
        Command::GetControllerConfig { .. } => controller::get_config(ctx).await,
        Command::UpdateControllerConfig { key, value, .. } => {
            controller::update_config(ctx, key.trim(), value.trim()).await
        }
    }
}

/// Runs `f` against every nameserver of the list in parallel; results in list order.
pub(crate) async fn on_each<T, F, Fut>(
    client: &Client,
    f: F,
) -> Vec<(String, Result<T, client::Error>)>
where
    F: Fn(Client) -> Fut,
    Fut: Future<Output = Result<T, client::Error>>,
{
    let calls = client.each_namesrv().into_iter().map(|ns| {
        let addr = ns.pinned_addr().unwrap_or_default().to_owned();
        let fut = f(ns);
        async move { (addr, fut.await) }
    });
    futures::future::join_all(calls).await
}

/// Fails with every nameserver's error when any call failed (Java throws after trying all).
pub(crate) fn all_ok<T>(
    results: Vec<(String, Result<T, client::Error>)>,
) -> Result<Vec<(String, T)>, AdminError> {
    let mut ok = Vec::new();
    let mut failed = Vec::new();
    for (addr, r) in results {
        match r {
            Ok(v) => ok.push((addr, v)),
            Err(e) => failed.push(format!("{addr}: {e}")),
        }
    }
    if failed.is_empty() {
        Ok(ok)
    } else {
        Err(AdminError::Failed(failed.join("\n")))
    }
}

/// Java `UtilAll#frontStringAtLeast`: the first `size` characters.
pub(crate) fn front(s: &str, size: usize) -> String {
    s.chars().take(size).collect()
}

/// Prints the configuration of each server as Java's `get*Config` commands do (or as JSON).
pub(crate) fn print_configs(
    ctx: &mut Ctx<'_>,
    configs: &[(String, std::collections::BTreeMap<String, String>)],
) -> Result<Exit, AdminError> {
    if ctx.json {
        let map: std::collections::BTreeMap<&String, &std::collections::BTreeMap<String, String>> =
            configs.iter().map(|(a, c)| (a, c)).collect();
        ctx.json(&map)?;
        return Ok(0);
    }
    for (addr, config) in configs {
        writeln!(ctx.out, "============{addr}============")?;
        for (k, v) in config {
            writeln!(ctx.out, "{k:<50}=  {v}")?;
        }
    }
    Ok(0)
}
