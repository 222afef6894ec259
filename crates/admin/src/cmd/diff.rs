//! `nsDiff`: compares what every nameserver of -n knows — clusters, brokers, topics and every
//! topic's queues — and reports each difference. Exit 0 when all agree, 1 when they differ.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Display;

use client::Client;
use futures::StreamExt;
use remoting::body::{ClusterInfo, QueueData, TopicRouteData};
use remoting::ResponseCode;
use serde::Serialize;

use crate::{AdminError, Ctx, Exit};

/// Route lookups in flight per nameserver.
const PARALLEL_ROUTES: usize = 64;

/// What one nameserver knows.
struct Snapshot {
    addr: String,
    cluster: ClusterInfo,
    topics: BTreeSet<String>,
    /// Route per topic of the union of all topic lists; `None` = TOPIC_NOT_EXIST.
    routes: BTreeMap<String, Option<TopicRouteData>>,
}

/// One difference: what it is about, and how the nameservers disagree.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub(crate) struct Difference {
    pub subject: String,
    pub detail: String,
}

async fn fetch_lists(ns: &Client) -> Result<(ClusterInfo, BTreeSet<String>), client::Error> {
    let cluster = ns.cluster_info().await?;
    let topics = ns.all_topic_list().await?.topic_list.into_iter().collect();
    Ok((cluster, topics))
}

async fn fetch_routes(
    ns: &Client,
    topics: &BTreeSet<String>,
) -> Result<BTreeMap<String, Option<TopicRouteData>>, client::Error> {
    let results: Vec<(String, Result<TopicRouteData, client::Error>)> =
        futures::stream::iter(topics.iter().cloned())
            .map(|t| async move {
                let r = ns.get_route(&t).await;
                (t, r)
            })
            .buffer_unordered(PARALLEL_ROUTES)
            .collect()
            .await;
    let mut routes = BTreeMap::new();
    for (topic, r) in results {
        match r {
            Ok(route) => {
                routes.insert(topic, Some(route));
            }
            Err(e) if e.response_code() == Some(ResponseCode::TopicNotExist) => {
                routes.insert(topic, None);
            }
            Err(e) => return Err(e),
        }
    }
    Ok(routes)
}

/// Java has no such command; see the module doc.
pub(crate) async fn ns_diff(ctx: &mut Ctx<'_>) -> Result<Exit, AdminError> {
    let namesrvs = ctx.client.each_namesrv();
    let lists = futures::future::join_all(namesrvs.iter().map(fetch_lists)).await;
    let mut failed = Vec::new();
    let mut partial = Vec::new();
    for (ns, r) in namesrvs.iter().zip(lists) {
        let addr = ns.pinned_addr().unwrap_or_default().to_owned();
        match r {
            Ok((cluster, topics)) => partial.push((ns, addr, cluster, topics)),
            Err(e) => failed.push(format!("{addr}: {e}")),
        }
    }
    if !failed.is_empty() {
        return Err(AdminError::Failed(failed.join("\n")));
    }
    let all_topics: BTreeSet<String> =
        partial.iter().flat_map(|(_, _, _, t)| t.iter().cloned()).collect();
    let all_topics = &all_topics;
    let routes =
        futures::future::join_all(partial.iter().map(|(ns, _, _, _)| fetch_routes(ns, all_topics)))
            .await;
    let mut snaps = Vec::new();
    for ((_, addr, cluster, topics), r) in partial.into_iter().zip(routes) {
        match r {
            Ok(routes) => snaps.push(Snapshot { addr, cluster, topics, routes }),
            Err(e) => failed.push(format!("{addr}: {e}")),
        }
    }
    if !failed.is_empty() {
        return Err(AdminError::Failed(failed.join("\n")));
    }
    let diffs = diff(&snaps);
    let addrs: Vec<&String> = snaps.iter().map(|s| &s.addr).collect();
    if ctx.json {
        ctx.json(&serde_json::json!({ "namesrvs": addrs, "equal": diffs.is_empty(), "differences": diffs }))?;
    } else if diffs.is_empty() {
        writeln!(ctx.out, "no difference between {} name servers", snaps.len())?;
    } else {
        for d in &diffs {
            writeln!(ctx.out, "{}: {}", d.subject, d.detail)?;
        }
        writeln!(
            ctx.out,
            "{} difference(s) between name servers {}",
            diffs.len(),
            addrs.iter().map(|a| a.as_str()).collect::<Vec<_>>().join(", ")
        )?;
    }
    Ok(u8::from(!diffs.is_empty()))
}

/// Compares one value across nameservers; `None` = absent there.
fn compare<V: PartialEq + Display>(
    subject: &str,
    what: &str,
    values: &[(&str, Option<V>)],
    out: &mut Vec<Difference>,
) {
    let present: Vec<&(&str, Option<V>)> = values.iter().filter(|(_, v)| v.is_some()).collect();
    if present.is_empty() {
        return;
    }
    let missing: Vec<&str> = values.iter().filter(|(_, v)| v.is_none()).map(|(a, _)| *a).collect();
    if !missing.is_empty() {
        let on: Vec<&str> = present.iter().map(|(a, _)| *a).collect();
        out.push(Difference {
            subject: subject.to_owned(),
            detail: format!(
                "{what}missing on {} (present on {})",
                missing.join(", "),
                on.join(", ")
            ),
        });
        return;
    }
    let first = &present[0].1;
    if present.iter().any(|(_, v)| v != first) {
        let all: Vec<String> =
            present.iter().filter_map(|(a, v)| v.as_ref().map(|v| format!("{v} on {a}"))).collect();
        out.push(Difference {
            subject: subject.to_owned(),
            detail: format!("{what}{}", all.join(", ")),
        });
    }
}

/// `{0=addr, 1=addr}` in id order.
fn addrs(b: &remoting::body::BrokerData) -> String {
    let items: Vec<String> = b.broker_addrs.0.iter().map(|(k, v)| format!("{k}={v}")).collect();
    format!("{{{}}}", items.join(", "))
}

fn list<T: Display>(items: impl IntoIterator<Item = T>) -> String {
    let v: Vec<String> = items.into_iter().map(|i| i.to_string()).collect();
    format!("[{}]", v.join(", "))
}

/// Every difference between the snapshots, sorted.
fn diff(snaps: &[Snapshot]) -> Vec<Difference> {
    let mut out = Vec::new();
    let clusters: BTreeSet<&String> =
        snaps.iter().flat_map(|s| s.cluster.cluster_addr_table.keys()).collect();
    for c in clusters {
        let v: Vec<(&str, Option<String>)> = snaps
            .iter()
            .map(|s| (s.addr.as_str(), s.cluster.cluster_addr_table.get(c).map(list)))
            .collect();
        compare(&format!("cluster {c}"), "brokers ", &v, &mut out);
    }
    let brokers: BTreeSet<&String> =
        snaps.iter().flat_map(|s| s.cluster.broker_addr_table.keys()).collect();
    for b in brokers {
        let subject = format!("broker {b}");
        let data: Vec<(&str, Option<&remoting::body::BrokerData>)> =
            snaps.iter().map(|s| (s.addr.as_str(), s.cluster.broker_addr_table.get(b))).collect();
        let present =
            |f: &dyn Fn(&remoting::body::BrokerData) -> String| -> Vec<(&str, Option<String>)> {
                data.iter().map(|(a, d)| (*a, d.map(f))).collect()
            };
        let before = out.len();
        compare(&subject, "", &present(&|_| String::new()), &mut out);
        if out.len() == before {
            compare(&subject, "cluster ", &present(&|d| d.cluster.clone()), &mut out);
            compare(&subject, "addresses ", &present(&addrs), &mut out);
        }
    }
    let topics: BTreeSet<&String> = snaps.iter().flat_map(|s| s.topics.iter()).collect();
    for t in topics {
        let subject = format!("topic {t}");
        let listed: Vec<(&str, Option<&str>)> =
            snaps.iter().map(|s| (s.addr.as_str(), s.topics.contains(t).then_some(""))).collect();
        let before = out.len();
        compare(&subject, "", &listed, &mut out);
        if out.len() != before {
            continue;
        }
        let routes: Vec<(&str, Option<&TopicRouteData>)> = snaps
            .iter()
            .map(|s| (s.addr.as_str(), s.routes.get(t).and_then(Option::as_ref)))
            .collect();
        compare(
            &subject,
            "route ",
            &routes.iter().map(|(a, r)| (*a, r.map(|_| ""))).collect::<Vec<_>>(),
            &mut out,
        );
        if routes.iter().any(|(_, r)| r.is_none()) {
            continue;
        }
        let order: Vec<(&str, Option<String>)> = routes
            .iter()
            .map(|(a, r)| {
                (
                    *a,
                    Some(
                        r.and_then(|r| r.order_topic_conf.clone())
                            .unwrap_or_else(|| "<none>".into()),
                    ),
                )
            })
            .collect();
        compare(&subject, "orderTopicConf ", &order, &mut out);
        let brokers: BTreeSet<&String> = routes
            .iter()
            .flat_map(|(_, r)| r.iter().flat_map(|r| r.queue_datas.iter().map(|q| &q.broker_name)))
            .collect();
        for b in brokers {
            let subject = format!("topic {t} broker {b}");
            let qd: Vec<(&str, Option<&QueueData>)> = routes
                .iter()
                .map(|(a, r)| {
                    (*a, r.and_then(|r| r.queue_datas.iter().find(|q| &q.broker_name == b)))
                })
                .collect();
            let field = |f: fn(&QueueData) -> i32| -> Vec<(&str, Option<i32>)> {
                qd.iter().map(|(a, q)| (*a, q.map(f))).collect()
            };
            let before = out.len();
            compare(
                &subject,
                "queues ",
                &qd.iter().map(|(a, q)| (*a, q.map(|_| ""))).collect::<Vec<_>>(),
                &mut out,
            );
            if out.len() != before {
                continue;
            }
            compare(&subject, "readQueueNums ", &field(|q| q.read_queue_nums), &mut out);
            compare(&subject, "writeQueueNums ", &field(|q| q.write_queue_nums), &mut out);
            compare(&subject, "perm ", &field(|q| q.perm), &mut out);
            compare(&subject, "topicSysFlag ", &field(|q| q.topic_sys_flag), &mut out);
        }
    }
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use remoting::body::BrokerData;

    fn snap(addr: &str, brokers: &[(&str, i32)]) -> Snapshot {
        let mut cluster = ClusterInfo::default();
        let mut routes = BTreeMap::new();
        let mut topics = BTreeSet::new();
        for (b, perm) in brokers {
            cluster.cluster_addr_table.entry("C".into()).or_default().insert((*b).into());
            cluster.broker_addr_table.insert(
                (*b).into(),
                BrokerData {
                    broker_addrs: [(0, format!("127.0.0.1:{}", b.len()))].into_iter().collect(),
                    broker_name: (*b).into(),
                    cluster: "C".into(),
                    ..Default::default()
                },
            );
            topics.insert("T".to_owned());
            let route: &mut Option<TopicRouteData> =
                routes.entry("T".to_owned()).or_insert_with(|| Some(TopicRouteData::default()));
            if let Some(r) = route.as_mut() {
                r.queue_datas.push(QueueData {
                    broker_name: (*b).into(),
                    perm: *perm,
                    read_queue_nums: 4,
                    write_queue_nums: 4,
                    topic_sys_flag: 0,
                });
            }
        }
        Snapshot { addr: addr.into(), cluster, topics, routes }
    }

    #[test]
    fn equal_snapshots_have_no_difference() {
        assert!(diff(&[snap("a", &[("b1", 6)]), snap("b", &[("b1", 6)])]).is_empty());
    }

    #[test]
    fn broker_missing_on_one_nameserver_is_reported() {
        let d = diff(&[snap("a", &[("b1", 6), ("b2", 6)]), snap("b", &[("b1", 6)])]);
        let text: Vec<String> = d.iter().map(|d| format!("{}: {}", d.subject, d.detail)).collect();
        assert!(text.contains(&"broker b2: missing on b (present on a)".to_owned()), "{text:?}");
        assert!(
            text.contains(&"topic T broker b2: queues missing on b (present on a)".to_owned()),
            "{text:?}"
        );
        assert!(
            text.contains(&"cluster C: brokers [b1, b2] on a, [b1] on b".to_owned()),
            "{text:?}"
        );
    }

    #[test]
    fn different_perm_is_reported() {
        let d = diff(&[snap("a", &[("b1", 6)]), snap("b", &[("b1", 4)])]);
        assert_eq!(
            d,
            vec![Difference {
                subject: "topic T broker b1".into(),
                detail: "perm 6 on a, 4 on b".into()
            }]
        );
    }
}
