//! Wire input bounded where it is kept or logged, over TCP (#21, finding 7): a broker address
//! with a newline and terminal escapes forges no log line and reaches the log escaped; a 10 MB
//! KV key makes no 10 MB line; 6,000 registrations fenced by a lower stateVersion, each with a
//! new 10 KB address, leave no version record and keep the event ring small. (A binary of its
//! own: it reads the log.)

mod common;

use common::captured::Captured;
use common::{data_version, register_body, request, Broker, TestServer};
use remoting::RequestCode;

/// The longest log line a request may cause: the clipped fields and the line's own text.
const MAX_LINE: usize = 4096;

/// The process's log (global: the KV store logs from the blocking pool's threads).
fn log() -> &'static Captured {
    static LOG: std::sync::OnceLock<Captured> = std::sync::OnceLock::new();
    LOG.get_or_init(|| {
        let captured = Captured::default();
        tracing::subscriber::set_global_default(captured.subscriber("info")).expect("global");
        captured
    })
}

#[tokio::test]
async fn forged_lines_escapes_and_huge_keys_do_not_reach_the_log() {
    let captured = log();
    let server = TestServer::start_with(|c| c.kv_config_max_value_bytes = 64).await;
    let mut conn = server.connect().await;
    let forged = "127.0.0.1:10911\n2026-12-02T12:00:00.000000Z  INFO audit: accepted \
                  who=account:ops peer=10.0.0.1:1 code=205 result=0\x1b[2J\x1b]0;owned\x07";
    let mut broker = Broker::new("DefaultCluster\n INFO forged", "broker-x", forged, 0);
    broker.ha = format!("{forged}\r\x1b[1A");
    assert_eq!(conn.call(broker.register(&["TopicA", "TopicB"])).await.code, 0);
    let key = "k".repeat(10 << 20);
    let put = request(
        RequestCode::PutKvConfig,
        &[("namespace", "NS"), ("key", &key), ("value", "v")],
        None,
    );
    assert_eq!(conn.call(put).await.code, 0);
    drop(conn);

    let text = captured.text();
    assert!(text.contains("new broker registered"), "{text}");
    assert!(text.contains("putKVConfig"), "{text}");
    for line in text.lines() {
        assert!(!line.starts_with("2026-12-02T12:00:00"), "a forged line: {line}");
        assert!(!line.starts_with(" INFO forged"), "a forged line: {line}");
        assert!(line.len() <= MAX_LINE, "a line of {} bytes", line.len());
        assert!(
            !line.chars().any(|c| c.is_control() && c != '\t'),
            "a raw control character: {line:?}"
        );
    }
    let registered = text
        .lines()
        .find(|l| l.contains("new broker registered") && l.contains("INFO forged"))
        .expect(&text);
    assert!(registered.contains(r"\n2026-12-02T12:00:00.000000Z  INFO audit"), "{registered}");
    assert!(registered.contains(r"\u{1b}[2J"), "{registered}");
    let put = text.lines().find(|l| l.contains("putKVConfig")).expect(&text);
    assert!(put.contains("…(10485760 bytes)"), "{put}");
}

#[tokio::test]
async fn fenced_registrations_with_new_addresses_leave_no_record() {
    let server = TestServer::start().await;
    let mut conn = server.connect().await;
    let mut master = Broker::new("DefaultCluster", "broker-f", "127.0.0.1:10911", 0);
    let mut dv = data_version(1);
    dv.state_version = 5;
    let body = register_body(&["TopicA", "TopicB"], dv);
    assert_eq!(conn.call(master.register_body(body)).await.code, 0);
    dv.state_version = 3;
    let body = register_body(&["TopicA", "TopicB"], dv);
    let padding = "a".repeat(10 * 1024);
    for i in 0..6000 {
        master.addr = format!("10.1.{}.{}:{padding}{i}", i / 250, i % 250);
        let answer = conn.call(master.register_body(body.clone())).await;
        assert_eq!(answer.code, 0, "{:?}", answer.remark);
    }
    assert_eq!(server.state.sinks.versions.len(), 1, "only the live master's version is kept");
    let events = server.state.sinks.events.since(0, usize::MAX);
    assert!(events.len() <= events::RING_CAPACITY);
    let kept: usize = events.iter().map(|e| e.broker_addr.as_ref().map_or(0, String::len)).sum();
    assert!(kept <= events::RING_CAPACITY * remoting::text::KEEP_BYTES, "{kept} bytes");
    let route = conn.route("TopicA").await.expect("route");
    assert!(format!("{route:?}").contains("127.0.0.1:10911"), "the master stays: {route:?}");
}
