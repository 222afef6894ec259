//! The start-up plumbing of a RocketMQ server binary: the command line with Java's options
//! (`-c` config file, `-p` print every key, `-h` help, `-n` name server list, accepted and
//! ignored), parsed with clap and reported Java-style (nothing printed here); logging to stderr
//! under `RUST_LOG`; the shutdown signal.
//!
//! Exit codes the binary should use: 0 after help or `-p`; [`CliError::exit_code`] otherwise
//! (1 for a usage error like Java's `ServerUtil#parseCmdLine`, not clap's 2; 255 for a config
//! error, Java's `System.exit(-1)`).

use std::ffi::OsString;
use std::path::PathBuf;

use clap::error::{ContextKind, ContextValue, ErrorKind};
use clap::{Arg, ArgAction, Command};
use thiserror::Error;

use crate::ConfigError;

/// A command line that cannot be run.
#[derive(Debug, Error)]
pub enum CliError {
    /// Unknown option, missing option argument, stray argument. Print `message` and `usage` to
    /// stderr, exit 1.
    #[error("{message}\n{usage}")]
    Usage {
        /// What was wrong, e.g. `Unrecognized option: -x`.
        message: String,
        /// The usage text.
        usage: String,
    },
    /// The `-c` file is missing, unreadable or holds a bad value. Exit 255.
    #[error(transparent)]
    Config(#[from] ConfigError),
}

impl CliError {
    /// The process exit status for this error (1 usage, 255 config, as Java).
    pub fn exit_code(&self) -> i32 {
        match self {
            CliError::Usage { .. } => 1,
            CliError::Config(_) => 255,
        }
    }
}

/// What a server binary's `main` should do once its command line is parsed and its
/// configuration `C` loaded.
#[derive(Debug)]
// Built once at start-up and consumed at once: boxing the large variant buys nothing.
#[allow(clippy::large_enum_variant)]
pub enum Action<C> {
    /// Start the server with this configuration (print its load message first).
    Run(C),
    /// Print this text to stdout and exit 0 (`-p`).
    Print(String),
    /// Print this usage text to stdout and exit 0 (`-h`).
    Help(String),
}

/// What the command line asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Startup {
    /// Print this usage text to stdout and exit 0 (`-h`; wins over everything).
    Help(String),
    /// Load the configuration (from `config_file` if given), then print it (`print`) or run.
    Load {
        /// `-c FILE`.
        config_file: Option<PathBuf>,
        /// `-p`.
        print: bool,
    },
}

/// A server binary's name and the description of its `-c` option.
#[derive(Debug, Clone, Copy)]
pub struct Program {
    /// e.g. `mqnamesrv`.
    pub name: &'static str,
    /// e.g. `Name server config properties file`.
    pub config_file_help: &'static str,
}

impl Program {
    /// The usage text, in the layout of Java's commons-cli `HelpFormatter`.
    pub fn usage(&self) -> String {
        let config_row = ("-c,--configFile <arg>", self.config_file_help);
        let rows = [
            config_row,
            ("-h,--help", "Print help"),
            (
                "-n,--namesrvAddr <arg>",
                "Name server address list, eg: '192.168.0.1:9876;192.168.0.2:9876'",
            ),
            ("-p,--printConfigItem", "Print all config items"),
        ];
        let width = rows.iter().map(|(left, _)| left.len()).max().unwrap_or(0);
        let mut out = format!("usage: {} [-c <arg>] [-h] [-n <arg>] [-p]\n", self.name);
        for (left, desc) in rows {
            out.push_str(&format!(" {left:<width$}   {desc}\n"));
        }
        out
    }

    fn command(&self) -> Command {
        Command::new(self.name)
            .disable_help_flag(true)
            .disable_version_flag(true)
            .arg(
                Arg::new("configFile")
                    .short('c')
                    .long("configFile")
                    .value_name("arg")
                    .value_parser(clap::value_parser!(PathBuf)),
            )
            .arg(Arg::new("help").short('h').long("help").action(ArgAction::SetTrue))
            .arg(Arg::new("namesrvAddr").short('n').long("namesrvAddr").value_name("arg"))
            .arg(
                Arg::new("printConfigItem")
                    .short('p')
                    .long("printConfigItem")
                    .action(ArgAction::SetTrue),
            )
    }

    /// Parses the arguments (the first item is the program name). Stray positional arguments
    /// are a usage error (Java ignores them). Java: `ServerUtil#parseCmdLine`
    pub fn parse<I>(&self, args: I) -> Result<Startup, CliError>
    where
        I: IntoIterator<Item = OsString>,
    {
        let matches = self
            .command()
            .try_get_matches_from(args)
            .map_err(|err| CliError::Usage { message: usage_message(&err), usage: self.usage() })?;
        if matches.get_flag("help") {
            return Ok(Startup::Help(self.usage()));
        }
        if let Some(addr) = matches.get_one::<String>("namesrvAddr") {
            tracing::debug!(namesrv_addr = %addr, "-n is ignored");
        }
        Ok(Startup::Load {
            config_file: matches.get_one::<PathBuf>("configFile").cloned(),
            print: matches.get_flag("printConfigItem"),
        })
    }
}

/// Java-style message for a clap parse error.
fn usage_message(err: &clap::Error) -> String {
    let arg = match err.get(ContextKind::InvalidArg) {
        Some(ContextValue::String(s)) => Some(s.clone()),
        _ => None,
    };
    match (err.kind(), arg) {
        (ErrorKind::UnknownArgument, Some(a)) => format!("Unrecognized option: {a}"),
        (ErrorKind::InvalidValue | ErrorKind::NoEquals, Some(a)) => {
            format!("Missing argument for option: {a}")
        }
        (ErrorKind::ArgumentConflict, Some(a)) => format!("Option given more than once: {a}"),
        _ => {
            let rendered = err.render().to_string();
            let first = rendered.lines().next().unwrap_or("invalid command line");
            first.strip_prefix("error: ").unwrap_or(first).to_owned()
        }
    }
}

/// Logs to stderr, filtered by `RUST_LOG` (or `default_filter` when unset), colours only on a
/// terminal.
pub fn init_logging(default_filter: &str) {
    use tracing_subscriber::EnvFilter;
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default_filter)),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
}

/// Completes on SIGTERM or SIGINT (Ctrl-C). The handlers are installed by this call, not at the
/// first poll, so a signal that arrives right after the boot line is a graceful stop.
pub fn shutdown_signal() -> impl std::future::Future<Output = ()> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let term = signal(SignalKind::terminate());
        let interrupt = signal(SignalKind::interrupt());
        async move {
            match (term, interrupt) {
                (Ok(mut term), Ok(mut interrupt)) => {
                    tokio::select! {
                        _ = term.recv() => {}
                        _ = interrupt.recv() => {}
                    }
                }
                (Ok(mut one), Err(_)) | (Err(_), Ok(mut one)) => {
                    one.recv().await;
                }
                (Err(_), Err(_)) => std::future::pending().await,
            }
        }
    }
    #[cfg(not(unix))]
    {
        async {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}
