//! `mqnamesrv`: parse the command line, set up logging, bind, and run the nameserver.

use std::net::{IpAddr, SocketAddr};
use std::process::ExitCode;

use anyhow::Context;
use namesrv::cli::{parse_cli, CliAction};
use namesrv::Config;
use tracing_subscriber::EnvFilter;

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
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
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

/// The listen address from `bindAddress` (IPv4, IPv6 with or without brackets, or a host name)
/// and `listenPort`.
async fn listen_addr(config: &Config) -> anyhow::Result<SocketAddr> {
    let host = config.bind_address.trim().trim_start_matches('[').trim_end_matches(']');
    let port = u16::try_from(config.listen_port).context("listenPort out of range")?;
    if let Ok(ip) = host.parse::<IpAddr>() {
        return Ok(SocketAddr::new(ip, port));
    }
    tokio::net::lookup_host((host, port))
        .await
        .with_context(|| format!("bindAddress {host} does not resolve"))?
        .next()
        .with_context(|| format!("bindAddress {host} has no address"))
}

async fn serve(config: Config) -> anyhow::Result<()> {
    let addr = listen_addr(&config).await?;
    let serialize_type = config.effective_serialize_type();
    // KV store, TLS and the route snapshot are loaded before the port opens: the first client
    // finds the routes already there.
    let state = tokio::task::block_in_place(|| namesrv::build_state(config))?;
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot listen on {addr}"))?;
    let local = listener.local_addr()?;
    println!(
        "The Name Server boot success. serializeType={}, address {local}",
        match serialize_type {
            remoting::SerializeType::Json => "JSON",
            remoting::SerializeType::RocketMq => "ROCKETMQ",
        }
    );
    namesrv::server::serve(listener, state, shutdown_signal()).await;
    Ok(())
}

/// Completes on SIGTERM or SIGINT (Ctrl-C).
async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = tokio::signal::ctrl_c() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}
