//! The servers under test as child processes: how each kind is started (ours, the Java
//! nameserver, rocketmq-rust's, the ceiling), readiness (time to the first answered request),
//! and memory from `/proc/<pid>/status`.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use client::{Client, ClientConfig, Credentials};
use remoting::RequestCode;
use serde::{Deserialize, Serialize};

/// Which implementation a server is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// This project's `mqnamesrv`.
    Ours,
    /// This project's `mqnamesrv` with access control on and `authenticationMode=all`: every
    /// request signed and checked. S1 only (the cost of checking, side by side with `ours`).
    OursAuth,
    /// Apache RocketMQ's `NamesrvStartup` (Java).
    Java,
    /// mxsm/rocketmq-rust's `rocketmq-namesrv-rust`.
    RocketmqRust,
    /// The `ceiling` server: one pre-encoded answer to every frame.
    Ceiling,
}

impl Kind {
    /// The label used in tables and on the command line.
    pub fn label(self) -> &'static str {
        match self {
            Kind::Ours => "ours",
            Kind::OursAuth => "ours-auth",
            Kind::Java => "java",
            Kind::RocketmqRust => "rocketmq-rust",
            Kind::Ceiling => "ceiling",
        }
    }

    /// Parses a label (`ours`, `java`, `rocketmq-rust`/`rust`, `ceiling`).
    pub fn parse(s: &str) -> Option<Kind> {
        match s {
            "ours" => Some(Kind::Ours),
            "ours-auth" => Some(Kind::OursAuth),
            "java" => Some(Kind::Java),
            "rocketmq-rust" | "rust" => Some(Kind::RocketmqRust),
            "ceiling" => Some(Kind::Ceiling),
            _ => None,
        }
    }

    /// True for real nameservers (everything but the ceiling).
    pub fn is_namesrv(self) -> bool {
        self != Kind::Ceiling
    }

    /// True for the servers that run S1 only (the ceiling, and `ours-auth`).
    pub fn s1_only(self) -> bool {
        matches!(self, Kind::Ceiling | Kind::OursAuth)
    }

    /// What this server's simulated brokers sign their requests with (`ours-auth` only).
    pub fn broker_credentials(self) -> Option<Credentials> {
        (self == Kind::OursAuth).then(|| Credentials::new(AUTH_BROKER.0, AUTH_BROKER.1))
    }

    /// What this server's readers sign their requests with (`ours-auth` only).
    pub fn reader_credentials(self) -> Option<Credentials> {
        (self == Kind::OursAuth).then(|| Credentials::new(AUTH_READER.0, AUTH_READER.1))
    }
}

/// `ours-auth`'s broker account (access key, secret key).
const AUTH_BROKER: (&str, &str) = ("bench-broker", "bench-broker-secret");
/// `ours-auth`'s reader account (access key, secret key).
const AUTH_READER: (&str, &str) = ("bench-reader", "bench-reader-secret");

/// How to start one server.
#[derive(Debug, Clone)]
pub struct Spec {
    pub kind: Kind,
    /// The binary (`mqnamesrv`, `rocketmq-namesrv-rust`, `ceiling`) or, for Java, the `java` launcher.
    pub program: PathBuf,
    /// Java only: the directory of the RocketMQ jars.
    pub java_lib: Option<PathBuf>,
    /// Extra JVM options (Java only).
    pub jvm_opts: Vec<String>,
    /// Ceiling only: the file holding the body of the answer.
    pub ceiling_body: Option<PathBuf>,
    /// Ours only: extra `key=value` lines for its properties file.
    pub extra_config: Vec<String>,
}

/// Shaded logback config for the Java nameserver: async file appender in the run directory,
/// like the distribution's `rmq.namesrv.logback.xml` (INFO, async).
const JAVA_LOGBACK: &str = r#"<configuration>
  <appender name="FILE" class="org.apache.rocketmq.logging.ch.qos.logback.core.FileAppender">
    <file>${user.home}/namesrv.log</file>
    <encoder><pattern>%d{HH:mm:ss.SSS} %-5p [%t] %c{0} - %m%n</pattern></encoder>
  </appender>
  <appender name="ASYNC" class="org.apache.rocketmq.logging.ch.qos.logback.classic.AsyncAppender">
    <appender-ref ref="FILE"/>
  </appender>
  <root level="INFO"><appender-ref ref="ASYNC"/></root>
</configuration>
"#;

/// Pids of the servers running now, so an interrupted suite can stop them ([`kill_all`]).
static RUNNING: std::sync::Mutex<Vec<u32>> = std::sync::Mutex::new(Vec::new());

fn running() -> std::sync::MutexGuard<'static, Vec<u32>> {
    RUNNING.lock().unwrap_or_else(|e| e.into_inner())
}

/// Kills every server process started by [`Server::spawn`] that still runs (SIGKILL).
pub fn kill_all() {
    for pid in running().drain(..) {
        let _ = Command::new("kill").arg("-9").arg(pid.to_string()).status();
    }
}

/// A running server process.
pub struct Server {
    pub kind: Kind,
    pub addr: String,
    pub pid: u32,
    child: Child,
    spawned: Instant,
    dir: PathBuf,
}

impl Server {
    /// Starts `spec` on a free 127.0.0.1 port, with its files (config, logs, KV store) in `dir`.
    pub fn spawn(spec: &Spec, dir: &Path) -> anyhow::Result<Server> {
        fs::create_dir_all(dir).with_context(|| format!("create {}", dir.display()))?;
        let port = free_port()?;
        let addr = format!("127.0.0.1:{port}");
        let kv = dir.join("kvConfig.json");
        let mut cmd = match spec.kind {
            Kind::Ours | Kind::OursAuth => {
                let conf = dir.join("namesrv.properties");
                // HTTP on (as deployed: metrics recorded, /metrics served) on a free port.
                let http_port = free_port()?;
                let mut text = format!(
                    "listenPort={port}\nbindAddress=127.0.0.1\nhttpListenPort={http_port}\nkvConfigPath={}\n",
                    kv.display()
                );
                for line in &spec.extra_config {
                    text.push_str(line);
                    text.push('\n');
                }
                if spec.kind == Kind::OursAuth {
                    let accounts = dir.join("auth.yml");
                    fs::write(
                        &accounts,
                        format!(
                            "accounts:\n  - {{accessKey: {}, secretKey: {}, role: broker}}\n  - {{accessKey: {}, secretKey: {}, role: reader}}\n",
                            AUTH_BROKER.0, AUTH_BROKER.1, AUTH_READER.0, AUTH_READER.1
                        ),
                    )?;
                    text.push_str(&format!(
                        "authenticationEnabled=true\nauthenticationMode=all\nauthConfigPath={}\n",
                        accounts.display()
                    ));
                }
                fs::write(&conf, text)?;
                let mut c = Command::new(&spec.program);
                c.arg("-c").arg(&conf);
                c
            }
            Kind::Java => {
                let conf = dir.join("namesrv.properties");
                fs::write(&conf, format!("listenPort={port}\nkvConfigPath={}\n", kv.display()))?;
                let logback = dir.join("rmq.logback.xml");
                fs::write(&logback, JAVA_LOGBACK)?;
                let lib = spec.java_lib.as_ref().context("the Java nameserver needs --java-lib")?;
                let mut c = Command::new(&spec.program);
                c.args(&spec.jvm_opts)
                    .arg(format!("-Duser.home={}", dir.display()))
                    .arg(format!("-Drmq.logback.configurationFile={}", logback.display()))
                    .arg("-cp")
                    .arg(format!("{}/*", lib.display()))
                    .arg("org.apache.rocketmq.namesrv.NamesrvStartup")
                    .arg("-c")
                    .arg(&conf);
                c
            }
            Kind::RocketmqRust => {
                let mut c = Command::new(&spec.program);
                c.arg("--listenPort")
                    .arg(port.to_string())
                    .arg("--bindAddress")
                    .arg("127.0.0.1")
                    .arg("--rocketmqHome")
                    .arg(dir)
                    .arg("--kvConfigPath")
                    .arg(&kv);
                c
            }
            Kind::Ceiling => {
                let body =
                    spec.ceiling_body.as_ref().context("the ceiling server needs a body file")?;
                let mut c = Command::new(&spec.program);
                c.arg("--addr").arg(&addr).arg("--body-file").arg(body);
                c
            }
        };
        let log = fs::File::create(dir.join("server.log"))?;
        cmd.current_dir(dir)
            .env("ROCKETMQ_HOME", dir)
            .env("HOME", dir)
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log);
        let spawned = Instant::now();
        let child = cmd
            .spawn()
            .with_context(|| format!("start {} ({})", spec.kind.label(), spec.program.display()))?;
        let pid = child.id();
        running().push(pid);
        Ok(Server { kind: spec.kind, addr, pid, child, spawned, dir: dir.to_owned() })
    }

    /// Waits until the server answers a request (GET_BROKER_CLUSTER_INFO, any code), polling
    /// every millisecond; returns the time from spawn to that first answer.
    pub async fn wait_ready(&mut self, timeout: Duration) -> anyhow::Result<Duration> {
        let config = ClientConfig {
            connect_timeout: Duration::from_millis(200),
            request_timeout: Duration::from_millis(500),
            ..ClientConfig::default()
        };
        let client = Client::with_config(&self.addr, config)?;
        let deadline = self.spawned + timeout;
        loop {
            if let Some(status) = self.child.try_wait()? {
                bail!(
                    "{} exited with {status} before answering:\n{}",
                    self.kind.label(),
                    self.log_tail()
                );
            }
            let req = client.request(RequestCode::GetBrokerClusterInfo);
            if client.invoke(req).await.is_ok() {
                let took = self.spawned.elapsed();
                client.close().await;
                return Ok(took);
            }
            if Instant::now() > deadline {
                bail!(
                    "{} did not answer within {timeout:?}:\n{}",
                    self.kind.label(),
                    self.log_tail()
                );
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }

    /// Current memory of the process.
    pub fn memory(&self) -> Option<Memory> {
        Memory::of(self.pid)
    }

    /// True while the process runs.
    pub fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// The last lines of the server's log.
    pub fn log_tail(&self) -> String {
        let text = fs::read_to_string(self.dir.join("server.log")).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(20)..].join("\n")
    }

    /// Kills the process and waits for it.
    pub fn stop(self) {
        // Drop does it.
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        running().retain(|p| *p != self.pid);
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Resident memory of a process, from `/proc/<pid>/status`, in KiB.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Memory {
    /// `VmRSS`: resident now.
    pub rss_kib: u64,
    /// `VmHWM`: peak resident since start.
    pub hwm_kib: u64,
}

impl Memory {
    /// Reads `/proc/<pid>/status`; `None` when the process is gone.
    pub fn of(pid: u32) -> Option<Memory> {
        let text = fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
        Some(Self::parse(&text))
    }

    fn parse(status: &str) -> Memory {
        let field = |name: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(name))
                .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
                .unwrap_or(0)
        };
        Memory { rss_kib: field("VmRSS:"), hwm_kib: field("VmHWM:") }
    }
}

/// Samples a process's VmRSS every `every` and keeps the maximum, until dropped.
pub struct RssSampler {
    max: Arc<AtomicU64>,
    task: tokio::task::JoinHandle<()>,
}

impl RssSampler {
    pub fn start(pid: u32, every: Duration) -> Self {
        let max = Arc::new(AtomicU64::new(0));
        let m = max.clone();
        let task = tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            loop {
                tick.tick().await;
                if let Some(mem) = Memory::of(pid) {
                    m.fetch_max(mem.rss_kib, Ordering::Relaxed);
                }
            }
        });
        Self { max, task }
    }

    /// The highest VmRSS seen so far, in KiB.
    pub fn max_kib(&self) -> u64 {
        self.max.load(Ordering::Relaxed)
    }
}

impl Drop for RssSampler {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A port on 127.0.0.1 that was free a moment ago.
pub fn free_port() -> anyhow::Result<u16> {
    let l = std::net::TcpListener::bind("127.0.0.1:0")?;
    Ok(l.local_addr()?.port())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_is_read_from_proc_status_lines() {
        let status = "Name:\tx\nVmHWM:\t  123456 kB\nVmRSS:\t   65432 kB\nThreads:\t3\n";
        assert_eq!(Memory::parse(status), Memory { rss_kib: 65432, hwm_kib: 123_456 });
        let me = Memory::of(std::process::id()).expect("own /proc status");
        assert!(me.rss_kib > 0 && me.hwm_kib >= me.rss_kib);
    }

    #[test]
    fn kinds_round_trip_through_labels() {
        for k in [Kind::Ours, Kind::OursAuth, Kind::Java, Kind::RocketmqRust, Kind::Ceiling] {
            assert_eq!(Kind::parse(k.label()), Some(k));
        }
        assert_eq!(Kind::parse("rust"), Some(Kind::RocketmqRust));
        assert_eq!(Kind::parse("go"), None);
    }
}
