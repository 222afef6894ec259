//! `topicList`, `topicRoute`, `topicClusterList`, `deleteTopic`, `updateOrderConf`.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;

use futures::StreamExt;
use remoting::body::{ClusterInfo, TopicRouteData};
use serde_json::json;

use super::{all_ok, front, on_each};
use crate::{AdminError, Ctx, Exit, OrderConfMethod};

/// KV namespace of order-topic configs (Java `NamesrvUtil.NAMESPACE_ORDER_TOPIC_CONFIG`).
const ORDER_TOPIC_CONFIG: &str = "ORDER_TOPIC_CONFIG";
/// Routes fetched at once by `topicList -c`.
const PARALLEL_ROUTES: usize = 32;

/// The cluster holding the first broker of the route (Java `findTopicBelongToWhichCluster`).
fn cluster_of(route: &TopicRouteData, info: &ClusterInfo) -> Option<String> {
    let first = route.broker_datas.first()?;
    info.cluster_addr_table
        .iter()
        .find(|(_, names)| names.contains(&first.broker_name))
        .map(|(c, _)| c.clone())
}

/// Java: TopicListSubCommand. With `-c`, consumer groups are not looked up (that needs brokers),
/// so the group column is empty.
pub(crate) async fn topic_list(ctx: &mut Ctx<'_>, cluster_model: bool) -> Result<Exit, AdminError> {
    if !cluster_model {
        let list = ctx.client.all_topic_list().await?;
        if ctx.json {
            ctx.json(&json!({ "topicList": list.topic_list }))?;
        } else {
            for t in &list.topic_list {
                writeln!(ctx.out, "{t}")?;
            }
        }
        return Ok(0);
    }
    let info = ctx.client.cluster_info().await?;
    let list = ctx.client.all_topic_list().await?;
    let topics: Vec<String> = list
        .topic_list
        .into_iter()
        .filter(|t| !t.starts_with("%RETRY%") && !t.starts_with("%DLQ%"))
        .collect();
    let client = ctx.client.clone();
    let clusters: Vec<Option<Option<String>>> = futures::stream::iter(topics.iter().cloned())
        .map(|t| {
            let client = client.clone();
            let info = &info;
            async move { client.get_route(&t).await.ok().map(|r| cluster_of(&r, info)) }
        })
        .buffered(PARALLEL_ROUTES)
        .collect()
        .await;
    if ctx.json {
        let rows: Vec<_> = topics
            .iter()
            .zip(&clusters)
            .map(
                |(t, c)| json!({ "cluster": c.clone().flatten(), "topic": t, "consumerGroup": "" }),
            )
            .collect();
        ctx.json(&rows)?;
        return Ok(0);
    }
    writeln!(ctx.out, "{:<20}  {:<48}  {:<48}", "#Cluster Name", "#Topic", "#Consumer Group")?;
    for (topic, cluster) in topics.iter().zip(clusters) {
        // Java: "" when the route lookup failed, "null" when no cluster holds the broker.
        let cluster = match cluster {
            None => String::new(),
            Some(None) => "null".to_owned(),
            Some(Some(c)) => c,
        };
        writeln!(ctx.out, "{:<20}  {:<64}  {:<64}", front(&cluster, 20), front(topic, 64), "")?;
    }
    Ok(0)
}

/// Java `HashMap#toString` of broker addresses: `{0=addr, 1=addr}`.
fn addrs_to_string(route_broker: &remoting::body::BrokerData) -> String {
    let items: Vec<String> = route_broker
        .broker_addrs
        .jdk_hash_order()
        .into_iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    format!("{{{}}}", items.join(", "))
}

/// Java: TopicRouteSubCommand (pretty JSON, or `-l` table).
pub(crate) async fn topic_route(
    ctx: &mut Ctx<'_>,
    topic: &str,
    list: bool,
) -> Result<Exit, AdminError> {
    let route = ctx.client.get_route(topic).await?;
    if ctx.json {
        ctx.json(&route)?;
        return Ok(0);
    }
    if !list {
        writeln!(ctx.out, "{}", crate::pretty::route(&route))?;
        return Ok(0);
    }
    let queues: BTreeMap<&str, &remoting::body::QueueData> =
        route.queue_datas.iter().map(|q| (q.broker_name.as_str(), q)).collect();
    let mut brokers: Vec<_> = route.broker_datas.iter().collect();
    brokers.sort_by(|a, b| a.broker_name.cmp(&b.broker_name));
    let row = |out: &mut dyn Write, c: &str, b: &str, a: &str, r: &str, w: &str, p: &str| {
        writeln!(out, "{c:<45} {b:<32} {a:<50} {r:<10} {w:<11} {p:<5}")
    };
    row(
        ctx.out,
        "#ClusterName",
        "#BrokerName",
        "#BrokerAddrs",
        "#ReadQueue",
        "#WriteQueue",
        "#Perm",
    )?;
    let (mut total_read, mut total_write) = (0i64, 0i64);
    for b in brokers {
        let Some(q) = queues.get(b.broker_name.as_str()) else { continue };
        total_read += i64::from(q.read_queue_nums);
        total_write += i64::from(q.write_queue_nums);
        row(
            ctx.out,
            &b.cluster,
            &b.broker_name,
            &addrs_to_string(b),
            &q.read_queue_nums.to_string(),
            &q.write_queue_nums.to_string(),
            &q.perm.to_string(),
        )?;
    }
    writeln!(ctx.out, "{}", "-".repeat(158))?;
    row(
        ctx.out,
        "Total:",
        &queues.len().to_string(),
        "",
        &total_read.to_string(),
        &total_write.to_string(),
        "",
    )?;
    Ok(0)
}

/// Java: TopicClusterSubCommand / DefaultMQAdminExtImpl#getTopicClusterList.
pub(crate) async fn topic_cluster_list(ctx: &mut Ctx<'_>, topic: &str) -> Result<Exit, AdminError> {
    let info = ctx.client.cluster_info().await?;
    let route = ctx.client.get_route(topic).await?;
    let first = route
        .broker_datas
        .first()
        .ok_or_else(|| AdminError::Failed(format!("topic {topic} has no broker in its route")))?;
    let clusters: BTreeSet<&String> = info
        .cluster_addr_table
        .iter()
        .filter(|(_, names)| names.contains(&first.broker_name))
        .map(|(c, _)| c)
        .collect();
    if ctx.json {
        ctx.json(&clusters)?;
    } else {
        for c in clusters {
            writeln!(ctx.out, "{c}")?;
        }
    }
    Ok(0)
}

/// Java: DeleteTopicSubCommand, the nameserver part (DELETE_TOPIC_IN_NAMESRV with the cluster,
/// to every nameserver of -n).
pub(crate) async fn delete_topic(
    ctx: &mut Ctx<'_>,
    topic: &str,
    cluster: &str,
) -> Result<Exit, AdminError> {
    let results =
        on_each(&ctx.client, |ns| async move { ns.delete_topic(topic, Some(cluster)).await }).await;
    let done = all_ok(results)?;
    if ctx.json {
        let namesrvs: Vec<&String> = done.iter().map(|(a, _)| a).collect();
        ctx.json(&json!({ "topic": topic, "clusterName": cluster, "namesrvs": namesrvs }))?;
    } else {
        writeln!(ctx.out, "delete topic [{topic}] from NameServer success.")?;
    }
    Ok(0)
}

/// Java: UpdateOrderConfCommand (put/delete go to every nameserver, get to one).
pub(crate) async fn update_order_conf(
    ctx: &mut Ctx<'_>,
    topic: &str,
    order_conf: Option<&str>,
    method: OrderConfMethod,
) -> Result<Exit, AdminError> {
    match method {
        OrderConfMethod::Get => {
            let conf =
                ctx.client.get_kv_config(ORDER_TOPIC_CONFIG, topic).await?.ok_or_else(|| {
                    AdminError::Failed(format!(
                        "No config item, Namespace: {ORDER_TOPIC_CONFIG} Key: {topic}"
                    ))
                })?;
            if ctx.json {
                ctx.json(&json!({ "topic": topic, "orderConf": conf }))?;
            } else {
                writeln!(ctx.out, "get orderConf success. topic=[{topic}], orderConf=[{conf}] ")?;
            }
        }
        OrderConfMethod::Put => {
            let conf = order_conf.map(str::trim).filter(|c| !c.is_empty());
            let conf = conf
                .ok_or_else(|| AdminError::Usage("please set orderConf with option -v.".into()))?;
            all_ok(
                on_each(&ctx.client, |ns| async move {
                    ns.put_kv_config(ORDER_TOPIC_CONFIG, topic, conf).await
                })
                .await,
            )?;
            if ctx.json {
                ctx.json(&json!({ "topic": topic, "orderConf": conf }))?;
            } else {
                writeln!(ctx.out, "update orderConf success. topic=[{topic}], orderConf=[{conf}]")?;
            }
        }
        OrderConfMethod::Delete => {
            all_ok(
                on_each(&ctx.client, |ns| async move {
                    ns.delete_kv_config(ORDER_TOPIC_CONFIG, topic).await
                })
                .await,
            )?;
            if ctx.json {
                ctx.json(&json!({ "topic": topic, "deleted": true }))?;
            } else {
                writeln!(ctx.out, "delete orderConf success. topic=[{topic}]")?;
            }
        }
    }
    Ok(0)
}
