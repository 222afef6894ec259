//! `mqadmin` binary: parses the command line (bad flags exit 2), runs the command, maps errors to
//! exit codes.

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = admin::Cli::parse_from(admin::java_args(std::env::args_os()));
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("mqadmin: cannot start runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let name = cli.command.name();
    let mut stdout = std::io::stdout();
    match runtime.block_on(admin::run(cli, &mut stdout)) {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("mqadmin: {name} command failed: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}
