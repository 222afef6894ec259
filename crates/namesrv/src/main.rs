//! `mqnamesrv`: parse the command line, set up logging, bind, and run the nameserver.

use std::process::ExitCode;

use namesrv::cli::{parse_cli, CliAction};
use namesrv::Config;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let config = match parse_cli(std::env::args_os()) {
        Ok(CliAction::Run(config)) => config,
        Ok(CliAction::Print(text) | CliAction::Help(text)) => {
            print!("{text}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(u8::try_from(e.exit_code() & 0xFF).unwrap_or(1));
        }
    };
    conf::cli::init_logging("info,openraft=warn");
    if let Some(message) = config.load_message() {
        println!("{message}");
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("cannot start the runtime: {e}");
            return ExitCode::from(255);
        }
    };
    match runtime.block_on(serve(config)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{e:#}");
            ExitCode::from(255)
        }
    }
}

async fn serve(config: Config) -> anyhow::Result<()> {
    // Every config check before any port is taken (a bad key is reported as itself).
    let embedded = namesrv::controller::controller_config(&config)?;
    let serialize_type = config.effective_serialize_type();
    // KV store, TLS and the route snapshot are loaded before the ports open: the first client
    // finds the routes already there.
    let state = tokio::task::block_in_place(|| namesrv::build_state(config))?;
    let listeners = namesrv::listen::bind(&state.config.snapshot()).await?;
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
    let stop = tokio_util::sync::CancellationToken::new();
    let controller =
        embedded.map(|c| namesrv::controller::spawn(c, None, stop.clone().cancelled_owned()));
    let signal = stop.clone();
    namesrv::server::serve(listeners, state, async move {
        shutdown.await;
        signal.cancel();
    })
    .await;
    stop.cancel();
    if let Some(task) = controller {
        let _ = tokio::time::timeout(std::time::Duration::from_secs(10), task).await;
    }
    Ok(())
}
