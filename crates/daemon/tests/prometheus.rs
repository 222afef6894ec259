//! A real Prometheus against this server (issue #22), with Debian's `prometheus` and `promtool`:
//!
//! - `promtool check metrics` finds no problem (no error, no lint warning) in the exposition of
//!   a loaded nameserver (with an embedded controller) and of a loaded standalone controller;
//! - `promtool check rules` and `promtool test rules` pass on `deploy/prometheus/alerts.yml` and
//!   its unit tests `alerts.test.yml`, which test every alert;
//! - Prometheus scrapes both (loopback, every second, OpenMetrics as it negotiates) under a load
//!   of route reads, registrations and heartbeats, and then, through its HTTP API: every query
//!   of every `deploy/grafana/*.json` dashboard (its variables resolved as Grafana does: `All`
//!   of each `label_values` variable, `$__rate_interval` a window) returns data; every alert
//!   rule is loaded and evaluated without error, and each operand of its expression (the
//!   expression without its threshold comparison) returns data; and, after the load, the p99
//!   (and p50) latency queries over the load's window are not above the load generator's own,
//!   its durations put in the same buckets (its time of each request includes the server's).
//!
//! `.ci/run` installs the `prometheus` package; without it these tests are skipped with a
//! message on a developer machine and fail when `CI` is set.

mod common;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use common::controllers::{broker_group, ctl, Standalone};
use common::exposition::{bucketed, nearest_rank, quantile};
use common::{http_get, request, Broker, Conn, TestServer};
use remoting::RequestCode;
use serde_json::Value;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// How long the whole Prometheus test may take.
const TEST_LIMIT: Duration = Duration::from_secs(240);
/// Prometheus' scrape and rule evaluation interval.
const SCRAPE: Duration = Duration::from_secs(1);
/// `$__rate_interval` while the load runs: Grafana's `4 × scrape interval`, and a bit more.
const RATE_INTERVAL: &str = "10s";
/// How long the load runs.
const LOAD: Duration = Duration::from_secs(8);

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `prometheus` and `promtool`, or why they are missing (skip, or fail with `CI` set).
fn tools() -> Option<(PathBuf, PathBuf)> {
    let find = |name: &str| {
        std::env::var_os("PATH")
            .iter()
            .flat_map(std::env::split_paths)
            .map(|dir| dir.join(name))
            .find(|p| p.is_file())
    };
    match (find("prometheus"), find("promtool")) {
        (Some(p), Some(t)) => Some((p, t)),
        _ if std::env::var_os("CI").is_some() => {
            panic!("prometheus/promtool not found: the Prometheus tests cannot run in CI (Debian package prometheus)")
        }
        _ => {
            eprintln!("\n*** SKIPPED: prometheus and promtool not found (Debian package prometheus; .ci/run installs it) ***\n");
            None
        }
    }
}

// ---- the world under test ----------------------------------------------------------------------

/// A loaded nameserver with an embedded controller, a standalone controller, their broker
/// groups, and every kind of event the dashboards and alerts count (an expired broker, a
/// corrupt registration, an unregistration, a refused connection, a KV entry, an election
/// with the master still alive).
struct World {
    ns: TestServer,
    ctl: Standalone,
    /// Connections of the registered brokers (a closed one would unregister them).
    _conns: Vec<Conn>,
    beats: Vec<CancellationToken>,
}

impl World {
    async fn start() -> Self {
        let ns =
            TestServer::start_with_controller(|c| c.scan_not_active_broker_interval = 1000).await;
        let mut conns = Vec::new();
        for i in 1..=3 {
            let mut conn = ns.connect().await;
            let b = Broker::new("C", &format!("broker-{i}"), &format!("10.0.0.{i}:10911"), 0)
                .with_ext("heartbeatTimeoutMillis", "600000");
            conn.register(&b, &["T1", "T2", "T3"]).await;
            conns.push(conn);
        }
        let mut conn = ns.connect().await;
        // Expired at the next liveness scan (brokers_removed_total{reason="heartbeat_timeout"}).
        let silent = Broker::new("C", "broker-silent", "10.0.0.9:10911", 0)
            .with_ext("heartbeatTimeoutMillis", "1");
        conn.register(&silent, &["T9", "T10"]).await;
        // A corrupt body (registrations_total{outcome="crc_mismatch"}).
        let corrupt = Broker::new("C", "broker-x", "10.0.0.8:10911", 0).with_ext("bodyCrc32", "1");
        assert_ne!(conn.call(corrupt.register(&["T8", "T7"])).await.code, 0);
        // Registered and unregistered.
        let gone = Broker::new("C", "broker-gone", "10.0.0.7:10911", 0);
        conn.register(&gone, &["T6", "T5"]).await;
        assert_eq!(conn.call(gone.request(RequestCode::UnregisterBroker, None)).await.code, 0);
        conn.put_kv("NS", "k", "v").await;
        conns.push(conn);
        let mut bad = common::RawConn::connect(ns.addr).await;
        bad.write(b"PROXY nonsense\r\n").await;
        assert!(bad.is_closed_by_server().await);

        let ctl = Standalone::start("standalone").await;
        let (standalone_beats, brokers) = broker_group(&ctl.addr, "broker-s", 3).await;
        // An admin election while the master lives: CONTROLLER_MASTER_STILL_EXIST.
        let client = ctl::client(std::slice::from_ref(&ctl.addr));
        let again = brokers[1].elect(&ctl::Solo(ctl.addr.clone()), &client).await;
        assert_eq!(again.code, remoting::ResponseCode::ControllerMasterStillExist.to_i32());
        let embedded = ns.controller.expect("controller").to_string();
        let (embedded_beats, _) = broker_group(&embedded, "broker-e", 2).await;

        // The silent broker's expiry (a scan every second).
        let deadline = Instant::now() + Duration::from_secs(30);
        while !ns.get("/metrics").await.body.contains(r#"reason="heartbeat_timeout""#) {
            assert!(Instant::now() < deadline, "the silent broker never expired");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        World { ns, ctl, _conns: conns, beats: vec![standalone_beats, embedded_beats] }
    }

    fn ns_http(&self) -> SocketAddr {
        self.ns.http.expect("http")
    }

    async fn stop(self) {
        for b in &self.beats {
            b.cancel();
        }
        self.ctl.stop().await;
        self.ns.stop().await;
    }
}

// ---- promtool ------------------------------------------------------------------------------------

/// Runs `promtool` with `args` (and `stdin`), in `dir`; returns (success, stdout + stderr).
fn promtool(promtool: &Path, args: &[&str], stdin: Option<&str>, dir: &Path) -> (bool, String) {
    use std::io::Write;
    let mut child = std::process::Command::new(promtool)
        .args(args)
        .current_dir(dir)
        .stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn promtool");
    if let Some(text) = stdin {
        child.stdin.take().expect("stdin").write_all(text.as_bytes()).expect("write stdin");
    }
    let out = child.wait_with_output().expect("promtool");
    let text =
        format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.success(), text)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn promtool_finds_no_problem_in_the_exposition_of_a_loaded_nameserver_and_controller() {
    let Some((_, promtool_bin)) = tools() else { return };
    let world = World::start().await;
    let mut conn = world.ns.connect().await;
    for topic in ["T1", "T2", "nope"] {
        conn.call(request(RequestCode::GetRouteinfoByTopic, &[("topic", topic)], None)).await;
    }
    for (what, addr) in [("nameserver", world.ns_http()), ("controller", world.ctl.http)] {
        let text = http_get(addr, "/metrics", &[]).await.body;
        assert!(text.contains("rocketmq_controller_"), "{what}: the controller's metrics");
        let (ok, out) = promtool(&promtool_bin, &["check", "metrics"], Some(&text), &repo());
        eprintln!(
            "promtool check metrics ({what}): {}",
            if out.is_empty() { "nothing to say" } else { &out }
        );
        assert!(ok, "promtool check metrics failed on the {what}'s exposition:\n{out}");
        assert!(out.trim().is_empty(), "promtool lint problems in the {what}'s exposition:\n{out}");
    }
    world.stop().await;
}

#[test]
fn the_alert_rules_pass_promtool_check_rules_and_their_unit_tests() {
    let Some((_, promtool_bin)) = tools() else { return };
    let dir = repo().join("deploy/prometheus");
    let (ok, out) = promtool(&promtool_bin, &["check", "rules", "alerts.yml"], None, &dir);
    assert!(ok && out.contains("SUCCESS"), "promtool check rules:\n{out}");
    let (ok, out) = promtool(&promtool_bin, &["test", "rules", "alerts.test.yml"], None, &dir);
    assert!(ok, "promtool test rules:\n{out}");
    // The shipped scrape jobs with the rules, as a prometheus.yml merging them would be.
    let tmp = tempfile::tempdir().expect("temp dir");
    let config = tmp.path().join("prometheus.yml");
    let scrape = std::fs::read_to_string(dir.join("scrape.yml")).expect("scrape.yml");
    let rules = dir.join("alerts.yml");
    std::fs::write(&config, format!("{scrape}rule_files:\n  - {}\n", rules.display()))
        .expect("write");
    let config = config.to_string_lossy().into_owned();
    let (ok, out) = promtool(&promtool_bin, &["check", "config", &config], None, &dir);
    let found = format!("{} rules found", alert_rules().len());
    assert!(ok && out.contains(&found), "promtool check config:\n{out}");
    // Every alert has a unit test.
    let tests = std::fs::read_to_string(dir.join("alerts.test.yml")).expect("tests");
    for alert in alert_rules().keys() {
        assert!(tests.contains(&format!("alertname: {alert}\n")), "{alert} has no unit test");
    }
}

/// Every alert of `deploy/prometheus/alerts.yml`: name → expression.
fn alert_rules() -> BTreeMap<String, String> {
    let text =
        std::fs::read_to_string(repo().join("deploy/prometheus/alerts.yml")).expect("alerts");
    let doc: serde_yaml_ng::Value = serde_yaml_ng::from_str(&text).expect("YAML");
    let mut rules = BTreeMap::new();
    for group in doc["groups"].as_sequence().expect("groups") {
        for rule in group["rules"].as_sequence().expect("rules") {
            let name = rule["alert"].as_str().expect("alert name").to_owned();
            let expr = rule["expr"].as_str().expect("expr").to_owned();
            assert!(rules.insert(name.clone(), expr).is_none(), "{name} twice");
        }
    }
    rules
}

// ---- PromQL text --------------------------------------------------------------------------------

/// The operands of `expr` at its top level, split at comparison and set operators (`==`, `!=`,
/// `>=`, `<=`, `>`, `<`, `and`, `or`, `unless`), numbers dropped: the expression without its
/// thresholds, each part of which must return data.
fn operands(expr: &str) -> Vec<String> {
    let mut parts = Vec::new();
    let (mut depth, mut quoted, mut start) = (0i32, false, 0usize);
    let bytes = expr.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i] as char;
        if quoted {
            if c == '\\' {
                i += 1;
            } else if c == '"' {
                quoted = false;
            }
        } else {
            match c {
                '"' => quoted = true,
                '(' | '[' | '{' => depth += 1,
                ')' | ']' | '}' => depth -= 1,
                _ if depth == 0 => {
                    let rest = &expr[i..];
                    let op = ["==", "!=", ">=", "<=", ">", "<", " or ", " and ", " unless "]
                        .into_iter()
                        .find(|op| rest.starts_with(op));
                    if let Some(op) = op {
                        parts.push(expr[start..i].to_owned());
                        i += op.len();
                        let after = expr[i..].trim_start();
                        let after = after.strip_prefix("bool ").unwrap_or(after);
                        start = expr.len() - after.len();
                        i = start;
                        continue;
                    }
                }
                _ => {}
            }
        }
        i += 1;
    }
    parts.push(expr[start..].to_owned());
    parts
        .into_iter()
        .map(|p| p.trim().to_owned())
        .filter(|p| !p.is_empty() && p.parse::<f64>().is_err())
        .collect()
}

/// `s` escaped for a regular expression as Grafana escapes a variable's values.
fn regex_escape(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if "\\^$*+?.()|{}[]".contains(c) {
            out.push_str("\\\\");
        }
        out.push(c);
    }
    out
}

/// `s` percent-encoded for a query string.
fn url_encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

// ---- Prometheus ---------------------------------------------------------------------------------

/// A Prometheus server on a loopback port of its own, its TSDB in a temp dir; killed on drop.
struct Prometheus {
    addr: SocketAddr,
    child: tokio::process::Child,
    _dir: tempfile::TempDir,
}

impl Prometheus {
    /// Starts Prometheus scraping `namesrv` (job rocketmq-namesrv) and `controller` (job
    /// rocketmq-controller) every [`SCRAPE`], with the alert rules loaded. Prometheus cannot
    /// listen on port 0: it gets a port the OS just handed out, and another one if that was
    /// taken in between.
    async fn start(binary: &Path, namesrv: SocketAddr, controller: SocketAddr) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let config = dir.path().join("prometheus.yml");
        std::fs::write(
            &config,
            format!(
                "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\n\
                 rule_files:\n  - {}\n\
                 scrape_configs:\n\
                 \x20 - job_name: rocketmq-namesrv\n    static_configs:\n      - targets: [\"{namesrv}\"]\n\
                 \x20 - job_name: rocketmq-controller\n    static_configs:\n      - targets: [\"{controller}\"]\n",
                repo().join("deploy/prometheus/alerts.yml").display()
            ),
        )
        .expect("write prometheus.yml");
        for attempt in 0..5 {
            let port = std::net::TcpListener::bind("127.0.0.1:0")
                .and_then(|l| l.local_addr())
                .expect("a free port")
                .port();
            let addr = SocketAddr::from(([127, 0, 0, 1], port));
            let mut child = tokio::process::Command::new(binary)
                .arg(format!("--config.file={}", config.display()))
                .arg(format!("--storage.tsdb.path={}", dir.path().join("data").display()))
                .arg(format!("--web.listen-address={addr}"))
                .arg("--storage.tsdb.retention.time=1h")
                .arg("--log.level=warn")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .kill_on_drop(true)
                .spawn()
                .expect("spawn prometheus");
            let deadline = Instant::now() + Duration::from_secs(60);
            loop {
                if let Ok(Some(status)) = child.try_wait() {
                    let mut err = String::new();
                    if let Some(mut e) = child.stderr.take() {
                        let _ = tokio::io::AsyncReadExt::read_to_string(&mut e, &mut err).await;
                    }
                    assert!(
                        err.contains("address already in use") && attempt < 4,
                        "prometheus exited ({status}):\n{err}"
                    );
                    break;
                }
                if let Ok(r) = common::http_request(addr, "GET", "/-/ready", &[]).await {
                    if r.status == 200 {
                        return Self { addr, child, _dir: dir };
                    }
                }
                assert!(Instant::now() < deadline, "prometheus not ready in time");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
        unreachable!("five ports taken in a row")
    }

    /// `GET path` of the HTTP API: its `data`.
    async fn api(&self, path: &str) -> Value {
        let response = http_get(self.addr, path, &[]).await;
        let body: Value = serde_json::from_str(&response.body)
            .unwrap_or_else(|e| panic!("{path}: {e}: {}", response.body));
        assert_eq!(body["status"], "success", "{path}: {body}");
        body["data"].clone()
    }

    /// An instant query at `time` (Unix seconds; now if `None`): the result vector.
    async fn query(&self, promql: &str, time: Option<f64>) -> Vec<Value> {
        let mut path = format!("/api/v1/query?query={}", url_encode(promql));
        if let Some(t) = time {
            path.push_str(&format!("&time={t:.3}"));
        }
        let data = self.api(&path).await;
        assert_eq!(data["resultType"], "vector", "{promql}: {data}");
        data["result"].as_array().cloned().unwrap_or_default()
    }

    /// The values of `label` on the series of `selector` (Grafana's `label_values`).
    async fn label_values(&self, selector: &str, label: &str) -> Vec<String> {
        let series = self.api(&format!("/api/v1/series?match[]={}", url_encode(selector))).await;
        let mut values: Vec<String> = series
            .as_array()
            .expect("series")
            .iter()
            .filter_map(|s| s[label].as_str().map(str::to_owned))
            .collect();
        values.sort();
        values.dedup();
        values
    }
}

fn value_of(sample: &Value) -> f64 {
    sample["value"][1].as_str().and_then(|v| v.parse().ok()).unwrap_or(f64::NAN)
}

fn unix_now() -> f64 {
    SystemTime::now().duration_since(UNIX_EPOCH).expect("time").as_secs_f64()
}

// ---- the dashboards ---------------------------------------------------------------------------

/// A Grafana dashboard: its variables (name → `label_values` query) and every target
/// (panel title, expression).
struct Dashboard {
    file: String,
    variables: Vec<(String, String)>,
    targets: Vec<(String, String)>,
}

fn dashboards() -> Vec<Dashboard> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(repo().join("deploy/grafana"))
        .expect("deploy/grafana")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    assert!(files.len() >= 2, "the nameserver's and the controller's dashboards: {files:?}");
    files
        .iter()
        .map(|path| {
            let json: Value =
                serde_json::from_str(&std::fs::read_to_string(path).expect("read")).expect("JSON");
            let variables = json["templating"]["list"]
                .as_array()
                .expect("templating")
                .iter()
                .filter(|v| v["type"] == "query")
                .map(|v| {
                    (
                        v["name"].as_str().expect("name").to_owned(),
                        v["query"].as_str().expect("query").to_owned(),
                    )
                })
                .collect();
            let mut targets = Vec::new();
            // Panels in order, a row's panels after it.
            let mut panels: std::collections::VecDeque<Value> =
                json["panels"].as_array().expect("panels").iter().cloned().collect();
            while let Some(panel) = panels.pop_front() {
                for (i, inner) in panel["panels"].as_array().into_iter().flatten().enumerate() {
                    panels.insert(i, inner.clone());
                }
                for t in panel["targets"].as_array().into_iter().flatten() {
                    let title = panel["title"].as_str().unwrap_or("").to_owned();
                    targets.push((title, t["expr"].as_str().expect("expr").to_owned()));
                }
            }
            Dashboard {
                file: path.file_name().expect("name").to_string_lossy().into_owned(),
                variables,
                targets,
            }
        })
        .collect()
}

/// The dashboard's variables resolved as Grafana's `All` does: `(a|b|…)` of every value of
/// its `label_values(selector, label)` query, each value regex-escaped, in order (a later
/// variable's query may use an earlier one).
async fn resolve(prom: &Prometheus, d: &Dashboard) -> Vec<(String, String)> {
    let mut resolved: Vec<(String, String)> = Vec::new();
    for (name, query) in &d.variables {
        let inner = query
            .strip_prefix("label_values(")
            .and_then(|q| q.strip_suffix(')'))
            .unwrap_or_else(|| panic!("{}: {name} is not label_values(...): {query}", d.file));
        let (selector, label) = inner.rsplit_once(',').expect("selector, label");
        let values = prom.label_values(&substitute(selector, &resolved, ""), label.trim()).await;
        assert!(!values.is_empty(), "{}: variable {name} ({query}) has no value", d.file);
        let all = values.iter().map(|v| regex_escape(v)).collect::<Vec<_>>().join("|");
        resolved.push((name.clone(), format!("({all})")));
    }
    resolved
}

fn substitute(expr: &str, variables: &[(String, String)], rate_interval: &str) -> String {
    let mut out = expr.replace("$__rate_interval", rate_interval);
    for (name, value) in variables {
        out = out.replace(&format!("${{{name}}}"), value).replace(&format!("${name}"), value);
    }
    assert!(!out.contains('$'), "an unresolved variable in {out}");
    out
}

// ---- the load -----------------------------------------------------------------------------------

/// The load generator's own durations by what it sent.
#[derive(Default)]
struct Timings {
    route_reads: Vec<Duration>,
    registrations: Vec<Duration>,
}

/// Route reads on two connections (one in ten of a missing topic) and re-registrations every
/// 200 ms on the nameserver, answered heartbeats every 20 ms on both controllers, each timed,
/// until `stop`.
fn load(world: &World, stop: &CancellationToken) -> Vec<JoinHandle<Timings>> {
    let mut tasks = Vec::new();
    for reader in 0..2 {
        let (addr, stop) = (world.ns.addr, stop.clone());
        tasks.push(tokio::spawn(async move {
            let mut conn = Conn::connect(addr).await;
            let mut t = Timings::default();
            let mut i = 0u64;
            while !stop.is_cancelled() {
                let topic = if i % 10 == reader { "nope" } else { "T1" };
                let started = Instant::now();
                conn.call(request(RequestCode::GetRouteinfoByTopic, &[("topic", topic)], None))
                    .await;
                t.route_reads.push(started.elapsed());
                i += 1;
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
            t
        }));
    }
    let (addr, stop_reg) = (world.ns.addr, stop.clone());
    tasks.push(tokio::spawn(async move {
        let mut conn = Conn::connect(addr).await;
        let mut t = Timings::default();
        let b = Broker::new("C", "broker-load", "10.0.0.50:10911", 0)
            .with_ext("heartbeatTimeoutMillis", "600000");
        let mut round = 0;
        while !stop_reg.is_cancelled() {
            // Every fifth with a new topic (applied), the others unchanged.
            let extra = format!("L{}", round / 5);
            let started = Instant::now();
            let r = conn.call(b.register(&["T1", &extra])).await;
            t.registrations.push(started.elapsed());
            assert_eq!(r.code, 0, "{:?}", r.remark);
            round += 1;
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        t
    }));
    for addr in [world.ctl.addr.clone(), world.ns.controller.expect("controller").to_string()] {
        let stop = stop.clone();
        tasks.push(tokio::spawn(async move {
            let mut conn = Conn::connect(addr.parse().expect("addr")).await;
            while !stop.is_cancelled() {
                let beat = request(
                    RequestCode::BrokerHeartbeat,
                    &[
                        ("clusterName", "C"),
                        ("brokerName", "broker-load"),
                        ("brokerAddr", "10.0.0.50:10911"),
                        ("brokerId", "1"),
                        ("heartbeatTimeoutMills", "600000"),
                    ],
                    None,
                );
                assert_eq!(conn.call(beat).await.code, 0);
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Timings::default()
        }));
    }
    tasks
}

// ---- the end-to-end test ------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prometheus_evaluates_every_dashboard_and_alert_query() {
    let Some((prometheus_bin, _)) = tools() else { return };
    tokio::time::timeout(TEST_LIMIT, evaluate_everything(prometheus_bin))
        .await
        .expect("the Prometheus test finished in time");
}

async fn evaluate_everything(prometheus_bin: PathBuf) {
    let world = World::start().await;
    let mut prom = Prometheus::start(&prometheus_bin, world.ns_http(), world.ctl.http).await;

    // Both targets scraped (in OpenMetrics, which Prometheus asks for) and parsed: up = 1.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let up = prom.query("up", None).await;
        if up.len() == 2 && up.iter().all(|s| value_of(s) == 1.0) {
            break;
        }
        assert!(Instant::now() < deadline, "targets not up: {up:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // Samples from before the load, then the load.
    let before_load = unix_now();
    tokio::time::sleep(SCRAPE * 5 / 2).await;
    let stop = CancellationToken::new();
    let tasks = load(&world, &stop);
    tokio::time::sleep(LOAD * 3 / 4).await;

    // Under load: every dashboard query returns data.
    let mut evaluated = 0;
    for d in dashboards() {
        let variables = resolve(&prom, &d).await;
        eprintln!("{}: variables {variables:?}", d.file);
        for (title, expr) in &d.targets {
            let promql = substitute(expr, &variables, RATE_INTERVAL);
            let result = prom.query(&promql, None).await;
            let finite: Vec<f64> = result.iter().map(value_of).filter(|v| v.is_finite()).collect();
            eprintln!(
                "  [{title}] {promql}\n    -> {} series, e.g. {}",
                result.len(),
                finite.first().map_or("NaN".to_owned(), |v| format!("{v}"))
            );
            assert!(!result.is_empty(), "{}: [{title}] returns no data: {promql}", d.file);
            assert!(!finite.is_empty(), "{}: [{title}] returns only NaN: {promql}", d.file);
            evaluated += 1;
        }
    }
    assert!(evaluated > 40, "{evaluated} dashboard queries");

    // Every alert rule: each operand of its expression returns data, and Prometheus loaded and
    // evaluated the rule itself without error.
    let rules = alert_rules();
    for (alert, expr) in &rules {
        for operand in operands(expr) {
            let result = prom.query(&operand, None).await;
            eprintln!(
                "  alert {alert}: {operand}\n    -> {} series, e.g. {}",
                result.len(),
                result.first().map_or("-".to_owned(), |s| format!("{}", value_of(s)))
            );
            assert!(!result.is_empty(), "alert {alert}: {operand} returns no data");
        }
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let data = prom.api("/api/v1/rules").await;
        let loaded: Vec<Value> = data["groups"]
            .as_array()
            .expect("groups")
            .iter()
            .flat_map(|g| g["rules"].as_array().cloned().unwrap_or_default())
            .collect();
        let evaluated = loaded.iter().filter(|r| {
            r["health"] == "ok"
                && r["lastEvaluation"].as_str().is_some_and(|t| !t.starts_with("0001"))
        });
        if loaded.len() == rules.len() && evaluated.count() == rules.len() {
            break;
        }
        let bad: Vec<&Value> = loaded.iter().filter(|r| r["health"] == "err").collect();
        assert!(bad.is_empty(), "rules failing to evaluate: {bad:?}");
        assert!(Instant::now() < deadline, "rules not all evaluated: {loaded:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    // The load's end, two scrapes later: the latency quantiles over exactly the load's window
    // against the load generator's own (its durations in the server's buckets).
    tokio::time::sleep(LOAD / 4).await;
    stop.cancel();
    let mut timings = Timings::default();
    for task in tasks {
        let t = task.await.expect("load task");
        timings.route_reads.extend(t.route_reads);
        timings.registrations.extend(t.registrations);
    }
    tokio::time::sleep(SCRAPE * 5 / 2).await;
    let at = unix_now();
    let window = format!("{}s", (at - before_load).ceil() as u64);
    let request_bounds: Vec<f64> =
        namesrv::metrics::REQUEST_BOUNDS_NS.iter().map(|&ns| ns as f64 / 1e9).collect();
    let registration_bounds = namesrv::metrics::REGISTRATION_BUCKETS.to_vec();
    let namesrv_dashboard = dashboards()
        .into_iter()
        .find(|d| d.file == "rocketmq-namesrv.json")
        .expect("the nameserver's dashboard");
    let variables = resolve(&prom, &namesrv_dashboard).await;
    let mut compared = 0;
    for (title, expr) in &namesrv_dashboard.targets {
        let q = if expr.starts_with("histogram_quantile(0.99,") {
            0.99
        } else if expr.starts_with("histogram_quantile(0.5,") {
            0.5
        } else {
            continue;
        };
        let promql = substitute(expr, &variables, &window);
        for sample in prom.query(&promql, Some(at)).await {
            let request = sample["metric"]["request"].as_str();
            let (durations, bounds, what) = if expr.contains("registration_apply") {
                (&timings.registrations, &registration_bounds, "registrations")
            } else if expr.contains(r#"code="105""#) || request == Some("GET_ROUTEINFO_BY_TOPIC") {
                (&timings.route_reads, &request_bounds, "route reads")
            } else if request == Some("REGISTER_BROKER") {
                (&timings.registrations, &request_bounds, "registrations")
            } else {
                continue;
            };
            let server = value_of(&sample);
            let client = quantile(q, &bucketed(bounds, durations)).expect("client quantile");
            eprintln!(
                "  [{title}] {what}: p{} from Prometheus {:.1} µs, load generator {:.1} µs \
                 (raw {:.1} µs, {} requests)",
                q * 100.0,
                server * 1e6,
                client * 1e6,
                nearest_rank(q, durations).as_secs_f64() * 1e6,
                durations.len()
            );
            assert!(server.is_finite(), "[{title}] {what}: {promql} gives {server}");
            // Both interpolate inside the same bucket; Prometheus's arithmetic and ours may
            // differ in the last bits (0.004000000000000006 against 0.0040000000000000036 failed
            // a strict comparison), which is not a quantile above the client's.
            assert!(
                server <= client * (1.0 + 1e-9),
                "[{title}] {what}: p{q} {server} s above the load generator's {client} s"
            );
            compared += 1;
        }
    }
    assert!(compared >= 6, "p99 and p50 of route reads, registrations, apply time: {compared}");

    prom.child.kill().await.expect("kill prometheus");
    world.stop().await;
}

#[test]
fn operands_drop_thresholds_and_keep_both_sides() {
    assert_eq!(
        operands(r#"rocketmq_namesrv_ready == 0 or up{job="rocketmq-namesrv"} == 0"#),
        ["rocketmq_namesrv_ready", r#"up{job="rocketmq-namesrv"}"#]
    );
    assert_eq!(
        operands("max by (cluster) (x) != min by (cluster) (x)"),
        ["max by (cluster) (x)", "min by (cluster) (x)"]
    );
    assert_eq!(
        operands(r#"increase(a{r=~"x|y",s!="z"}[10m]) > 0"#),
        [r#"increase(a{r=~"x|y",s!="z"}[10m])"#]
    );
    assert_eq!(operands("sum(x) < bool 1"), ["sum(x)"]);
}
