//! GET_ROUTEINFO_BY_TOPIC answered in place (`handler::route::write_route`) writes exactly the
//! bytes the general path (`dispatch`) does, and declines every request it cannot answer so.

mod common;

use std::sync::Arc;

use bytes::BytesMut;
use common::Broker;
use namesrv::config::Config;
use namesrv::dispatch::dispatch;
use namesrv::handler::route::write_route;
use namesrv::state::{ConnCtx, State};
use remoting::{RemotingCommand, RequestCode, SerializeType};

fn state(dir: &tempfile::TempDir, adjust: impl FnOnce(&mut Config)) -> Arc<State> {
    let mut config = Config {
        kv_config_path: dir.path().join("kvConfig.json").to_string_lossy().into_owned(),
        config_store_path: dir.path().join("namesrv.properties").to_string_lossy().into_owned(),
        ..Config::default()
    };
    adjust(&mut config);
    daemon::Daemon::build(config).expect("state").state().clone()
}

fn master() -> Broker {
    Broker::new("DefaultCluster", "broker-a", "192.168.0.47:10911", 0)
}

fn ctx() -> ConnCtx {
    ConnCtx::new(1, "127.0.0.1:1".parse().expect("addr"), Arc::default())
}

async fn register(state: &Arc<State>, broker: &Broker, topics: &[&str]) {
    let resp = dispatch(state, &ctx(), broker.register(topics)).await.expect("answered");
    assert_eq!(resp.code, 0, "{:?}", resp.remark);
}

fn route_request(ext: &[(&str, &str)], version: i32, opaque: i32) -> RemotingCommand {
    let mut cmd = common::request(RequestCode::GetRouteinfoByTopic, ext, None);
    cmd.version = version;
    cmd.opaque = opaque;
    cmd
}

async fn general(state: &Arc<State>, request: &RemotingCommand) -> BytesMut {
    let response = dispatch(state, &ctx(), request.clone()).await.expect("answered");
    let mut out = BytesMut::new();
    remoting::frame::encode_into(&response, &mut out).expect("encode");
    out
}

#[tokio::test]
async fn in_place_answers_equal_the_general_path() {
    for serialize in [SerializeType::Json, SerializeType::RocketMq] {
        let dir = tempfile::tempdir().expect("dir");
        let state = state(&dir, |c| c.serialize_type = Some(serialize));
        register(&state, &master(), &["TopicTest", "Other"]).await;
        let cases = [
            route_request(&[("topic", "TopicTest")], 479, 1),
            route_request(&[("topic", "TopicTest")], 317, -7),
            route_request(&[("topic", "Other"), ("acceptStandardJsonOnly", "TRUE")], 317, 9),
            route_request(&[("topic", "Other"), ("acceptStandardJsonOnly", "no")], 100, i32::MAX),
        ];
        for (i, request) in cases.iter().enumerate() {
            let mut fast = BytesMut::from(&b"earlier"[..]);
            assert!(
                write_route(&state, request, &mut fast, |_| {}),
                "{serialize:?} case {i} answered"
            );
            assert_eq!(&fast[..7], b"earlier", "appended");
            assert_eq!(fast[7..], general(&state, request).await[..], "{serialize:?} case {i}");
        }
        assert_eq!(state.serialize_type(), serialize);
    }
}

#[tokio::test]
async fn requests_needing_more_than_the_cached_route_are_declined() {
    let dir = tempfile::tempdir().expect("dir");
    let state = state(&dir, |_| {});
    register(&state, &master(), &["TopicTest", "Other"]).await;
    let mut oneway = route_request(&[("topic", "TopicTest")], 479, 1);
    oneway.set_oneway(true);
    let mut response = route_request(&[("topic", "TopicTest")], 479, 1);
    response.flag = 1;
    let declined = [
        route_request(&[("topic", "Nope")], 479, 1),
        route_request(&[], 479, 1),
        route_request(
            &[("topic", "TopicTest"), ("__ZONE_MODE", "true"), ("__ZONE_NAME", "z")],
            479,
            1,
        ),
        oneway,
        response,
    ];
    for request in &declined {
        let mut out = BytesMut::new();
        assert!(!write_route(&state, request, &mut out, |_| {}), "{request:?}");
        assert!(out.is_empty());
    }
    let ordered = {
        let dir2 = tempfile::tempdir().expect("dir");
        let s = state_with_order(&dir2);
        register(&s, &master(), &["TopicTest", "Other"]).await;
        let mut out = BytesMut::new();
        write_route(&s, &route_request(&[("topic", "TopicTest")], 479, 1), &mut out, |_| {})
    };
    assert!(!ordered, "orderMessageEnable adds the KV order config: general path");
}

fn state_with_order(dir: &tempfile::TempDir) -> Arc<State> {
    state(dir, |c| c.order_message_enable = true)
}
