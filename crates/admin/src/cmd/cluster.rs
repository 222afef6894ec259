//! `clusterList`.

use std::collections::{BTreeMap, BTreeSet};

use remoting::body::ClusterInfo;

use crate::{AdminError, Ctx, Exit};

/// Java: ClusterListSubCommand#printClusterBaseInfo. Brokers are not asked for their runtime
/// stats, so those columns hold what Java prints when a broker cannot be reached.
pub(crate) async fn cluster_list(
    ctx: &mut Ctx<'_>,
    cluster: Option<&str>,
) -> Result<Exit, AdminError> {
    let info = ctx.client.cluster_info().await?;
    let clusters: BTreeSet<String> = match cluster.map(str::trim).filter(|c| !c.is_empty()) {
        Some(c) => [c.to_owned()].into(),
        None => info.cluster_addr_table.keys().cloned().collect(),
    };
    if ctx.json {
        let mut shown =
            ClusterInfo { broker_addr_table: BTreeMap::new(), cluster_addr_table: BTreeMap::new() };
        for c in &clusters {
            let Some(names) = info.cluster_addr_table.get(c) else { continue };
            shown.cluster_addr_table.insert(c.clone(), names.clone());
            for n in names {
                if let Some(b) = info.broker_addr_table.get(n) {
                    shown.broker_addr_table.insert(n.clone(), b.clone());
                }
            }
        }
        ctx.json(&shown)?;
        return Ok(0);
    }
    writeln!(
        ctx.out,
        "{:<22}  {:<22}  {:<4}  {:<22} {:<16}  {:>16}  {:>30}  {:<22}  {:<11}  {:<12}  {:<8}  {:<10}",
        "#Cluster Name",
        "#Broker Name",
        "#BID",
        "#Addr",
        "#Version",
        "#InTPS(LOAD)",
        "#OutTPS(LOAD)",
        "#Timer(Progress)",
        "#PCWait(ms)",
        "#Hour",
        "#SPACE",
        "#ACTIVATED"
    )?;
    for c in &clusters {
        let names: BTreeSet<&String> =
            info.cluster_addr_table.get(c).into_iter().flatten().collect();
        for name in names {
            let Some(broker) = info.broker_addr_table.get(name) else { continue };
            for (id, addr) in broker.broker_addrs.jdk_hash_order() {
                writeln!(
                    ctx.out,
                    "{:<22}  {:<22}  {:<4}  {:<22} {:<16}  {:>16}  {:>30}  {:<22}  {:>11}  {:<12}  {:<8}  {:>10}",
                    c,
                    name,
                    id,
                    addr,
                    "",
                    format!("{:9.2}(,ms)", 0.0),
                    format!("{:9.2}(,ms|,ms)", 0.0),
                    "0-0(0.0w, 0.0, 0.0)",
                    "",
                    "0.00",
                    "0.0000",
                    "false"
                )?;
            }
        }
    }
    Ok(0)
}
