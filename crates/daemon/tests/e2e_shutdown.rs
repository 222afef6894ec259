//! Shutdown end to end: the GO_AWAY window of `enableShutdownGracefully` (in process), and the
//! real `mqnamesrv` binary — SIGTERM answers everything already received and exits 0, `-p`, a bad
//! config value, KV durability across a SIGKILL and restart, and the warm restart from the route
//! snapshot (after SIGTERM, and after SIGKILL from the last periodic snapshot); and
//! `transparentHugePages=false` seen in the process's status.

mod common;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use common::{decode, header_json, request, Broker, RawConn, TestServer};
use remoting::{RemotingCommand, RequestCode};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// How long the binary may take to start, or to exit after a signal.
const PROCESS_TIMEOUT: Duration = Duration::from_secs(20);

fn versioned(mut cmd: RemotingCommand, version: i32) -> RemotingCommand {
    cmd.version = version;
    cmd
}

fn go_away_header(opaque: i32) -> String {
    format!(
        r#"{{"code":1500,"flag":1,"language":"JAVA","opaque":{opaque},"remark":"please go away","serializeTypeCurrentRPC":"JSON","version":479}}"#
    )
}

#[tokio::test]
async fn graceful_window_sends_go_away_to_new_clients_and_serves_old_ones() {
    let mut server = TestServer::start_with(|c| {
        c.enable_shutdown_gracefully = true;
        c.shutdown_wait_time_seconds = 30;
    })
    .await;
    let mut before = server.connect_raw().await;
    let kv_get = request(RequestCode::GetKvConfig, &[("namespace", "ns"), ("key", "k")], None);
    // Served normally before the shutdown starts.
    let frame = before.call(versioned(kv_get.clone(), 479)).await;
    assert_eq!(decode(&frame).code, 22);

    server.trigger_stop();
    // Poll (bounded) until the window has begun.
    let mut opaque = 1;
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let began = loop {
        opaque += 1;
        let mut probe = versioned(request(RequestCode::GetBrokerClusterInfo, &[], None), 476);
        probe.opaque = opaque;
        let frame = before.call_as_is(&probe).await;
        if decode(&frame).code == 1500 {
            break frame;
        }
        assert!(std::time::Instant::now() < deadline, "the graceful window never began");
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    assert_eq!(header_json(&began), go_away_header(opaque));

    // A handler with a header class still gets a framework-built GO_AWAY: no extFields (B1).
    let mut register =
        versioned(Broker::new("C", "broker-a", "10.0.0.1:10911", 0).register(&["T", "U"]), 479);
    register.opaque = 900;
    assert_eq!(header_json(&before.call_as_is(&register).await), go_away_header(900));

    // Version ≤ 475 (V5_3_1) is still served, on an old and on a new connection.
    let mut old = versioned(kv_get.clone(), 475);
    old.opaque = 901;
    let frame = before.call_as_is(&old).await;
    assert_eq!(
        header_json(&frame),
        r#"{"code":22,"extFields":{},"flag":1,"language":"JAVA","opaque":901,"remark":"No config item, Namespace: ns Key: k","serializeTypeCurrentRPC":"JSON","version":479}"#
    );
    let mut during = server.connect_raw().await;
    let frame = during.call(versioned(kv_get.clone(), 317)).await;
    assert_eq!(decode(&frame).code, 22);
    let frame = during.call(versioned(kv_get.clone(), 479)).await;
    assert_eq!(header_json(&frame), go_away_header(2));

    // A oneway request gets nothing, not even GO_AWAY.
    let mut oneway = versioned(kv_get, 479);
    oneway.set_oneway(true);
    oneway.opaque = 77;
    during.send(&oneway).await;
    let frame =
        during.call(versioned(request(RequestCode::GetBrokerClusterInfo, &[], None), 121)).await;
    let resp = decode(&frame);
    assert_eq!((resp.opaque, resp.code), (3, 0));
}

#[tokio::test]
async fn without_graceful_shutdown_the_server_stops_promptly() {
    let server = TestServer::start().await;
    let mut conn = server.connect().await;
    assert_eq!(conn.call(request(RequestCode::GetBrokerClusterInfo, &[], None)).await.code, 0);
    drop(conn);
    // `stop` bounds the wait itself.
    let _dir = server.stop().await;
}

// ---- The real binary ----

/// A running `mqnamesrv` child and the address it printed.
struct Namesrv {
    child: Child,
    addr: SocketAddr,
}

fn write_config(dir: &Path, extra: &str) -> PathBuf {
    let path = dir.join("namesrv.properties");
    let kv = dir.join("kvConfig.json");
    let text = format!(
        "listenPort=0\nbindAddress=127.0.0.1\nhttpListenPort=0\nkvConfigPath={}\n{extra}",
        kv.to_string_lossy()
    );
    std::fs::write(&path, text).expect("write config");
    path
}

/// Starts the binary with `-c config` and waits for its boot line.
async fn spawn_namesrv(config: &Path) -> Namesrv {
    let mut child = Command::new(env!("CARGO_BIN_EXE_mqnamesrv"))
        .arg("-c")
        .arg(config)
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn mqnamesrv");
    let stdout = child.stdout.take().expect("stdout");
    let mut lines = BufReader::new(stdout).lines();
    let boot = tokio::time::timeout(PROCESS_TIMEOUT, async {
        while let Some(line) = lines.next_line().await.expect("read stdout") {
            if let Some(addr) =
                line.strip_prefix("The Name Server boot success. serializeType=JSON, address ")
            {
                return addr.parse::<SocketAddr>().expect("address in boot line");
            }
        }
        panic!("mqnamesrv exited before its boot line");
    })
    .await
    .expect("boot line in time");
    // Keep draining stdout so the child never blocks on a full pipe.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    Namesrv { child, addr: boot }
}

fn send_signal(child: &Child, signal: &str) {
    let pid = child.id().expect("child still running");
    let status = std::process::Command::new("kill")
        .arg(format!("-{signal}"))
        .arg(pid.to_string())
        .status()
        .expect("run kill");
    assert!(status.success(), "kill -{signal} {pid}");
}

async fn wait_exit(child: &mut Child) -> std::process::ExitStatus {
    tokio::time::timeout(PROCESS_TIMEOUT, child.wait()).await.expect("exits in time").expect("wait")
}

#[tokio::test]
async fn sigterm_answers_every_pipelined_request_and_exits_zero() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = write_config(dir.path(), "");
    let mut ns = spawn_namesrv(&config).await;

    // Requests whose answers do not depend on other connections (a broker's connection may
    // close first during the drain and take its routes with it).
    let mut raw = RawConn::connect(ns.addr).await;
    const N: i32 = 300;
    let mut batch = Vec::new();
    for opaque in 1..=N {
        let mut cmd = match opaque % 10 {
            0 => request(
                RequestCode::PutKvConfig,
                &[("namespace", "ns"), ("key", &format!("k{opaque}")), ("value", "v")],
                None,
            ),
            1 | 4 | 7 => request(RequestCode::GetNamesrvConfig, &[], None),
            2 | 5 | 8 => request(RequestCode::GetBrokerClusterInfo, &[], None),
            _ => request(RequestCode::GetKvConfig, &[("namespace", "ns"), ("key", "nope")], None),
        };
        cmd.opaque = opaque;
        batch.extend_from_slice(&remoting::frame::encode_to_bytes(&cmd).expect("encode"));
    }
    raw.write(&batch).await;
    let first = decode(&raw.read_frame().await.expect("first answer"));
    assert_eq!(first.opaque, 1);

    send_signal(&ns.child, "TERM");
    for opaque in 2..=N {
        let frame = raw.read_frame().await.unwrap_or_else(|| panic!("answer {opaque}"));
        let resp = decode(&frame);
        assert_eq!(resp.opaque, opaque);
        let expected =
            if opaque % 10 == 3 || opaque % 10 == 6 || opaque % 10 == 9 { 22 } else { 0 };
        assert_eq!(resp.code, expected, "opaque {opaque}: {:?}", resp.remark);
    }
    let status = wait_exit(&mut ns.child).await;
    assert_eq!(status.code(), Some(0), "{status:?}");
    assert!(raw.read_frame().await.is_none(), "connection closed at exit");

    // Every acknowledged PUT is in the file.
    let kv = std::fs::read_to_string(dir.path().join("kvConfig.json")).expect("kv file");
    for opaque in (10..=N).step_by(10) {
        assert!(kv.contains(&format!("\"k{opaque}\":\"v\"")), "k{opaque} in {kv}");
    }
}

#[tokio::test]
async fn print_config_item_prints_listen_port_and_exits_zero() {
    let output = tokio::time::timeout(
        PROCESS_TIMEOUT,
        Command::new(env!("CARGO_BIN_EXE_mqnamesrv")).arg("-p").kill_on_drop(true).output(),
    )
    .await
    .expect("exits in time")
    .expect("run mqnamesrv -p");
    assert_eq!(output.status.code(), Some(0));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.lines().any(|l| l == "listenPort=9876"), "{stdout}");
    assert!(stdout.lines().any(|l| l == "enableTopicList=true"), "{stdout}");
}

/// Runs the binary with `-c config`, expects it to exit non-zero in time; its stderr.
async fn failed_start(config: &Path) -> String {
    let output = tokio::time::timeout(
        PROCESS_TIMEOUT,
        Command::new(env!("CARGO_BIN_EXE_mqnamesrv"))
            .arg("-c")
            .arg(config)
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("exits in time")
    .expect("run mqnamesrv");
    assert!(!output.status.success(), "{}: {:?}", config.display(), output.status);
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[tokio::test]
async fn bad_value_in_config_file_exits_non_zero_naming_the_key() {
    let dir = tempfile::tempdir().expect("tempdir");
    for (text, key) in [
        ("listenPort=abc\n", "listenPort"),
        ("scanNotActiveBrokerInterval=0\n", "scanNotActiveBrokerInterval"),
        ("enableTopicList=maybe\n", "enableTopicList"),
    ] {
        let path = dir.path().join("bad.properties");
        std::fs::write(&path, text).expect("write config");
        let stderr = failed_start(&path).await;
        assert!(stderr.contains(key), "{text:?}: stderr names {key}: {stderr}");
    }
}

#[tokio::test]
async fn acknowledged_kv_puts_survive_sigkill_and_restart() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = write_config(dir.path(), "");
    let mut ns = spawn_namesrv(&config).await;
    let mut conn = common::Conn::connect(ns.addr).await;
    const KEYS: usize = 40;
    for i in 0..KEYS {
        conn.put_kv("DURABLE", &format!("key{i}"), &format!("value{i}")).await;
    }
    // One more PUT in flight when the process dies: it may or may not be there.
    let mut pending = request(
        RequestCode::PutKvConfig,
        &[("namespace", "DURABLE"), ("key", "maybe"), ("value", "x")],
        None,
    );
    pending.opaque = 9999;
    conn.send(pending).await;
    ns.child.start_kill().expect("SIGKILL");
    let status = wait_exit(&mut ns.child).await;
    assert!(!status.success(), "killed: {status:?}");

    let mut ns = spawn_namesrv(&config).await;
    let mut conn = common::Conn::connect(ns.addr).await;
    for i in 0..KEYS {
        let resp = conn
            .call(request(
                RequestCode::GetKvConfig,
                &[("namespace", "DURABLE"), ("key", &format!("key{i}"))],
                None,
            ))
            .await;
        assert_eq!(resp.code, 0, "key{i} after restart");
        let expected = format!("value{i}");
        assert_eq!(resp.ext("value"), Some(expected.as_str()));
    }
    send_signal(&ns.child, "TERM");
    assert_eq!(wait_exit(&mut ns.child).await.code(), Some(0));
}

/// Registers broker-a (two topics) and broker-b on `addr`; the connections stay open.
async fn register_two_brokers(addr: SocketAddr) -> Vec<common::Conn> {
    let mut conns = Vec::new();
    for (broker, topics) in [
        (Broker::new("C", "broker-a", "10.0.0.1:10911", 0), ["RouteA", "Shared"]),
        (Broker::new("C", "broker-b", "10.0.0.2:10911", 0), ["RouteB", "Shared"]),
    ] {
        let mut conn = common::Conn::connect(addr).await;
        conn.register(&broker, &topics).await;
        conns.push(conn);
    }
    conns
}

/// Every route of [`register_two_brokers`], read from a fresh connection.
async fn routes_of_two_brokers(addr: SocketAddr) -> Vec<Option<remoting::body::TopicRouteData>> {
    let mut client = common::Conn::connect(addr).await;
    let mut routes = Vec::new();
    for topic in ["RouteA", "RouteB", "Shared"] {
        routes.push(client.route(topic).await);
    }
    routes
}

#[tokio::test]
async fn a_restarted_binary_serves_every_route_before_any_broker_registers_again() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = write_config(dir.path(), "");
    let mut ns = spawn_namesrv(&config).await;
    let brokers = register_two_brokers(ns.addr).await;
    let before = routes_of_two_brokers(ns.addr).await;
    assert!(before.iter().all(Option::is_some));
    send_signal(&ns.child, "TERM");
    assert_eq!(wait_exit(&mut ns.child).await.code(), Some(0));
    drop(brokers);

    let mut ns = spawn_namesrv(&config).await;
    // No broker has registered with this process: every route comes from the snapshot.
    assert_eq!(routes_of_two_brokers(ns.addr).await, before);
    send_signal(&ns.child, "TERM");
    assert_eq!(wait_exit(&mut ns.child).await.code(), Some(0));
}

/// The TCP ports process `pid` listens on (Linux `/proc`).
fn listening_ports(pid: u32) -> Vec<u16> {
    let inodes: Vec<String> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .expect("fd dir")
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .filter_map(|target| {
            let t = target.to_string_lossy().into_owned();
            t.strip_prefix("socket:[").and_then(|s| s.strip_suffix(']')).map(str::to_owned)
        })
        .collect();
    let mut ports = Vec::new();
    for table in ["tcp", "tcp6"] {
        let text = std::fs::read_to_string(format!("/proc/{pid}/net/{table}")).unwrap_or_default();
        for line in text.lines().skip(1) {
            let cols: Vec<&str> = line.split_whitespace().collect();
            if cols.len() > 9 && cols[3] == "0A" && inodes.iter().any(|i| i == cols[9]) {
                let port = cols[1].rsplit(':').next().expect("port");
                ports.push(u16::from_str_radix(port, 16).expect("hex port"));
            }
        }
    }
    ports
}

#[tokio::test]
async fn http_listen_port_zero_opens_no_http_listener() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = write_config(dir.path(), "");
    let mut ns = spawn_namesrv(&config).await;
    let pid = ns.child.id().expect("running");
    let ports: std::collections::BTreeSet<u16> = listening_ports(pid).into_iter().collect();
    assert_eq!(
        ports,
        std::collections::BTreeSet::from([ns.addr.port()]),
        "the remoting port only (pid {pid}, fds {:?})",
        std::fs::read_dir(format!("/proc/{pid}/fd"))
            .map(|d| d.filter_map(|e| std::fs::read_link(e.ok()?.path()).ok()).collect::<Vec<_>>())
    );
    send_signal(&ns.child, "TERM");
    assert_eq!(wait_exit(&mut ns.child).await.code(), Some(0));
}

#[tokio::test]
async fn after_sigkill_the_binary_restarts_with_its_last_periodic_snapshot() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = write_config(dir.path(), "");
    let mut ns = spawn_namesrv(&config).await;
    let _brokers = register_two_brokers(ns.addr).await;
    let before = routes_of_two_brokers(ns.addr).await;
    // The writer runs every 5 s once something changed: wait for its file (bounded).
    let snapshot = dir.path().join("routes.snapshot");
    let deadline = tokio::time::Instant::now() + PROCESS_TIMEOUT;
    while !std::fs::read(&snapshot).is_ok_and(|b| String::from_utf8_lossy(&b).contains("RouteB")) {
        assert!(tokio::time::Instant::now() < deadline, "no periodic snapshot");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    ns.child.start_kill().expect("SIGKILL");
    assert!(!wait_exit(&mut ns.child).await.success());

    let mut ns = spawn_namesrv(&config).await;
    assert_eq!(routes_of_two_brokers(ns.addr).await, before);
    send_signal(&ns.child, "TERM");
    assert_eq!(wait_exit(&mut ns.child).await.code(), Some(0));
}

#[tokio::test]
async fn a_taken_http_port_stops_start_up_naming_the_key() {
    let dir = tempfile::tempdir().expect("tempdir");
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = taken.local_addr().expect("addr").port();
    let config = dir.path().join("namesrv.properties");
    std::fs::write(
        &config,
        format!(
            "listenPort=0\nbindAddress=127.0.0.1\nhttpListenPort={port}\nkvConfigPath={}\n",
            dir.path().join("kv.json").display()
        ),
    )
    .expect("write config");
    let stderr = failed_start(&config).await;
    assert!(stderr.contains("httpListenPort"), "{stderr}");
    assert!(stderr.contains(&format!("127.0.0.1:{port}")), "{stderr}");
    drop(taken);
}

/// `THP_enabled` of process `pid` (`/proc/<pid>/status`: 0 once the process disabled
/// transparent huge pages for itself).
fn thp_enabled(pid: u32) -> String {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
    let line = status.lines().find(|l| l.starts_with("THP_enabled:")).expect("THP_enabled line");
    line["THP_enabled:".len()..].trim().to_owned()
}

#[tokio::test]
async fn transparent_huge_pages_false_disables_them_for_the_process() {
    for (setting, expected) in [("", "1"), ("transparentHugePages=false\n", "0")] {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut ns = spawn_namesrv(&write_config(dir.path(), setting)).await;
        let pid = ns.child.id().expect("running");
        assert_eq!(thp_enabled(pid), expected, "with {setting:?}");
        send_signal(&ns.child, "TERM");
        assert_eq!(wait_exit(&mut ns.child).await.code(), Some(0));
    }
}
