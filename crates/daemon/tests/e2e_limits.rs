//! The resource caps over loopback, each as a hostile or broken client would meet it, and each
//! beside a well-behaved client that it must leave alone: the connection cap, the frame
//! deadline (paused time), the frame length, the partial-frame budget (waited for, not
//! refused), a header of 100,000
//! ext fields, a zlib bomb, too many topics in a registration, a too-long KV value, and
//! UPDATE_NAMESRV_CONFIG values that would break the server. (Unread answers: `server.rs`.)

mod common;

use std::time::Duration;

use common::{body_text, request, Broker, Conn, TestServer};
use namesrv::limits::Cap;
use remoting::body::{RegisterBrokerBody, TopicConfig};
use remoting::{RemotingCommand, RequestCode};
use tokio::time::sleep;

/// A request every server answers at once.
fn ping() -> RemotingCommand {
    request(RequestCode::GetBrokerClusterInfo, &[], None)
}

/// Polls (bounded) until `done` holds.
async fn until(what: &str, mut done: impl FnMut() -> bool) {
    for _ in 0..1000 {
        if done() {
            return;
        }
        sleep(Duration::from_millis(10)).await;
    }
    panic!("timed out waiting for {what}");
}

#[tokio::test]
async fn connections_beyond_the_cap_are_closed_at_once_and_the_others_served() {
    let server = TestServer::start_with_http(|c| c.server_max_connections = 3).await;
    let mut open = Vec::new();
    for _ in 0..3 {
        let mut conn = server.connect().await;
        assert_eq!(conn.call(ping()).await.code, 0, "admitted and answered");
        open.push(conn);
    }
    let mut refused = server.connect_raw().await;
    assert!(refused.is_closed_by_server().await, "the fourth is closed at once");
    assert_eq!(server.state.limits.trigger_count(Cap::Connections), 1);
    for conn in &mut open {
        assert_eq!(conn.call(ping()).await.code, 0, "the admitted ones are unaffected");
    }
    // One leaves: a place opens again (once the server has seen it go).
    drop(open.pop());
    until("the closed connection to free its place", || server.state.limits.connections() < 3)
        .await;
    let mut again = server.connect().await;
    assert_eq!(again.call(ping()).await.code, 0);
    // Counted in the metrics, by kind.
    let scrape = server.get("/metrics").await.body;
    assert!(
        scrape.contains("rocketmq_namesrv_resource_caps_triggered_total{kind=\"connections\"} 1"),
        "{scrape}"
    );
    assert!(
        scrape.contains("rocketmq_namesrv_resource_caps_triggered_total{kind=\"frame_timeout\"} 0")
    );
}

// Paused time: the deadline passes without waiting for it.
#[tokio::test(start_paused = true)]
async fn a_frame_that_does_not_arrive_in_time_closes_its_connection_only() {
    let server = TestServer::start_with(|c| c.server_frame_timeout_seconds = 10).await;
    let mut polite = server.connect().await;
    assert_eq!(polite.call(ping()).await.code, 0);

    // A slow sender: a frame begun, then a byte every 4 s — never idle, never complete.
    let mut slow = server.connect_raw().await;
    let frame = remoting::frame::encode_to_bytes(&ping()).expect("encode");
    slow.write(&frame[..6]).await;
    let started = tokio::time::Instant::now();
    for byte in &frame[6..8] {
        sleep(Duration::from_secs(4)).await;
        slow.write(&[*byte]).await;
    }
    assert!(slow.is_closed_by_server().await, "closed by the frame deadline");
    let closed_after = started.elapsed();
    assert!(
        closed_after >= Duration::from_secs(10) && closed_after < Duration::from_secs(12),
        "10 s after its first bytes, at {closed_after:?}"
    );
    assert_eq!(server.state.limits.trigger_count(Cap::FrameTimeout), 1);
    // The polite client, quiet all along, is still served; so is a complete frame sent slowly
    // within the deadline.
    assert_eq!(polite.call(ping()).await.code, 0);
    let mut patient = server.connect_raw().await;
    for piece in frame.chunks(frame.len() / 4 + 1) {
        patient.write(piece).await;
        sleep(Duration::from_secs(2)).await;
    }
    assert!(patient.read_frame().await.is_some(), "answered");
    assert_eq!(server.state.limits.trigger_count(Cap::FrameTimeout), 1);
}

#[tokio::test]
async fn a_frame_longer_than_frame_max_length_closes_its_connection_before_it_arrives() {
    let server = TestServer::start_with(|c| c.frame_max_length = 1 << 20).await;
    let mut huge = server.connect_raw().await;
    huge.write(&((1u32 << 20) - 3).to_be_bytes()).await; // one byte over, prefix included
    assert!(huge.is_closed_by_server().await);
    assert_eq!(server.state.limits.trigger_count(Cap::FrameLength), 1);
    let mut big_but_allowed = server.connect().await;
    let body = vec![b'x'; (1 << 20) - 1024];
    let answer = big_but_allowed
        .call(request(RequestCode::GetRouteinfoByTopic, &[("topic", "T")], Some(&body)))
        .await;
    assert_eq!(answer.code, 17, "a frame under the length is read and answered");
}

/// A GET_ROUTEINFO_BY_TOPIC frame with a `body_len`-byte body (the body is ignored).
fn big_frame(body_len: usize) -> bytes::Bytes {
    let body = vec![b'x'; body_len];
    remoting::frame::encode_to_bytes(&request(
        RequestCode::GetRouteinfoByTopic,
        &[("topic", "T")],
        Some(&body),
    ))
    .expect("encode")
}

const MIB: usize = 1 << 20;

/// A server with this `frameMaxLength` and `serverMaxPendingFrameBytes`.
async fn with_budget(frame_max: usize, budget: usize) -> TestServer {
    TestServer::start_with(|c| {
        c.frame_max_length = frame_max as i32;
        c.server_max_pending_frame_bytes = budget as i64;
    })
    .await
}

#[tokio::test]
async fn a_large_frame_holds_what_arrived_not_the_length_it_announces() {
    let server = with_budget(2 * MIB, 2 * MIB).await;
    let budget = &server.state.limits.pending_frame_bytes;
    let used = || budget.used() as usize;
    // 100 KB of a 2.08 MB frame: its buffer, at most twice that, is held; not its length.
    let frame = big_frame(2_080_000);
    let payload = frame.len() - 4;
    let mut a = server.connect_raw().await;
    a.write(&frame[..100_000]).await;
    until("A's first bytes to be held", || used() > 0).await;
    assert!(used() <= 2 * 100_000 + 64 * 1024, "{} held for 100 KB", used());
    // Nearly all of it: the buffer has grown to the frame's length.
    a.write(&frame[100_000..2_000_000]).await;
    until("A's buffer to be the frame's length", || used() == payload).await;
    // A second one does not fit beside it: it waits for room, holding nothing and reading no
    // more (#25: a body over the budget must wait, not be refused).
    let mut b = server.connect_raw().await;
    b.write(&frame[..100_000]).await;
    until("B to wait for room", || budget.waiters() == 1).await;
    assert_eq!(used(), payload, "B holds nothing while it waits");
    assert_eq!(server.state.limits.trigger_count(Cap::PendingFrameBytes), 1);
    a.write(&frame[2_000_000..]).await;
    assert_eq!(common::decode(&a.read_frame().await.expect("A answered")).code, 17);
    // A's room given back: B takes its turn, reads on, and is answered.
    until("B to take the room", || budget.waiters() == 0).await;
    b.write(&frame[100_000..]).await;
    assert_eq!(common::decode(&b.read_frame().await.expect("B answered")).code, 17);
    until("the budget to be given back", || used() == 0).await;
}

/// The partial-frame budget never takes a sender's word for its frame's length: 32 senders
/// that announce 16 MiB frames, send 20 KB and stall hold their buffers (under 128 KiB each),
/// not 32 × 16 MiB, and a broker's 8 MB registration-sized frame goes through beside them. (When
/// the announced length was taken, the first stalled sender held the whole budget and the
/// others, and the 8 MB frame, waited for its frame deadline.)
#[tokio::test]
async fn senders_that_announce_long_frames_and_stall_hold_only_what_they_sent() {
    let server = with_budget(16 * MIB, 16 * MIB).await;
    let budget = &server.state.limits.pending_frame_bytes;
    let mut announced = (16 * MIB as u32 - 4).to_be_bytes().to_vec();
    announced.extend_from_slice(&[0u8; 20_000]);
    let mut stalled = Vec::new();
    for _ in 0..32 {
        let mut c = server.connect_raw().await;
        c.write(&announced).await;
        stalled.push(c);
    }
    until("the stalled senders' buffers to be held", || budget.used() >= 32 * 32 * 1024).await;
    sleep(Duration::from_millis(100)).await;
    let held = budget.used() as usize;
    assert!(held <= 32 * 128 * 1024, "{held} bytes held for 32 × 20 KB sent");
    assert_eq!(budget.waiters(), 0, "nobody waits for room");
    let frame = big_frame(8_000_000);
    let mut honest = server.connect_raw().await;
    honest.write(&frame).await;
    let answer = tokio::time::timeout(Duration::from_secs(20), honest.read_frame()).await;
    assert_eq!(common::decode(&answer.expect("in time").expect("answered")).code, 17);
    drop(stalled);
    until("the budget to be given back", || budget.used() == 0).await;
}

#[tokio::test]
async fn large_partial_frames_leave_a_quarter_of_the_budget_to_ordinary_frames() {
    let server = with_budget(2 * MIB, 4 * MIB).await;
    let budget = &server.state.limits.pending_frame_bytes;
    let used = || budget.used() as usize;
    // A holds a 1.9 MB frame. B's would take the large frames to 3.8 MB of the 4 MiB: over the
    // three quarters they may hold, so B, under way, takes the budget's overdraft (one frame
    // at a time may pass the limit, so that frames under way never wait on one another).
    let big = big_frame(1_900_000);
    let mut a = server.connect_raw().await;
    a.write(&big[..1_800_000]).await;
    until("A's frame to be held", || used() >= big.len() - 4).await;
    let mut b = server.connect_raw().await;
    b.write(&big[..1_800_000]).await;
    until("B's frame to be held on the overdraft", || used() >= 2 * (big.len() - 4)).await;
    assert!(budget.overdraft_in_use());
    // An ordinary frame (under 1 MiB) still gets its quarter, and is answered.
    let small = big_frame(900_000);
    let mut c = server.connect_raw().await;
    c.write(&small).await;
    assert_eq!(common::decode(&c.read_frame().await.expect("C answered")).code, 17);
    // A third large frame under way waits: the overdraft is B's until B is answered.
    let mut d = server.connect_raw().await;
    d.write(&big[..1_800_000]).await;
    until("D to wait for room", || budget.waiters() == 1).await;
    b.write(&big[1_800_000..]).await;
    assert_eq!(common::decode(&b.read_frame().await.expect("B answered")).code, 17);
    until("D to go on", || budget.waiters() == 0).await;
    for conn in [&mut a, &mut d] {
        conn.write(&big[1_800_000..]).await;
        assert_eq!(common::decode(&conn.read_frame().await.expect("answered")).code, 17);
    }
    until("the budget to be given back", || used() == 0 && !budget.overdraft_in_use()).await;
}

/// While the registration lane has its mark of bodies queued, a frame announcing more than a
/// megabyte from a connection whose last registration went to the lane waits to begin, holding
/// nothing (its bytes wait in the sender's socket); smaller frames, other clients and large
/// frames of connections whose registrations are answered in place are served meanwhile; it is
/// read and answered once the queue drains. A sender that is let on and stalls does not keep
/// the gate shut.
#[tokio::test]
async fn large_frames_wait_to_begin_while_the_registration_lane_has_its_mark_queued() {
    let server = TestServer::start().await;
    let (budget, gate) = (&server.state.limits.pending_frame_bytes, &server.state.limits.lane_gate);
    let broker = Broker::new("C", "a", "127.0.0.1:10911", 0);
    let topics: Vec<String> = (0..2_000).map(|i| format!("lane-gate-topic-{i}")).collect();
    let topics: Vec<&str> = topics.iter().map(String::as_str).collect();
    let registration = broker.register(&topics);
    assert!(registration.body_bytes().len() > 64 * 1024, "a body for the lane");
    let mut a = server.connect_raw().await;
    assert_eq!(common::decode(&a.call(registration).await).code, 0, "registered on the lane");

    let queued = gate.enter(namesrv::limits::LANE_QUEUE_MARK);
    let big = big_frame(2_000_000);
    // A connection that never went to the lane is not held back by it.
    let mut fresh = server.connect_raw().await;
    fresh.write(&big).await;
    assert_eq!(common::decode(&fresh.read_frame().await.expect("answered")).code, 17);
    a.write(&big[..300_000]).await;
    until("A to wait at the gate", || {
        server.state.limits.trigger_count(Cap::PendingFrameBytes) == 1
    })
    .await;
    sleep(Duration::from_millis(300)).await;
    assert_eq!(budget.used(), 0, "the waiting frame holds nothing");
    assert_eq!(gate.waiting(), 1, "counted in frames_waiting_for_lane");
    let small = big_frame(900_000);
    let mut c = server.connect_raw().await;
    c.write(&small).await;
    assert_eq!(common::decode(&c.read_frame().await.expect("C answered")).code, 17);
    let mut polite = server.connect().await;
    assert_eq!(polite.call(ping()).await.code, 0);

    drop(queued);
    a.write(&big[300_000..]).await;
    assert_eq!(common::decode(&a.read_frame().await.expect("A answered")).code, 17);
    assert_eq!(gate.waiting(), 0);

    // Just under the mark: one large frame is let on; it stalls, and counts toward the mark
    // for a moment only (A's next is answered long before the stalled frame's deadline).
    let queued = gate.enter(namesrv::limits::LANE_QUEUE_MARK - 1);
    let mut stalled = server.connect_raw().await;
    let other = Broker::new("C", "b", "127.0.0.1:10912", 0);
    assert_eq!(common::decode(&stalled.call(other.register(&topics)).await).code, 0);
    stalled.write(&big[..300_000]).await;
    until("the stalled frame to be let on", || budget.used() > 0).await;
    sleep(transport::gate::LET_ON_WINDOW).await;
    a.write(&big).await;
    assert_eq!(common::decode(&a.read_frame().await.expect("A answered again")).code, 17);
    drop(queued);
}

#[tokio::test]
async fn partial_frames_share_one_budget_and_those_passing_it_wait_their_turn() {
    let server = with_budget(MIB, MIB).await;
    let budget = &server.state.limits.pending_frame_bytes;
    let used = || budget.used() as usize;

    // A holds its 1.03 MB frame once 1 MB of it arrived.
    let frame = big_frame(1_030_000);
    let mut a = server.connect_raw().await;
    a.write(&frame[..1_000_000]).await;
    until("A's frame to be held", || used() >= frame.len() - 4).await;

    // B and C would each take the total over the 1 MiB budget: both wait; A is unaffected.
    let (mut b, mut c) = (server.connect_raw().await, server.connect_raw().await);
    b.write(&frame[..100_000]).await;
    c.write(&frame[..100_000]).await;
    until("B and C to wait for room", || budget.waiters() == 2).await;
    assert_eq!(used(), frame.len() - 4, "the waiting hold nothing");
    assert_eq!(server.state.limits.trigger_count(Cap::PendingFrameBytes), 2);

    // A polite client is served meanwhile; A completes and is answered.
    let mut polite = server.connect().await;
    assert_eq!(polite.call(ping()).await.code, 0);
    a.write(&frame[1_000_000..]).await;
    assert_eq!(common::decode(&a.read_frame().await.expect("A answered")).code, 17);
    // Then B and C, each in its turn (past the budget by one frame at most, on its overdraft).
    let rest = &frame[100_000..];
    let (b_answer, c_answer) = tokio::join!(
        async {
            b.write(rest).await;
            b.read_frame().await
        },
        async {
            c.write(rest).await;
            c.read_frame().await
        },
    );
    for answer in [b_answer, c_answer] {
        assert_eq!(common::decode(&answer.expect("answered")).code, 17);
    }
    until("the budget to be given back", || used() == 0 && budget.waiters() == 0).await;
}

// Paused time: the deadlines pass without waiting for them.
#[tokio::test(start_paused = true)]
async fn a_frame_waiting_for_room_is_not_timed_until_it_is_let_on() {
    let server = TestServer::start_with(|c| {
        c.server_frame_timeout_seconds = 10;
        c.frame_max_length = 2 * MIB as i32;
        c.server_max_pending_frame_bytes = 2 * MIB as i64;
    })
    .await;
    let budget = &server.state.limits.pending_frame_bytes;
    let frame = big_frame(2_080_000);
    // A takes the room at 0 s and stalls: its frame deadline closes it at 10 s.
    let mut a = server.connect_raw().await;
    a.write(&frame[..2_000_000]).await;
    until("A's frame to be held", || budget.used() as usize == frame.len() - 4).await;
    sleep(Duration::from_secs(5)).await;
    // B begins at 5 s and waits until A's room is given back at 10 s.
    let mut b = server.connect_raw().await;
    b.write(&frame[..100_000]).await;
    until("B to wait for room", || budget.waiters() == 1).await;
    until("A to be closed and B let on", || budget.waiters() == 0).await;
    assert_eq!(server.state.limits.trigger_count(Cap::FrameTimeout), 1, "A, by its deadline");
    // 6 s later B is 11 s past its first bytes but 6 s past being let on: within its deadline.
    sleep(Duration::from_secs(6)).await;
    b.write(&frame[100_000..]).await;
    assert_eq!(common::decode(&b.read_frame().await.expect("B answered")).code, 17);
    assert_eq!(server.state.limits.trigger_count(Cap::FrameTimeout), 1);
}

/// Senders whose frames are under way and wait for room keep their frame deadlines: stalled
/// senders that filled the budget are all closed when their deadlines pass, together, and the
/// budget is whole again (had their deadlines restarted on each wait, they would have been let
/// on and timed out one after another).
#[tokio::test(start_paused = true)]
async fn stalled_frames_waiting_under_way_reach_their_deadlines_together() {
    let server = TestServer::start_with(|c| {
        c.server_frame_timeout_seconds = 10;
        c.frame_max_length = MIB as i32;
        c.server_max_pending_frame_bytes = MIB as i64;
    })
    .await;
    let budget = &server.state.limits.pending_frame_bytes;
    let mut stalled = Vec::new();
    // Three frames under way, 30 KB each: all fit.
    for _ in 0..3 {
        let mut c = server.connect_raw().await;
        c.write(&(MIB as u32 - 4).to_be_bytes()).await;
        c.write(&[0u8; 30_000]).await;
        stalled.push(c);
    }
    until("the three to hold their buffers", || budget.used() >= 3 * 30_000).await;
    assert_eq!(budget.waiters(), 0);
    // 70 KB more each: their buffers would pass the budget, so they wait for room (one on
    // the overdraft goes on), holding what they hold; then all stall.
    for c in &mut stalled {
        c.write(&[0u8; 70_000]).await;
    }
    until("frames under way to wait for room", || {
        budget.waiters() >= 1 && budget.overdraft_in_use()
    })
    .await;
    sleep(Duration::from_secs(11)).await;
    assert_eq!(server.state.limits.trigger_count(Cap::FrameTimeout), 3, "all three at 10 s");
    until("the budget to be whole again", || budget.used() == 0 && budget.waiters() == 0).await;
    let mut polite = server.connect().await;
    assert_eq!(polite.call(ping()).await.code, 0);
}

#[tokio::test]
async fn a_header_of_100000_ext_fields_closes_its_connection_only() {
    let server = TestServer::start().await;
    let mut header = String::from(
        r#"{"code":105,"flag":0,"language":"JAVA","opaque":1,"version":479,"extFields":{"#,
    );
    for i in 0..100_000 {
        if i > 0 {
            header.push(',');
        }
        header.push_str(&format!(r#""k{i}":"v""#));
    }
    header.push_str("}}");
    let mut hostile = server.connect_raw().await;
    hostile.write(&common::json_frame(&header)).await;
    assert!(hostile.is_closed_by_server().await, "refused as malformed");
    let mut polite = server.connect().await;
    assert_eq!(polite.call(ping()).await.code, 0);
}

fn compressed(mut cmd: RemotingCommand) -> RemotingCommand {
    if let Some(ext) = cmd.ext_fields.as_mut() {
        ext.insert("compressed", "true");
    }
    cmd
}

fn broker() -> Broker {
    Broker::new("C", "broker-a", "10.0.0.1:10911", 0)
}

/// A compressed registration whose topic table inflates to about `bytes` (one long line per
/// topic: highly compressible).
fn inflating_registration(topics: usize, line: usize) -> RemotingCommand {
    let mut body = RegisterBrokerBody::default();
    for i in 0..topics {
        let name = format!("{i:0>line$}");
        std::sync::Arc::make_mut(&mut body.topic_config_serialize_wrapper.topic_config_table)
            .insert(name.clone(), TopicConfig::named(name));
    }
    compressed(broker().register_body(body.encode_compressed(479)))
}

#[tokio::test]
async fn a_zlib_bomb_is_refused_with_a_remark_and_the_routes_stay() {
    let server = TestServer::start_with(|c| c.register_body_max_inflated_bytes = 1 << 20).await;
    let mut conn = server.connect().await;
    conn.register(&broker(), &["Before", "Kept"]).await;
    // 200 topics of 10,000-character names: 2 MB inflated, a few KB on the wire.
    let bomb = inflating_registration(200, 10_000);
    assert!(bomb.body_bytes().len() < 64 * 1024);
    let answer = conn.call(bomb).await;
    assert_eq!(answer.code, 1);
    let remark = answer.remark.unwrap_or_default();
    assert!(remark.contains("registerBodyMaxInflatedBytes"), "{remark}");
    assert_eq!(server.state.limits.trigger_count(Cap::InflatedBody), 1);
    assert!(conn.route("Before").await.is_some(), "the previous table stays");
    assert!(conn.route(&format!("{:0>10000}", 0)).await.is_none());
    // Under the bound, the same shape registers.
    assert_eq!(conn.call(inflating_registration(50, 10_000)).await.code, 0);
}

#[tokio::test]
async fn a_registration_with_more_topics_than_allowed_is_refused_and_the_routes_stay() {
    let server = TestServer::start_with(|c| c.register_broker_max_topics = 100).await;
    let mut conn = server.connect().await;
    conn.register(&broker(), &["Before", "Kept"]).await;
    let names: Vec<String> = (0..101).map(|i| format!("Topic{i}")).collect();
    let topics: Vec<&str> = names.iter().map(String::as_str).collect();
    for cmd in [broker().register(&topics), inflating_registration(101, 5)] {
        let answer = conn.call(cmd).await;
        assert_eq!(answer.code, 1);
        let remark = answer.remark.unwrap_or_default();
        assert!(
            remark.contains("101 topics exceed the limit of 100 (registerBrokerMaxTopics)"),
            "{remark}"
        );
    }
    assert_eq!(server.state.limits.trigger_count(Cap::TopicsPerBroker), 2);
    assert!(conn.route("Before").await.is_some(), "the previous table stays");
    assert!(conn.route("Topic0").await.is_none(), "nothing of the refused one applied");
    conn.register(&broker(), &topics[..100]).await;
    assert!(conn.route("Topic99").await.is_some(), "100 topics are allowed");
}

#[tokio::test]
async fn a_kv_value_longer_than_allowed_is_refused_and_nothing_stored() {
    let server = TestServer::start_with(|c| c.kv_config_max_value_bytes = 1000).await;
    let mut conn = server.connect().await;
    let put = |value: &str| {
        request(
            RequestCode::PutKvConfig,
            &[("namespace", "NS"), ("key", "k"), ("value", value)],
            None,
        )
    };
    let answer = conn.call(put(&"x".repeat(1001))).await;
    assert_eq!(answer.code, 1);
    let remark = answer.remark.unwrap_or_default();
    assert!(remark.contains("1001 bytes exceeds kvConfigMaxValueBytes (1000)"), "{remark}");
    assert_eq!(server.state.limits.trigger_count(Cap::KvValueBytes), 1);
    let get = request(RequestCode::GetKvConfig, &[("namespace", "NS"), ("key", "k")], None);
    assert_eq!(conn.call(get.clone()).await.code, 22, "not stored");
    assert_eq!(conn.call(put(&"x".repeat(1000))).await.code, 0);
    assert_eq!(conn.call(get).await.ext("value").map(str::len), Some(1000));
}

#[tokio::test]
async fn config_updates_that_would_break_the_server_are_refused_over_the_wire() {
    let server = TestServer::start().await;
    let mut conn = server.connect().await;
    let get = || request(RequestCode::GetNamesrvConfig, &[], None);
    let before = body_text(&conn.call(get()).await);
    for body in ["listenPort=1\n", "serverChannelMaxIdleTimeSeconds=1\nenableTopicList=false\n"] {
        let answer =
            conn.call(request(RequestCode::UpdateNamesrvConfig, &[], Some(body.as_bytes()))).await;
        assert_eq!(answer.code, 1, "{body}");
        let key = body.split('=').next().unwrap_or_default();
        assert!(answer.remark.unwrap_or_default().contains(key), "{body}");
    }
    assert_eq!(body_text(&conn.call(get()).await), before, "nothing applied");
    let _ = Conn::connect(server.addr).await; // the server still accepts
}
