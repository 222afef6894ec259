//! `mqnamesrv`: the nameserver. Parses Java's command line (`-c`, `-p`, `-h`, `-n`) and runs
//! `daemon::boot::namesrv`; everything else is in the library, reachable from the tests.

use std::process::ExitCode;

#[global_allocator]
static GLOBAL: allocator::MiMalloc = allocator::MiMalloc;

fn main() -> ExitCode {
    daemon::boot::main(
        daemon::cli::parse_cli(std::env::args_os()),
        daemon::Config::load_message,
        daemon::boot::namesrv,
    )
}
