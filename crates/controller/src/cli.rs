//! The `mqcontroller` command line: Java's options (`-c`, `-p`, `-h`, `-n`, see
//! [`conf::cli`]), turned into a [`CliAction`] for `main` to carry out. Prints nothing itself.

use std::ffi::OsString;

pub use conf::cli::CliError;
use conf::cli::{Program, Startup};

use crate::config::Config;

/// What `main` should do after parsing the command line: run (print [`Config::load_message`]
/// first), print the keys, or print the usage.
pub type CliAction = conf::cli::Action<Config>;

/// Java: `ControllerStartup#buildCommandlineOptions` + `ServerUtil#buildCommandlineOptions`
const PROGRAM: Program =
    Program { name: "mqcontroller", config_file_help: "Controller config properties file" };

/// Parses `mqcontroller` arguments and loads the configuration: `-h` wins; `-c FILE` loads the
/// file (a missing file or a bad value is an error naming it); `-p` lists every key after `-c`
/// is applied, without validating the peer keys (so it works on an incomplete file).
/// Java: `ControllerStartup#createControllerManager`
pub fn parse_cli<I>(args: I) -> Result<CliAction, CliError>
where
    I: IntoIterator<Item = OsString>,
{
    match PROGRAM.parse(args)? {
        Startup::Help(text) => Ok(CliAction::Help(text)),
        Startup::Load { config_file, print } => {
            if print {
                let mut config = Config::default();
                if let Some(path) = &config_file {
                    conf::table::load_file(&mut config, path)?;
                    config.config_store_path = path.to_string_lossy().into_owned();
                }
                let mut text = config.load_message().map(|m| m + "\n").unwrap_or_default();
                text.push_str(&config.to_print_text());
                return Ok(CliAction::Print(text));
            }
            Ok(CliAction::Run(Config::load(config_file.as_deref())?))
        }
    }
}
