//! `mqcontroller`: parse the command line, set up logging, bind the peer port, run a controller
//! node. Prints `The Controller Server boot success. ...` once the port is bound.

use std::process::ExitCode;

use anyhow::Context;
use controller::cli::{parse_cli, CliAction};

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

async fn serve(config: controller::Config) -> anyhow::Result<()> {
    let listener = controller::bind(&config).await?;
    let local = listener.local_addr()?;
    let self_id = config.controller_dleger_self_id.clone().unwrap_or_default();
    let group = config.group().to_owned();
    let node =
        controller::Node::start(std::sync::Arc::new(controller::SharedConfig::new(config)), None)
            .await
            .context("cannot start the controller")?;
    // Handlers first: a SIGTERM right after the boot line is a graceful stop.
    let shutdown = conf::cli::shutdown_signal();
    println!("The Controller Server boot success. serializeType=JSON, group {group}, id {self_id}, address {local}");
    controller::server::serve(listener, node, shutdown).await;
    Ok(())
}
