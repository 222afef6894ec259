//! The `mqnamesrv` command line: Java's options (`-c`, `-p`, `-h`, `-n`), parsed with clap,
//! turned into a [`CliAction`] for `main` to carry out. Prints nothing itself.
//!
//! Exit codes `main` should use: 0 after [`CliAction::Print`] / [`CliAction::Help`];
//! [`CliError::exit_code`] otherwise (1 for a usage error like Java's `ServerUtil#parseCmdLine`,
//! not clap's 2; 255 for a config error, Java's `System.exit(-1)`).

use std::ffi::OsString;
use std::path::PathBuf;

use clap::error::{ContextKind, ContextValue, ErrorKind};
use clap::{ArgAction, Parser};
use thiserror::Error;

use crate::config::{Config, ConfigError};

/// What `main` should do after parsing the command line.
#[derive(Debug)]
// Built once at start-up and consumed at once: boxing the large variant buys nothing.
#[allow(clippy::large_enum_variant)]
pub enum CliAction {
    /// Start the server with this configuration. Print [`Config::load_message`] first.
    Run(Config),
    /// Print this text to stdout and exit 0 (`-p`).
    Print(String),
    /// Print this usage text to stdout and exit 0 (`-h`).
    Help(String),
}

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

/// Java: `NamesrvStartup#buildCommandlineOptions` + `ServerUtil#buildCommandlineOptions`
#[derive(Debug, Parser)]
#[command(name = "mqnamesrv", disable_help_flag = true, disable_version_flag = true)]
struct Args {
    /// Name server config properties file
    #[arg(short = 'c', long = "configFile", value_name = "arg")]
    config_file: Option<PathBuf>,
    /// Print help
    #[arg(short = 'h', long = "help", action = ArgAction::SetTrue)]
    help: bool,
    /// Name server address list (accepted and ignored, as Java)
    #[arg(short = 'n', long = "namesrvAddr", value_name = "arg")]
    namesrv_addr: Option<String>,
    /// Print all config items
    #[arg(short = 'p', long = "printConfigItem", action = ArgAction::SetTrue)]
    print_config_item: bool,
}

/// The usage text, in the layout of Java's commons-cli `HelpFormatter`.
pub fn usage() -> String {
    let rows = [
        ("-c,--configFile <arg>", "Name server config properties file"),
        ("-h,--help", "Print help"),
        (
            "-n,--namesrvAddr <arg>",
            "Name server address list, eg: '192.168.0.1:9876;192.168.0.2:9876'",
        ),
        ("-p,--printConfigItem", "Print all config items"),
    ];
    let width = rows.iter().map(|(left, _)| left.len()).max().unwrap_or(0);
    let mut out = String::from("usage: mqnamesrv [-c <arg>] [-h] [-n <arg>] [-p]\n");
    for (left, desc) in rows {
        out.push_str(&format!(" {left:<width$}   {desc}\n"));
    }
    out
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

/// Parses `mqnamesrv` arguments (the first item is the program name) and loads the
/// configuration. `-h` wins over everything; `-c FILE` loads the file (a missing file or a bad
/// value is an error naming it); `-p` lists every effective key after `-c` is applied; `-n` is
/// accepted and ignored. Stray positional arguments are a usage error (Java ignores them).
/// Java: `NamesrvStartup#parseCommandlineAndConfigFile`
pub fn parse_cli<I>(args: I) -> Result<CliAction, CliError>
where
    I: IntoIterator<Item = OsString>,
{
    let args = Args::try_parse_from(args)
        .map_err(|err| CliError::Usage { message: usage_message(&err), usage: usage() })?;
    if args.help {
        return Ok(CliAction::Help(usage()));
    }
    if let Some(addr) = &args.namesrv_addr {
        tracing::debug!(namesrv_addr = %addr, "-n is ignored by the nameserver");
    }
    let config = Config::load(args.config_file.as_deref())?;
    if args.print_config_item {
        let mut text = config.load_message().map(|m| m + "\n").unwrap_or_default();
        text.push_str(&config.to_print_text());
        return Ok(CliAction::Print(text));
    }
    Ok(CliAction::Run(config))
}
