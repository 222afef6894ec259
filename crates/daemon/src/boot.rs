//! The binaries' start-up, shared by `mqnamesrv` and `mqcontroller`: [`main`] turns a parsed
//! command line into an exit code (print and exit for `-p`/`-h`, logging, the load message, the
//! runtime, the error line), and [`namesrv`] / [`controller`] are what each binary serves, with
//! the boot lines the interop and reliability suites wait for.
//!
//! Exit codes: 0 after `-p`, `-h` or a graceful stop; the command line's own code for a usage
//! (1) or configuration (255) error (`conf::cli::CliError::exit_code`); 255 when start-up fails.

use std::future::Future;
use std::process::ExitCode;
use std::sync::Arc;

use conf::cli::{Action, CliError};
use tokio_util::sync::CancellationToken;

use crate::{listen, Daemon, RunError};

/// Why a binary could not start (printed on stderr with its causes, then exit 255).
#[derive(Debug, thiserror::Error)]
pub enum BootError {
    #[error(transparent)]
    Run(#[from] RunError),
    #[error(transparent)]
    Bind(#[from] listen::BindError),
    #[error(transparent)]
    Io(#[from] std::io::Error),
    #[error(transparent)]
    ControllerBind(#[from] ::controller::BindError),
    #[error("cannot start the controller")]
    ControllerStart(#[source] ::controller::StartError),
}

/// A server binary's `main`: carries out `parsed` (the binary's own command line), printing
/// `-p`/`-h` output or the command-line error; otherwise sets up logging (`RUST_LOG`), prints
/// the configuration's `load_message`, and runs `serve` on a multi-threaded runtime.
pub fn main<C, F>(
    parsed: Result<Action<C>, CliError>,
    load_message: impl FnOnce(&C) -> Option<String>,
    serve: impl FnOnce(C) -> F,
) -> ExitCode
where
    F: Future<Output = Result<(), BootError>>,
{
    let config = match parsed {
        Ok(Action::Run(config)) => config,
        Ok(Action::Print(text) | Action::Help(text)) => {
            print!("{text}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(u8::try_from(e.exit_code() & 0xFF).unwrap_or(1));
        }
    };
    conf::cli::init_logging("info,openraft=warn");
    if let Some(message) = load_message(&config) {
        println!("{message}");
    }
    // A worker that parks hands back its free pages after each `allocator::release` (`purge`).
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    builder.enable_all().on_thread_park(|| {
        allocator::on_thread_park();
    });
    let runtime = match builder.build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("cannot start the runtime: {e}");
            return ExitCode::from(255);
        }
    };
    match runtime.block_on(serve(config)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{}", with_causes(&e));
            ExitCode::from(255)
        }
    }
}

/// `error: cause: cause …`, each cause once.
fn with_causes(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(e) = cause {
        text.push_str(": ");
        text.push_str(&e.to_string());
        cause = e.source();
    }
    text
}

/// `mqnamesrv`: applies `transparentHugePages`, builds the nameserver (every key checked, the KV
/// store, TLS and the route snapshot loaded before any port opens: the first client finds the
/// routes already there), binds, prints the boot lines and serves until SIGTERM or SIGINT,
/// handing freed memory back to the OS whenever the registrations stop (`purge`).
pub async fn namesrv(config: namesrv::Config) -> Result<(), BootError> {
    crate::huge_pages::allow(config.transparent_huge_pages);
    let serialize_type = config.effective_serialize_type();
    let daemon = tokio::task::block_in_place(|| Daemon::build(config))?;
    let listeners = listen::bind(&daemon.state().config.snapshot()).await?;
    let local = listeners.remoting.local_addr()?;
    let http = listeners.http.as_ref().map(tokio::net::TcpListener::local_addr).transpose()?;
    let shutdown = conf::cli::shutdown_signal();
    println!(
        "The Name Server boot success. serializeType={}, address {local}",
        match serialize_type {
            remoting::SerializeType::Json => "JSON",
            remoting::SerializeType::RocketMq => "ROCKETMQ",
        }
    );
    match http {
        Some(addr) => println!("HTTP (metrics, probes, API, dashboard) on http://{addr}/"),
        None => println!("HTTP listener disabled (httpListenPort=0)"),
    }
    let stop_purge = CancellationToken::new();
    let purge = tokio::spawn(crate::purge::run(
        daemon.state().clone(),
        allocator::release,
        stop_purge.clone(),
    ));
    daemon.serve(listeners, shutdown).await;
    stop_purge.cancel();
    let _ = purge.await;
    Ok(())
}

/// `mqcontroller`: binds the peer port and the HTTP listener (one that cannot be bound is
/// logged, and the node serves without it), starts the node, prints the boot lines and serves
/// until SIGTERM or SIGINT.
pub async fn controller(config: ::controller::Config) -> Result<(), BootError> {
    let listener = ::controller::bind(&config).await?;
    let local = listener.local_addr()?;
    let http = match crate::standalone::bind_http(&config).await {
        Ok(http) => http,
        Err(e) => {
            tracing::error!(error = %e, "controller HTTP listener (metrics, probes) not started; the node serves without it");
            None
        }
    };
    let http_addr = http.as_ref().map(tokio::net::TcpListener::local_addr).transpose()?;
    let http_off = config.http_listen_port == 0;
    let self_id = config.controller_dleger_self_id.clone().unwrap_or_default();
    let group = config.group().to_owned();
    let guard = ::controller::Guard::from_config(&config)
        .map_err(|e| BootError::ControllerStart(e.into()))?;
    let node = ::controller::Node::start(Arc::new(::controller::SharedConfig::new(config)), None)
        .await
        .map_err(BootError::ControllerStart)?;
    // Handlers first: a SIGTERM right after the boot line is a graceful stop.
    let shutdown = conf::cli::shutdown_signal();
    println!("The Controller Server boot success. serializeType=JSON, group {group}, id {self_id}, address {local}");
    match http_addr {
        Some(addr) => println!("HTTP (metrics, probes) on http://{addr}/"),
        None if http_off => println!("HTTP listener disabled (httpListenPort=0)"),
        None => println!("HTTP listener not serving (see the error above)"),
    }
    crate::standalone::serve(listener, http, node, guard, shutdown).await;
    Ok(())
}
