//! `mqnamesrv` with `enableControllerInNamesrv=true`: the controller serves its own port next
//! to the nameserver's, `-p` lists its keys, a bad controller key stops start-up naming it, and
//! a controller that cannot start leaves route serving untouched.

mod common;

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use common::Conn;
use remoting::headers::GetMetaDataResponseHeader;
use remoting::{RemotingCommand, RequestCode, ResponseCode};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

const PROCESS_TIMEOUT: Duration = Duration::from_secs(60);

/// A port the OS just handed out (bound on 127.0.0.1:0, then released for the child).
fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("addr").port()
}

fn write_config(dir: &Path, controller_port: u16, extra: &str) -> std::path::PathBuf {
    let path = dir.join("namesrv.properties");
    let text = format!(
        "listenPort=0\nhttpListenPort=0\nbindAddress=127.0.0.1\nkvConfigPath={kv}\nenableControllerInNamesrv=true\n\
         controllerDLegerGroup=embedded\ncontrollerDLegerPeers=n0-127.0.0.1:{controller_port}\n\
         controllerDLegerSelfId=n0\ncontrollerStorePath={store}\n{extra}",
        kv = dir.join("kv.json").display(),
        store = dir.join("controller").display(),
    );
    std::fs::write(&path, text).expect("write config");
    path
}

/// Starts `mqnamesrv -c config`; returns the child, its stdout lines as they come, and its
/// stderr.
fn spawn(config: &Path) -> (Child, tokio::sync::mpsc::UnboundedReceiver<String>) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_mqnamesrv"))
        .arg("-c")
        .arg(config)
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn mqnamesrv");
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    for stream in [
        Box::new(child.stdout.take().expect("stdout"))
            as Box<dyn tokio::io::AsyncRead + Unpin + Send>,
        Box::new(child.stderr.take().expect("stderr")),
    ] {
        let tx = tx.clone();
        tokio::spawn(async move {
            let mut lines = BufReader::new(stream).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                let _ = tx.send(line);
            }
        });
    }
    (child, rx)
}

/// Waits for an output line containing `needle`; returns it.
async fn line_with(rx: &mut tokio::sync::mpsc::UnboundedReceiver<String>, needle: &str) -> String {
    tokio::time::timeout(PROCESS_TIMEOUT, async {
        while let Some(line) = rx.recv().await {
            if line.contains(needle) {
                return line;
            }
        }
        panic!("mqnamesrv exited before printing {needle:?}");
    })
    .await
    .expect("line in time")
}

fn namesrv_addr(boot: &str) -> std::net::SocketAddr {
    boot.rsplit(' ').next().expect("address").parse().expect("socket address")
}

#[tokio::test]
async fn the_embedded_controller_serves_its_own_port_next_to_the_nameserver() {
    let dir = tempfile::tempdir().expect("tempdir");
    let port = free_port();
    let config = write_config(dir.path(), port, "");
    let (mut child, mut out) = spawn(&config);
    let ns = namesrv_addr(&line_with(&mut out, "The Name Server boot success").await);
    line_with(&mut out, "The ControllerManager boot success").await;

    // The nameserver answers as always on its port.
    let mut conn = Conn::connect(ns).await;
    let info = conn.call(RemotingCommand::request(RequestCode::GetBrokerClusterInfo)).await;
    assert_eq!(info.code, ResponseCode::Success.to_i32());
    // The controller code is not served on the nameserver port (as in Java)...
    let refused = conn.call(RemotingCommand::request(RequestCode::ControllerGetMetadataInfo)).await;
    assert_eq!(refused.code, ResponseCode::RequestCodeNotSupported.to_i32());
    // ...but on the controller's, where the single node becomes leader.
    leads_on(port).await;
    child.kill().await.expect("kill");
}

/// Waits until the controller on `port` answers as the leader of group `embedded`.
async fn leads_on(port: u16) {
    let mut controller = Conn::connect(format!("127.0.0.1:{port}").parse().expect("addr")).await;
    let deadline = tokio::time::Instant::now() + PROCESS_TIMEOUT;
    loop {
        let meta =
            controller.call(RemotingCommand::request(RequestCode::ControllerGetMetadataInfo)).await;
        let h: GetMetaDataResponseHeader = meta.decode_header();
        if h.is_leader == Some(true) {
            assert_eq!(h.group.as_deref(), Some("embedded"));
            assert_eq!(h.controller_leader_address, Some(format!("127.0.0.1:{port}")));
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "the embedded controller never led");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// `daemon::run` — what the tests and the binary run — starts the embedded controller too (on
/// the listener given), and stops it with the nameserver.
#[tokio::test]
async fn run_serves_the_embedded_controller_and_stops_it_with_the_nameserver() {
    let dir = tempfile::tempdir().expect("tempdir");
    let controller = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = controller.local_addr().expect("addr").port();
    let config = daemon::Config::load(Some(&write_config(dir.path(), port, ""))).expect("config");
    let remoting = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let ns = remoting.local_addr().expect("addr");
    let listeners = daemon::Listeners { remoting, http: None, controller: Some(controller) };
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(daemon::run(listeners, config, async move {
        let _ = stopped.await;
    }));
    leads_on(port).await;
    let mut conn = Conn::connect(ns).await;
    let info = conn.call(RemotingCommand::request(RequestCode::GetBrokerClusterInfo)).await;
    assert_eq!(info.code, ResponseCode::Success.to_i32());
    assert!(dir.path().join("controller").is_dir(), "the controller opened its store");
    drop(conn);
    stop.send(()).expect("running");
    tokio::time::timeout(PROCESS_TIMEOUT, server)
        .await
        .expect("stops in time")
        .expect("task")
        .expect("run returns Ok");
    let refused = tokio::net::TcpStream::connect(("127.0.0.1", port)).await;
    assert!(refused.is_err(), "the controller port is closed once run returns");
}

/// A bad controller key makes `daemon::run` fail before it serves anything, naming the key.
#[tokio::test]
async fn run_refuses_a_bad_controller_key() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = write_config(dir.path(), free_port(), "controllerDLegerSelfId=n9\n");
    let config = daemon::Config::load(Some(&path)).expect("the nameserver keys are fine");
    let remoting = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let err = daemon::run(remoting, config, std::future::pending()).await.expect_err("refused");
    assert!(err.to_string().contains("controllerDLegerSelfId"), "{err}");
}

#[tokio::test]
async fn a_controller_that_cannot_start_leaves_routes_served() {
    let dir = tempfile::tempdir().expect("tempdir");
    let port = free_port();
    // The store directory is a regular file: the controller cannot open its store.
    std::fs::write(dir.path().join("controller"), b"not a directory").expect("write");
    let config = write_config(dir.path(), port, "");
    let (mut child, mut out) = spawn(&config);
    let ns = namesrv_addr(&line_with(&mut out, "The Name Server boot success").await);
    line_with(&mut out, "embedded controller not started").await;
    let mut conn = Conn::connect(ns).await;
    let info = conn.call(RemotingCommand::request(RequestCode::GetBrokerClusterInfo)).await;
    assert_eq!(info.code, ResponseCode::Success.to_i32());
    assert!(child.try_wait().expect("poll").is_none(), "the nameserver keeps running");
    child.kill().await.expect("kill");
}

#[tokio::test]
async fn print_lists_the_controller_keys_and_a_bad_one_stops_start_up() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = write_config(dir.path(), free_port(), "electMasterMaxRetryCount=7\n");
    let out = Command::new(env!("CARGO_BIN_EXE_mqnamesrv"))
        .arg("-c")
        .arg(&config)
        .arg("-p")
        .output()
        .await
        .expect("run");
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).expect("utf8");
    assert!(text.contains("\nelectMasterMaxRetryCount=7\n"), "{text}");
    assert!(text.contains("\nenableElectUncleanMaster=false\n"), "{text}");

    let bad = write_config(dir.path(), free_port(), "controllerDLegerSelfId=n9\n");
    let out = Command::new(env!("CARGO_BIN_EXE_mqnamesrv"))
        .arg("-c")
        .arg(&bad)
        .output()
        .await
        .expect("run");
    assert_eq!(out.status.code(), Some(255));
    let err = String::from_utf8(out.stderr).expect("utf8");
    assert!(err.contains("controllerDLegerSelfId"), "{err}");
}
