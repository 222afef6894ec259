//! The broker registration agent against real nameservers (`daemon::run`) and against a fake
//! server that records what arrives.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use client::agent::{Agent, AgentConfig, HeartbeatKind, TopicTable};
use client::{BrokerIdentity, Client};
use common::{eventually, TestServer, LIMIT};
use futures::{SinkExt, StreamExt};
use remoting::body::TopicConfig;
use remoting::{RemotingCodec, RemotingCommand, ResponseCode};
use tokio::net::TcpListener;
use tokio_util::codec::Framed;

fn identity(name: &str, port: u16) -> BrokerIdentity {
    BrokerIdentity::master("DefaultCluster", name, &format!("127.0.0.1:{port}"))
}

fn table(id: &BrokerIdentity, topics: &[&str]) -> TopicTable {
    TopicTable::with_broker_topics(
        id,
        topics.iter().map(|t| TopicConfig {
            read_queue_nums: 4,
            write_queue_nums: 4,
            ..TopicConfig::named(*t)
        }),
    )
}

fn fast() -> AgentConfig {
    AgentConfig { retry_interval: Duration::from_millis(50), ..AgentConfig::default() }
}

async fn within<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(LIMIT, f).await.expect("test finished in time")
}

async fn has_route(c: &Client, topic: &str) -> Option<()> {
    c.get_route(topic).await.ok().map(drop)
}

#[tokio::test]
async fn agent_registers_with_every_nameserver_and_unregisters_on_shutdown() {
    within(async {
        let a = TestServer::start().await;
        let b = TestServer::start().await;
        let id = identity("broker-a", 10911);
        let agent = Agent::start(
            &format!("{};{}", a.addr, b.addr),
            id.clone(),
            &table(&id, &["TopicA"]),
            fast(),
        )
        .expect("agent");
        agent.wait_registered(1).await;
        for server in [&a, &b] {
            let c = Client::new(&server.addr_string()).expect("client");
            let route = c.get_route("TopicA").await.expect("route on each nameserver");
            assert_eq!(route.queue_datas[0].write_queue_nums, 4);
        }
        let results = agent.shutdown().await;
        assert_eq!(results.len(), 2);
        assert!(results.iter().all(|(_, r)| r.is_ok()), "{results:?}");
        for server in [&a, &b] {
            let c = Client::new(&server.addr_string()).expect("client");
            eventually("broker unregistered", || {
                let c = c.clone();
                async move {
                    (!c.cluster_info().await.ok()?.broker_addr_table.contains_key("broker-a"))
                        .then_some(())
                }
            })
            .await;
        }
    })
    .await;
}

#[tokio::test]
async fn agent_re_registers_after_a_nameserver_restart() {
    within(async {
        let server = TestServer::start().await;
        let id = identity("broker-r", 10921);
        // A period far beyond the test's limit: only the reconnect path can bring the route back.
        let cfg = AgentConfig { period: Duration::from_secs(600), ..fast() };
        let agent = Agent::start(&server.addr_string(), id.clone(), &table(&id, &["TopicR"]), cfg)
            .expect("agent");
        agent.wait_registered(1).await;
        let server = server.restart().await;
        // The restarted server may already know the route from its snapshot; what matters is
        // that the agent registers again on the new connection.
        eventually("a registration after the restart", || async {
            (agent.status()[0].registrations >= 2).then_some(())
        })
        .await;
        let c = Client::new(&server.addr_string()).expect("client");
        eventually("route after restart", || has_route(&c, "TopicR")).await;
        drop(agent);
    })
    .await;
}

#[tokio::test]
async fn agent_keeps_retrying_a_nameserver_that_starts_late() {
    within(async {
        let server = TestServer::start().await;
        let (addr, dir) = server.stop().await;
        let id = identity("broker-late", 10931);
        let agent = Agent::start(&addr.to_string(), id.clone(), &table(&id, &["TopicL"]), fast())
            .expect("agent");
        eventually("a failed attempt", || async { agent.status()[0].last_error.clone() }).await;
        let server = TestServer::start_on(addr, dir, |_| {}).await;
        agent.wait_registered(1).await;
        let c = Client::new(&server.addr_string()).expect("client");
        assert!(has_route(&c, "TopicL").await.is_some());
    })
    .await;
}

#[tokio::test]
async fn set_topics_registers_the_new_table_at_once() {
    within(async {
        let server = TestServer::start().await;
        let id = identity("broker-s", 10941);
        let cfg = AgentConfig { period: Duration::from_secs(600), ..fast() };
        let mut t = table(&id, &["Old"]);
        let agent = Agent::start(&server.addr_string(), id.clone(), &t, cfg).expect("agent");
        agent.wait_registered(1).await;
        t.topics.insert("New".into(), TopicConfig::named("New"));
        t.bump();
        agent.set_topics(&t);
        let c = Client::new(&server.addr_string()).expect("client");
        eventually("new topic registered", || has_route(&c, "New")).await;
    })
    .await;
}

#[tokio::test]
async fn two_hundred_agents_register_in_one_process() {
    within(async {
        let server = TestServer::start().await;
        let agents: Vec<Agent> = (0..200u16)
            .map(|i| {
                let id = identity(&format!("broker-{i}"), 20000 + i);
                Agent::start(&server.addr_string(), id.clone(), &table(&id, &["Shared"]), fast())
                    .expect("agent")
            })
            .collect();
        for a in &agents {
            a.wait_registered(1).await;
        }
        let c = Client::new(&server.addr_string()).expect("client");
        assert_eq!(c.cluster_info().await.expect("info").broker_addr_table.len(), 200);
        assert_eq!(c.get_route("Shared").await.expect("route").queue_datas.len(), 200);
    })
    .await;
}

/// What a [`recording_server`] saw: every frame, and how many connections are open.
#[derive(Clone, Default)]
struct Recorded {
    frames: Arc<Mutex<Vec<RemotingCommand>>>,
    open: Arc<AtomicUsize>,
}

/// A fake nameserver that answers every non-oneway request SUCCESS and records every frame.
async fn recording_server() -> (String, Recorded) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr").to_string();
    let seen = Recorded::default();
    let log = seen.clone();
    tokio::spawn(async move {
        while let Ok((sock, _)) = listener.accept().await {
            let log = log.clone();
            log.open.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(async move {
                let mut framed = Framed::new(sock, RemotingCodec::default());
                while let Some(Ok(req)) = framed.next().await {
                    log.frames.lock().expect("lock").push(req.clone());
                    if !req.is_oneway() {
                        let resp =
                            RemotingCommand::response(ResponseCode::Success, None).respond_to(&req);
                        if framed.send(resp).await.is_err() {
                            break;
                        }
                    }
                }
                log.open.fetch_sub(1, Ordering::SeqCst);
            });
        }
    });
    (addr, seen)
}

fn count(seen: &Recorded, code: i32) -> usize {
    seen.frames.lock().expect("lock").iter().filter(|c| c.code == code).count()
}

#[tokio::test]
async fn agent_re_registers_every_period_and_heartbeats_oneway() {
    within(async {
        let (addr, seen) = recording_server().await;
        let id = identity("broker-p", 10951);
        let cfg = AgentConfig {
            period: Duration::from_millis(100),
            heartbeat: Some(Duration::from_millis(20)),
            heartbeat_kind: HeartbeatKind::BrokerHeartbeat,
            ..fast()
        };
        let agent = Agent::start(&addr, id.clone(), &table(&id, &["T"]), cfg).expect("agent");
        agent.wait_registered(3).await;
        eventually("heartbeats", || async { (count(&seen, 904) >= 3).then_some(()) }).await;
        let frames = seen.frames.lock().expect("lock").clone();
        assert!(frames.iter().filter(|c| c.code == 904).all(RemotingCommand::is_oneway));
        let reg = frames.iter().find(|c| c.code == 103).expect("a registration");
        assert_eq!(reg.ext("brokerName"), Some("broker-p"));
        assert_eq!(reg.ext("brokerAddr"), Some("127.0.0.1:10951"));
        // Dropping the agent stops it: once its connection is closed (nothing of it can still
        // be in flight), no registration arrives for several periods.
        drop(agent);
        eventually("the agent's connection closed", || async {
            (seen.open.load(Ordering::SeqCst) == 0).then_some(())
        })
        .await;
        let after_drop = count(&seen, 103);
        tokio::time::sleep(Duration::from_millis(400)).await;
        assert_eq!(count(&seen, 103), after_drop);
    })
    .await;
}
