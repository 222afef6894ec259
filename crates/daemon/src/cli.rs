//! The `mqnamesrv` command line: Java's options (`-c`, `-p`, `-h`, `-n`, see [`conf::cli`]),
//! turned into a [`CliAction`] for `main` to carry out. Prints nothing itself.

use std::ffi::OsString;

pub use conf::cli::CliError;
use conf::cli::{Program, Startup};

use namesrv::config::Config;

/// What `main` should do after parsing the command line: run (print [`Config::load_message`]
/// first), print the keys, or print the usage.
pub type CliAction = conf::cli::Action<Config>;

/// Java: `NamesrvStartup#buildCommandlineOptions` + `ServerUtil#buildCommandlineOptions`
const PROGRAM: Program =
    Program { name: "mqnamesrv", config_file_help: "Name server config properties file" };

/// The usage text, in the layout of Java's commons-cli `HelpFormatter`.
pub fn usage() -> String {
    PROGRAM.usage()
}

/// Parses `mqnamesrv` arguments (the first item is the program name) and loads the
/// configuration. `-h` wins over everything; `-c FILE` loads the file (a missing file or a bad
/// value is an error naming it); `-p` lists every effective key after `-c` is applied; `-n` is
/// accepted and ignored. Java: `NamesrvStartup#parseCommandlineAndConfigFile`
pub fn parse_cli<I>(args: I) -> Result<CliAction, CliError>
where
    I: IntoIterator<Item = OsString>,
{
    match PROGRAM.parse(args)? {
        Startup::Help(text) => Ok(CliAction::Help(text)),
        Startup::Load { config_file, print } => {
            let config = Config::load(config_file.as_deref())?;
            if print {
                let mut text = config.load_message().map(|m| m + "\n").unwrap_or_default();
                // The trusted proxies as in force (their default depends on
                // authenticationEnabled), not as unset.
                let unset = "proxyProtocolTrustedAddresses=\n";
                let effective =
                    format!("proxyProtocolTrustedAddresses={}\n", config.trusted_proxies_text());
                text.push_str(&config.to_print_text().replacen(unset, &effective, 1));
                if let Some(controller) = crate::embedded::controller_config(&config)? {
                    // Java prints the controller's keys too when it is embedded; its HTTP keys
                    // are the nameserver's there (listed above).
                    for line in controller.to_print_text().lines() {
                        if !crate::embedded::NAMESRV_OWNED.iter().any(|k| line.starts_with(k)) {
                            text.push_str(line);
                            text.push('\n');
                        }
                    }
                }
                return Ok(CliAction::Print(text));
            }
            // A bad controller key stops start-up like any other bad value.
            crate::embedded::controller_config(&config)?;
            Ok(CliAction::Run(config))
        }
    }
}
