//! `nsbench`: the nameserver benchmark. `suite` starts the servers and runs S1–S6 against each,
//! writing `latest.{json,md,svg}`; `load` drives one running server (for profiling);
//! `report` re-renders the Markdown and the chart from a `latest.json`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use bench::load::{Fleet, Readers};
use bench::phase;
use bench::report;
use bench::scale::{self, ChangingBody, Point, ScaleReport, ScaleSizes};
use bench::server::{Kind, Spec};
use bench::suite::{self, EnvInfo, Report, Sizes};
use bench::topology::{Shape, Table, Topology};
use clap::{Args, Parser, Subcommand};

#[derive(Parser)]
#[command(about = "RocketMQ nameserver benchmark (issue #6)")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Start every server, run S1–S6 against each, write latest.{json,md,svg}.
    Suite(Box<SuiteArgs>),
    /// Populate one running nameserver and read from it (S1; S2 with --churn-ms).
    Load(Box<LoadArgs>),
    /// S7, the scale scenario (issue #25): every point against a fresh instance of each
    /// server; writes scale.{json,md,svg}.
    Scale(Box<ScaleArgs>),
    /// Re-render latest.md and latest.svg from a latest.json (or scale.md and scale.svg from a
    /// scale.json).
    Report {
        /// The JSON written by `suite` or `scale`.
        #[arg(long)]
        json: PathBuf,
        /// Where to write latest.md and latest.svg.
        #[arg(long)]
        out: PathBuf,
    },
}

/// Every size; unset ones come from the full or the --quick profile.
#[derive(Args, Clone, Default)]
struct SizeFlags {
    /// Small sizes and short phases (a smoke run).
    #[arg(long)]
    quick: bool,
    #[arg(long)]
    clusters: Option<usize>,
    #[arg(long)]
    brokers: Option<usize>,
    /// Topics per cluster.
    #[arg(long)]
    topics: Option<usize>,
    /// Reader connections (S1/S2).
    #[arg(long)]
    conns: Option<usize>,
    /// Requests in flight per reader connection (S1/S2).
    #[arg(long)]
    depth: Option<usize>,
    #[arg(long)]
    warmup_ms: Option<u64>,
    /// Unmeasured reads per server before the first phase (JIT warm-up).
    #[arg(long)]
    prewarm_ms: Option<u64>,
    /// Measured time of S1 and S2, per server and round.
    #[arg(long)]
    measure_ms: Option<u64>,
    /// S2: longest pause between two registrations of a broker.
    #[arg(long)]
    churn_ms: Option<u64>,
    /// S3: topics of the big broker.
    #[arg(long)]
    big_topics: Option<usize>,
    #[arg(long)]
    big_registrations: Option<usize>,
    #[arg(long)]
    s3_conns: Option<usize>,
    /// S3: total paced read rate (req/s).
    #[arg(long)]
    s3_rate: Option<f64>,
    #[arg(long)]
    s5_clients: Option<usize>,
    #[arg(long)]
    s5_readers: Option<usize>,
    #[arg(long)]
    s5_measure_ms: Option<u64>,
    #[arg(long)]
    s6_starts: Option<usize>,
    #[arg(long)]
    rounds: Option<usize>,
    /// Paired S1 rounds of ours with metrics on and off (0: skip).
    #[arg(long)]
    metrics_rounds: Option<usize>,
    #[arg(long)]
    seed: Option<u64>,
    /// S1/S2 readers: `raw` (lean pipelined reader) or `client` (our full client).
    #[arg(long)]
    reader: Option<String>,
    /// Before each measured phase wait until other processes use at most this many cores…
    #[arg(long)]
    quiet_cores: Option<f64>,
    /// … for at most this many seconds (0 = do not wait).
    #[arg(long)]
    quiet_wait_s: Option<u64>,
}

impl SizeFlags {
    fn sizes(&self) -> Sizes {
        let mut s = if self.quick { Sizes::quick() } else { Sizes::full() };
        macro_rules! set {
            ($($flag:ident => $($field:ident).+),* $(,)?) => { $( if let Some(v) = self.$flag { s.$($field).+ = v; } )* };
        }
        set!(
            clusters => shape.clusters, brokers => shape.brokers_per_cluster, topics => shape.topics_per_cluster,
            conns => conns, depth => depth, warmup_ms => warmup_ms, prewarm_ms => prewarm_ms, measure_ms => measure_ms, churn_ms => churn_ms,
            big_topics => big_topics, big_registrations => big_registrations, s3_conns => s3_conns, s3_rate => s3_rate,
            s5_clients => s5_clients, s5_readers => s5_readers, s5_measure_ms => s5_measure_ms, s6_starts => s6_starts,
            rounds => rounds, metrics_rounds => metrics_rounds, seed => seed, quiet_cores => quiet_cores, quiet_wait_s => quiet_wait_s,
        );
        if let Some(r) = &self.reader {
            s.reader = r.clone();
        }
        s
    }
}

#[derive(Args)]
struct SuiteArgs {
    #[command(flatten)]
    sizes: SizeFlags,
    #[command(flatten)]
    servers: ServerFlags,
}

/// The servers under test and where their results go.
#[derive(Args)]
struct ServerFlags {
    /// Servers to run: ours, ours-auth (ours with authenticationMode=all, S1 only), java,
    /// rocketmq-rust, ceiling (comma separated).
    #[arg(
        long,
        default_value = "ours,ours-auth,java,rocketmq-rust,ceiling",
        value_delimiter = ','
    )]
    servers: Vec<String>,
    /// Our `mqnamesrv` binary.
    #[arg(long)]
    ours: Option<PathBuf>,
    /// The `java` launcher.
    #[arg(long, default_value = "java")]
    java: PathBuf,
    /// Directory of the Apache RocketMQ jars (rocketmq-namesrv and its dependencies).
    #[arg(long)]
    java_lib: Option<PathBuf>,
    /// JVM options of the Java nameserver.
    #[arg(long, default_value = "-Xms1g -Xmx1g -XX:+UseG1GC", allow_hyphen_values = true)]
    jvm_opts: String,
    /// rocketmq-rust's `rocketmq-namesrv-rust` binary.
    #[arg(long)]
    rocketmq_rust: Option<PathBuf>,
    /// The `ceiling` binary.
    #[arg(long)]
    ceiling: Option<PathBuf>,
    /// Where the results (latest.* or scale.*) go.
    #[arg(long, default_value = "bench/results")]
    out: PathBuf,
    /// Server run directories (configs, logs).
    #[arg(long)]
    workdir: Option<PathBuf>,
    /// `name=value` lines for the report's set-up section (e.g. peer versions).
    #[arg(long = "note")]
    notes: Vec<String>,
}

/// S7's sizes; unset ones come from the full or the --quick profile.
#[derive(Args)]
struct ScaleArgs {
    /// The two smallest points, short phases (a smoke run).
    #[arg(long)]
    quick: bool,
    /// Points to run (t10k, t100k, t1m, b32, b200, b2000; comma separated).
    #[arg(long, value_delimiter = ',')]
    points: Vec<String>,
    #[arg(long)]
    conns: Option<usize>,
    #[arg(long)]
    depth: Option<usize>,
    /// Registrations in flight during the cold start.
    #[arg(long)]
    in_flight: Option<usize>,
    /// Cold starts per server, each against a fresh instance (the median is reported).
    #[arg(long)]
    cold_starts: Option<usize>,
    #[arg(long)]
    warmup_ms: Option<u64>,
    /// Measured time of the calm reads and of each churn.
    #[arg(long)]
    measure_ms: Option<u64>,
    /// Longest pause between two registrations of a broker during the churns.
    #[arg(long)]
    churn_ms: Option<u64>,
    /// Rounds of each churn (calm reads, then the churn's; the median round is judged) at the
    /// point with the most topics.
    #[arg(long)]
    churn_rounds: Option<usize>,
    #[arg(long)]
    probe_topics: Option<usize>,
    #[arg(long)]
    probe_reps: Option<usize>,
    #[arg(long)]
    seed: Option<u64>,
    #[arg(long)]
    quiet_cores: Option<f64>,
    #[arg(long)]
    quiet_wait_s: Option<u64>,
    #[command(flatten)]
    servers: ServerFlags,
}

impl ScaleArgs {
    fn sizes(&self) -> anyhow::Result<ScaleSizes> {
        let mut s = if self.quick { ScaleSizes::quick() } else { ScaleSizes::full() };
        macro_rules! set {
            ($($flag:ident),* $(,)?) => { $( if let Some(v) = self.$flag { s.$flag = v; } )* };
        }
        set!(
            conns,
            depth,
            in_flight,
            cold_starts,
            warmup_ms,
            measure_ms,
            churn_ms,
            churn_rounds,
            probe_topics,
            probe_reps,
            seed,
            quiet_cores,
            quiet_wait_s
        );
        if !self.points.is_empty() {
            let all = Point::all();
            s.points = self
                .points
                .iter()
                .map(|n| {
                    all.iter().find(|p| p.name == n.trim()).cloned().with_context(|| {
                        format!("unknown point {n:?} (t10k, t100k, t1m, b32, b200, b2000)")
                    })
                })
                .collect::<anyhow::Result<_>>()?;
        }
        Ok(s)
    }
}

#[derive(Args)]
struct LoadArgs {
    #[command(flatten)]
    sizes: SizeFlags,
    /// The nameserver to load.
    #[arg(long, default_value = "127.0.0.1:9876")]
    addr: String,
    /// Do not register brokers (the server is already populated by an earlier run).
    #[arg(long)]
    no_populate: bool,
    /// Also run S2 (churn) after S1.
    #[arg(long)]
    churn: bool,
    /// Skip S1 (e.g. `--churn --skip-s1` to profile S2 alone).
    #[arg(long)]
    skip_s1: bool,
    /// With --churn: every re-registration changes 1 % of the broker's topics (S7's
    /// real-change churn) instead of bumping the DataVersion alone.
    #[arg(long)]
    changing: bool,
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let rt = bench::cli_runtime()?;
    match cli.cmd {
        Cmd::Suite(a) => rt.block_on(async move {
            // On Ctrl-C / SIGTERM stop the servers too (they are not killed with us).
            let mut term =
                tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
            tokio::select! {
                r = suite_cmd(*a) => r,
                _ = tokio::signal::ctrl_c() => interrupted(),
                _ = term.recv() => interrupted(),
            }
        }),
        Cmd::Load(a) => rt.block_on(load_cmd(*a)),
        Cmd::Scale(a) => rt.block_on(async move {
            let mut term =
                tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
            tokio::select! {
                r = scale_cmd(*a) => r,
                _ = tokio::signal::ctrl_c() => interrupted(),
                _ = term.recv() => interrupted(),
            }
        }),
        Cmd::Report { json, out } => {
            let bytes = std::fs::read(&json).with_context(|| format!("read {}", json.display()))?;
            match serde_json::from_slice::<Report>(&bytes) {
                Ok(r) => write_report(&r, &out),
                Err(_) => write_scale_report(&serde_json::from_slice(&bytes)?, &out),
            }
        }
    }
}

fn interrupted() -> anyhow::Result<()> {
    bench::server::kill_all();
    anyhow::bail!("interrupted; servers stopped")
}

fn say(line: &str) {
    println!("{line}");
}

/// The specs of the servers `f` names.
fn specs(f: &ServerFlags) -> anyhow::Result<Vec<Spec>> {
    let mut specs = Vec::new();
    for name in &f.servers {
        let kind = Kind::parse(name.trim()).with_context(|| format!("unknown server {name:?}"))?;
        // Absolute paths: servers run in their own directories.
        let need = |p: &Option<PathBuf>, flag: &str| {
            let p = p.clone().with_context(|| format!("{} needs --{flag}", kind.label()))?;
            std::fs::canonicalize(&p).with_context(|| format!("--{flag} {}", p.display()))
        };
        let plain = |program| Spec {
            kind,
            program,
            java_lib: None,
            jvm_opts: vec![],
            ceiling_body: None,
            extra_config: Vec::new(),
        };
        specs.push(match kind {
            Kind::Ours | Kind::OursAuth => plain(need(&f.ours, "ours")?),
            Kind::Java => Spec {
                java_lib: Some(need(&f.java_lib, "java-lib")?),
                jvm_opts: f.jvm_opts.split_whitespace().map(str::to_owned).collect(),
                ..plain(std::fs::canonicalize(&f.java).unwrap_or_else(|_| f.java.clone()))
            },
            Kind::RocketmqRust => plain(need(&f.rocketmq_rust, "rocketmq-rust")?),
            Kind::Ceiling => plain(need(&f.ceiling, "ceiling")?),
        });
    }
    Ok(specs)
}

fn workdir(f: &ServerFlags) -> anyhow::Result<PathBuf> {
    let workdir = match &f.workdir {
        Some(w) => w.clone(),
        None => std::env::temp_dir().join(format!("nsbench-{}", std::process::id())),
    };
    std::fs::create_dir_all(&workdir)?;
    say(&format!("nsbench: servers {:?}, work dir {}", f.servers, workdir.display()));
    Ok(workdir)
}

/// A run under way: what it started from (the commit and whether the tree was clean are read
/// at the start, when the servers were built: an edit made while it runs is not in them).
struct Run {
    started: Instant,
    load_before: String,
    commit: String,
    dirty: bool,
}

impl Run {
    fn start() -> Self {
        let load_before = suite::loadavg();
        say(&format!("load average before: {load_before}"));
        let (commit, dirty) = git_state();
        Self { started: Instant::now(), load_before, commit, dirty }
    }

    /// The run's environment, now that it ended.
    fn env(self, f: &ServerFlags, quick: bool) -> EnvInfo {
        EnvInfo {
            loadavg_before: self.load_before,
            loadavg_after: suite::loadavg(),
            quick,
            wall_secs: self.started.elapsed().as_secs_f64(),
            ..env_info(f, self.commit, self.dirty)
        }
    }
}

/// The commit checked out, and whether tracked files differ from it.
fn git_state() -> (String, bool) {
    let dirty = !run("git", &["status", "--porcelain", "--untracked-files=no"]).is_empty();
    (run("git", &["rev-parse", "HEAD"]), dirty)
}

async fn suite_cmd(a: SuiteArgs) -> anyhow::Result<()> {
    let sizes = a.sizes.sizes();
    let specs = specs(&a.servers)?;
    let workdir = workdir(&a.servers)?;
    let run = Run::start();
    let servers = suite::run(&specs, &sizes, &workdir, &say).await?;
    let env = run.env(&a.servers, a.sizes.quick);
    let report = Report { env, sizes, servers };
    let out = &a.servers.out;
    std::fs::create_dir_all(out)?;
    std::fs::write(out.join("latest.json"), serde_json::to_vec_pretty(&report)?)?;
    write_report(&report, out)?;
    println!("\n{}", report::markdown(&report).split("\n## Figures").next().unwrap_or_default());
    say(&format!(
        "wrote {}/latest.{{json,md,svg}} in {:.0} s",
        out.display(),
        report.env.wall_secs
    ));
    let _ = std::fs::remove_dir_all(&workdir);
    Ok(())
}

async fn scale_cmd(a: ScaleArgs) -> anyhow::Result<()> {
    let sizes = a.sizes()?;
    let specs = specs(&a.servers)?;
    let workdir = workdir(&a.servers)?;
    let run = Run::start();
    let points = scale::run(&specs, &sizes, &workdir, &say).await?;
    let env = run.env(&a.servers, a.quick);
    let report = ScaleReport { env, sizes, points };
    let out = &a.servers.out;
    std::fs::create_dir_all(out)?;
    std::fs::write(out.join("scale.json"), serde_json::to_vec_pretty(&report)?)?;
    write_scale_report(&report, out)?;
    say(&format!("wrote {}/scale.{{json,md,svg}} in {:.0} s", out.display(), report.env.wall_secs));
    let _ = std::fs::remove_dir_all(&workdir);
    Ok(())
}

fn write_scale_report(r: &ScaleReport, out: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(out)?;
    std::fs::write(out.join("scale.md"), scale::markdown(r))?;
    scale::chart(r, &out.join("scale.svg"))?;
    scale::embed(out)?;
    Ok(())
}

fn write_report(r: &Report, out: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(out)?;
    std::fs::write(out.join("latest.md"), report::markdown(r))?;
    bench::chart::chart(r, &out.join("latest.svg"))?;
    scale::embed(out)?;
    Ok(())
}

/// What `prog args` printed (stdout, then stderr), trimmed; empty when it could not run.
fn run(prog: &str, args: &[&str]) -> String {
    Command::new(prog)
        .args(args)
        .output()
        .ok()
        .map(|o| {
            format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
                .trim()
                .to_owned()
        })
        .unwrap_or_default()
}

/// The machine and servers of a run that started at `commit` (`dirty`: tracked files
/// differed from it).
fn env_info(a: &ServerFlags, commit: String, dirty: bool) -> EnvInfo {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines().find_map(|l| {
                l.strip_prefix("model name")
                    .map(|v| v.trim_start_matches([' ', '\t', ':']).to_owned())
            })
        })
        .unwrap_or_default();
    let java = if a.servers.iter().any(|s| s == "java") {
        run(&a.java.display().to_string(), &["-version"])
            .lines()
            .next()
            .unwrap_or_default()
            .to_owned()
    } else {
        "not used".to_owned()
    };
    EnvInfo {
        commit,
        dirty,
        date: run("date", &["-u", "+%Y-%m-%d %H:%M UTC"]),
        cpu,
        cores: std::thread::available_parallelism().map_or(0, |n| n.get()),
        kernel: std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .unwrap_or_default()
            .trim()
            .to_owned(),
        java,
        versions: a
            .notes
            .iter()
            .map(|n| {
                n.split_once('=')
                    .map_or((n.clone(), String::new()), |(k, v)| (k.to_owned(), v.to_owned()))
            })
            .collect(),
        quick: false,
        wall_secs: 0.0,
        loadavg_before: String::new(),
        loadavg_after: String::new(),
    }
}

async fn load_cmd(a: LoadArgs) -> anyhow::Result<()> {
    let sizes = a.sizes.sizes();
    let shape = Shape { ..sizes.shape };
    let topology = Topology::new(shape, sizes.seed);
    let bodies = topology.bodies();
    let fleet = Fleet::new(&a.addr, &topology, &bodies, None)?;
    if !a.no_populate {
        let t = Instant::now();
        fleet.populate(8).await?;
        say(&format!("populated {} brokers in {:.2} s", fleet.len(), t.elapsed().as_secs_f64()));
    }
    let readers = Readers::closed_loop(sizes.depth, sizes.warmup_ms, sizes.measure_ms);
    let mode = phase::ReadMode::new(&sizes.reader, &topology.topics, None)?;
    if !a.skip_s1 {
        let (rec, elapsed) =
            phase::read_phase(&a.addr, sizes.conns, &topology, &mode, &readers, sizes.seed).await?;
        say(&format!("S1 {}", phase::line(&rec.summary(elapsed))));
    }
    if a.churn {
        if a.changing {
            let per_cluster = shape.brokers_per_cluster;
            let tables = (0..shape.clusters)
                .map(|c| ChangingBody::new(bodies[c].clone(), topology.cluster_topics(c)))
                .collect::<anyhow::Result<Vec<_>>>()?;
            let tables: Vec<Arc<dyn Table>> =
                tables.into_iter().map(|t| Arc::new(t) as Arc<dyn Table>).collect();
            fleet.set_tables(|j| tables[j / per_cluster].clone()).await;
        }
        let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
        let from = tokio::time::Instant::now() + readers.warmup;
        let churn = fleet.churn(Duration::from_millis(sizes.churn_ms), from, stop_rx, sizes.seed);
        let r = phase::read_phase(&a.addr, sizes.conns, &topology, &mode, &readers, sizes.seed + 1)
            .await;
        stop_tx.send_replace(true);
        let regs = churn.await?;
        let (rec, elapsed) = r?;
        say(&format!("S2 {}", phase::line(&rec.summary(elapsed))));
        say(&format!("S2 registrations {}", phase::line(&regs.summary(elapsed))));
    }
    fleet.close().await;
    Ok(())
}
