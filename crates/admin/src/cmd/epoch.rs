//! `getBrokerEpoch`: the master epochs a broker in controller mode has recorded
//! (GET_BROKER_EPOCH_CACHE, asked of each broker the name servers of `-n` list for `-b` or `-c`).

use std::time::Duration;

use remoting::body::{ClusterInfo, EpochEntryCache};
use serde_json::json;

use crate::{AdminError, Brokers, Ctx, Exit};

/// What Java's `CommandUtil` prints (without a newline) when `-c` names no known cluster.
const NO_CLUSTER: &str =
    "[error] Make sure the specified clusterName exists or the name server connected to is correct.";

/// The addresses of every broker (master and slaves) of `names`, in name then id order, each
/// once. Java: `CommandUtil#fetchMasterAndSlaveAddrByBrokerName` (a `HashSet`, so Java's order
/// is arbitrary).
fn addrs_of<'a>(info: &ClusterInfo, names: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let mut addrs: Vec<String> = Vec::new();
    for name in names {
        let Some(data) = info.broker_addr_table.get(name) else { continue };
        for addr in data.broker_addrs.0.values() {
            if !addrs.contains(addr) {
                addrs.push(addr.clone());
            }
        }
    }
    addrs
}

/// Java's `printData` rewrite: the last (current) epoch ends at the broker's max offset
/// rather than at `Long.MAX_VALUE`.
fn close_last_epoch(cache: &mut EpochEntryCache) {
    let max = cache.max_offset;
    if let Some(last) = cache.epoch_list.last_mut() {
        last.end_offset = max;
    }
}

/// Java: GetBrokerEpochSubCommand. `-b` takes the group's addresses from the name servers'
/// cluster info, `-c` those of every group of the cluster; `-i` repeats every that many
/// seconds until interrupted. A broker that fails the request fails the command (after the
/// brokers before it were printed), as in Java.
pub(crate) async fn broker_epoch(ctx: &mut Ctx<'_>, which: &Brokers) -> Result<Exit, AdminError> {
    let (cluster, broker) = (which.cluster_name.as_deref(), which.broker_name.as_deref());
    if broker.is_none() && cluster.is_none() {
        return Err(AdminError::Usage(
            "getBrokerEpoch needs -b brokerName or -c clusterName".into(),
        ));
    }
    loop {
        let info = ctx.client.cluster_info().await?;
        let addrs = match broker {
            Some(b) => Some(addrs_of(&info, [b.trim()])),
            None => info
                .cluster_addr_table
                .get(cluster.unwrap_or_default().trim())
                .map(|names| addrs_of(&info, names.iter().map(String::as_str))),
        };
        let mut found = Vec::new();
        match addrs {
            None if !ctx.json => write!(ctx.out, "{NO_CLUSTER}")?,
            None => {}
            Some(addrs) => {
                for addr in addrs {
                    let mut cache = ctx.client.pinned(&addr).get_broker_epoch_cache().await?;
                    close_last_epoch(&mut cache);
                    if ctx.json {
                        found.push(json!({
                            "brokerAddr": addr,
                            "clusterName": cache.cluster_name,
                            "brokerName": cache.broker_name,
                            "brokerId": cache.broker_id,
                            "epochList": cache.epoch_list,
                            "maxOffset": cache.max_offset,
                        }));
                        continue;
                    }
                    write!(
                        ctx.out,
                        "\n#clusterName\t{}\n#brokerName\t{}\n#brokerAddr\t{addr}\n#brokerId\t{}",
                        cache.cluster_name, cache.broker_name, cache.broker_id
                    )?;
                    for e in &cache.epoch_list {
                        write!(
                            ctx.out,
                            "\n#Epoch: EpochEntry{{epoch={}, startOffset={}, endOffset={}}}",
                            e.epoch, e.start_offset, e.end_offset
                        )?;
                    }
                    writeln!(ctx.out)?;
                }
            }
        }
        if ctx.json {
            ctx.json(&found)?;
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
