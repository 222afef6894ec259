//! `Routes`: the encoded-body cache (reuse and invalidation) and readers during large
//! registrations.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use bytes::Bytes;
use remoting::body::{from_json, QueueData, TopicConfig, TopicRouteData};

use super::*;
use crate::route::{RouteForm, Routes};

fn register_on(routes: &Routes, broker: &Broker, topics: &[&str]) {
    routes
        .write(|t| t.register_owned(broker.request(topics), NOW, false))
        .expect("registration accepted");
}

fn body(routes: &Routes, topic: &str) -> Bytes {
    routes.snapshot().route_body(topic, RouteForm::Legacy, false).expect("route exists")
}

fn parse(body: &Bytes) -> TopicRouteData {
    from_json(body).expect("a route body parses")
}

#[test]
fn an_unchanged_reregistration_keeps_the_cached_body() {
    let routes = Routes::new();
    register_on(&routes, &Broker::master(), &["T"]);
    let first = body(&routes, "T");
    assert_eq!(first.as_ptr(), body(&routes, "T").as_ptr(), "second read is served from the cache");
    register_on(&routes, &Broker::master(), &["T"]);
    assert!(routes.snapshot().heartbeat(CLUSTER, MASTER_ADDR, NOW + 1));
    assert_eq!(first.as_ptr(), body(&routes, "T").as_ptr());
    assert_eq!(parse(&first), routes.snapshot().pickup_route("T", false).unwrap());
}

#[test]
fn topics_with_the_same_route_share_one_body_until_it_is_no_longer_used() {
    let routes = Routes::new();
    register_on(&routes, &Broker::master(), &["T1", "T2"]);
    let (t1, t2) = (body(&routes, "T1"), body(&routes, "T2"));
    assert_eq!(t1.as_ptr(), t2.as_ptr(), "one copy for both topics");
    let mut other = Broker::master().name("broker-b").addr("127.0.0.1:50911");
    other.cluster = CLUSTER.to_owned();
    register_on(&routes, &other, &["T2"]);
    let t2_now = body(&routes, "T2");
    assert_ne!(t2_now.as_ptr(), t1.as_ptr(), "T2's route changed: its own body");
    assert_eq!(parse(&t2_now).queue_datas.len(), 2);
    // T1's body and T2's new one are in use; T2's old one (still the same bytes as T1's) too.
    assert_eq!(routes.snapshot().prune_route_bodies(), 2);
    drop((t1, t2, t2_now));
    routes.write(|t| t.delete_topic("T1", None));
    routes.write(|t| t.delete_topic("T2", None));
    // The replaced snapshots still hold theirs until the reaper frees them (soon after).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while routes.snapshot().prune_route_bodies() != 0 {
        assert!(std::time::Instant::now() < deadline, "no topic holds a body any more");
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}

#[test]
fn a_change_to_another_topic_keeps_the_cached_body() {
    let routes = Routes::new();
    register_on(&routes, &Broker::master(), &["T", "U"]);
    let first = body(&routes, "T");
    routes.write(|t| t.wipe_write_perm("nobody"));
    routes.write(|t| t.delete_topic("U", None));
    routes.write(|t| {
        t.register_topic(
            "V",
            vec![QueueData {
                broker_name: BROKER.into(),
                perm: 6,
                read_queue_nums: 1,
                topic_sys_flag: 0,
                write_queue_nums: 1,
            }],
        )
    });
    assert_eq!(first.as_ptr(), body(&routes, "T").as_ptr());
}

#[test]
fn a_perm_wipe_changes_the_body() {
    let routes = Routes::new();
    register_on(&routes, &Broker::master(), &["T"]);
    let before = body(&routes, "T");
    assert_eq!(routes.write(|t| t.wipe_write_perm(BROKER)), 2);
    let after = body(&routes, "T");
    assert_ne!(before, after);
    assert_eq!(parse(&after).queue_datas[0].perm, 4);
    assert_eq!(routes.write(|t| t.add_write_perm(BROKER)), 2);
    assert_eq!(parse(&body(&routes, "T")).queue_datas[0].perm, 6);
}

#[test]
fn a_group_change_changes_the_body() {
    let routes = Routes::new();
    register_on(&routes, &Broker::master(), &["T"]);
    register_on(&routes, &Broker::slave(), &["T"]);
    let both = body(&routes, "T");
    assert_eq!(parse(&both).broker_datas[0].broker_addrs.0.len(), 2);
    routes.write(|t| t.apply_unregister_batch(&[Broker::slave().unregister()]));
    let master_only = body(&routes, "T");
    assert_eq!(parse(&master_only).broker_datas[0].broker_addrs.0.len(), 1);

    routes.write(|t| t.apply_unregister_batch(&[Broker::master().unregister()]));
    assert_eq!(routes.snapshot().route_body("T", RouteForm::Legacy, false), None);
}

#[test]
fn forms_and_acting_master_flag_are_cached_apart() {
    let routes = Routes::new();
    register_on(&routes, &Broker::slave(), &["T"]);
    let legacy = body(&routes, "T");
    let standard = routes.snapshot().route_body("T", RouteForm::Standard, false).unwrap();
    let acting = routes.snapshot().route_body("T", RouteForm::Legacy, true).unwrap();
    assert!(legacy.windows(4).any(|w| w == b"{1:\""), "legacy keys are unquoted");
    assert!(standard.windows(5).any(|w| w == b"{\"1\":"), "standard keys are quoted");
    assert_eq!(
        parse(&acting).broker_datas[0].broker_addrs.0.keys().copied().collect::<Vec<_>>(),
        [0]
    );
    assert_eq!(
        parse(&legacy).broker_datas[0].broker_addrs.0.keys().copied().collect::<Vec<_>>(),
        [1]
    );
    assert_eq!(
        standard.as_ptr(),
        routes.snapshot().route_body("T", RouteForm::Standard, false).unwrap().as_ptr()
    );
    assert_eq!(
        acting.as_ptr(),
        routes.snapshot().route_body("T", RouteForm::Legacy, true).unwrap().as_ptr()
    );
}

/// The topics on one queue list share its bodies, but a static topic's body has its mapping,
/// and an acting-master read of a `rmq_sys_SYNC_BROKER_MEMBER_` topic is not rewritten: those
/// bodies are the topic's own, cached with its entry (read first or second, whichever).
#[test]
fn a_body_with_something_of_the_topics_own_is_not_shared_with_its_list() {
    let routes = Routes::new();
    let sync = "rmq_sys_SYNC_BROKER_MEMBER_broker-a";
    let slave = Broker::slave();
    let info = remoting::body::TopicQueueMappingInfo {
        bname: Some(BROKER.into()),
        topic: Some("Static".into()),
        total_queues: 8,
        ..Default::default()
    };
    let mut req = slave.request(&["Plain", "Static", sync]);
    req.topic_config.topic_queue_mapping_info_map.insert("Static".into(), info);
    routes.write(|t| t.register_owned(req, NOW, false)).expect("registered");
    let read = |topic: &str| routes.snapshot().route_body(topic, RouteForm::Legacy, true).unwrap();
    let ids = |body: &Bytes| -> Vec<i64> {
        parse(body).broker_datas[0].broker_addrs.0.keys().copied().collect()
    };
    let (plain, stat, synced) = (read("Plain"), read("Static"), read(sync));
    let (stat_first, plain_after) = (read("Static"), read("Plain"));
    assert_eq!(ids(&plain), vec![0], "a slave-only group acts as master");
    assert_eq!(ids(&synced), vec![1], "but not for a sync topic");
    assert!(parse(&plain).topic_queue_mapping_by_broker.is_none());
    assert!(parse(&stat).topic_queue_mapping_by_broker.is_some(), "the static topic's mapping");
    assert_eq!(plain.as_ptr(), plain_after.as_ptr(), "the list's body, cached");
    assert_eq!(stat.as_ptr(), stat_first.as_ptr(), "the topic's own, cached");
    assert_eq!(synced.as_ptr(), read(sync).as_ptr());
    let without = routes.snapshot().route_body(sync, RouteForm::Legacy, false).unwrap();
    assert_eq!(
        without.as_ptr(),
        routes.snapshot().route_body("Plain", RouteForm::Legacy, false).unwrap().as_ptr(),
        "without acting master a sync topic's body is the list's"
    );
}

/// 50k topics, all with `queues` read/write queues, DataVersion counter `counter`.
fn bulk(names: &[String], queues: i32, counter: i64) -> RegisterBroker {
    let mut broker = Broker::master();
    broker.dv.counter = counter;
    broker.request_with(
        names
            .iter()
            .map(|n| TopicConfig {
                read_queue_nums: queues,
                write_queue_nums: queues,
                ..topic_config(n, 6)
            })
            .collect(),
    )
}

#[test]
fn readers_see_every_topic_before_or_after_50k_topic_registrations() {
    const TOPICS: usize = 50_000;
    const READERS: u64 = 3;
    let names: Arc<Vec<String>> = Arc::new((0..TOPICS).map(|i| format!("topic-{i:05}")).collect());
    let routes = Arc::new(Routes::new());
    routes.write(|t| t.register_owned(bulk(&names, 8, 1), NOW, false)).unwrap();

    let writing = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicBool::new(false));
    let reads_while_writing = Arc::new(AtomicU64::new(0));
    let deadline = Instant::now() + Duration::from_secs(120);

    let readers: Vec<_> = (0..READERS)
        .map(|seed| {
            let (names, routes) = (names.clone(), routes.clone());
            let (writing, done, during) =
                (writing.clone(), done.clone(), reads_while_writing.clone());
            thread::spawn(move || {
                let mut x = 0x9E37_79B9_7F4A_7C15_u64 ^ (seed + 1);
                let mut after_done = 0;
                while after_done < 2_000 {
                    assert!(Instant::now() < deadline, "reader ran past its deadline");
                    let finished = done.load(Ordering::Acquire);
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let topic = &names[(x % TOPICS as u64) as usize];
                    let form = if x & 1 == 0 { RouteForm::Legacy } else { RouteForm::Standard };
                    let route: TopicRouteData =
                        from_json(&routes.snapshot().route_body(topic, form, false).unwrap())
                            .unwrap();
                    assert_eq!(route.queue_datas.len(), 1);
                    let q = &route.queue_datas[0];
                    assert_eq!(
                        q.read_queue_nums, q.write_queue_nums,
                        "{topic}: a queue is never half-updated"
                    );
                    assert!(matches!(q.read_queue_nums, 4 | 8), "{topic}: unexpected state {q:?}");
                    if finished {
                        assert_eq!(
                            q.read_queue_nums, 4,
                            "{topic}: a read after the last write sees it"
                        );
                        after_done += 1;
                    } else if writing.load(Ordering::Acquire) {
                        during.fetch_add(1, Ordering::Relaxed);
                    }
                    if x & 63 == 0 {
                        // One snapshot is one state for all topics.
                        let snap = routes.snapshot();
                        let states: Vec<_> = [0, TOPICS / 2, TOPICS - 1]
                            .iter()
                            .map(|&i| {
                                snap.pickup_route(&names[i], false).unwrap().queue_datas[0]
                                    .read_queue_nums
                            })
                            .collect();
                        assert!(
                            states.iter().all(|s| *s == states[0]),
                            "snapshot mixes states: {states:?}"
                        );
                    }
                }
            })
        })
        .collect();

    writing.store(true, Ordering::Release);
    for (queues, counter) in [(4, 2), (8, 3), (4, 4)] {
        routes.write(|t| t.register_owned(bulk(&names, queues, counter), NOW, false)).unwrap();
    }
    writing.store(false, Ordering::Release);
    done.store(true, Ordering::Release);
    for reader in readers {
        reader.join().expect("reader assertions hold");
    }
    assert!(
        reads_while_writing.load(Ordering::Relaxed) > 0,
        "readers made progress during the registrations"
    );
    assert_eq!(routes.snapshot().topic_count(), TOPICS);
}
