//! `mqcontroller`: a RocketMQ 5 controller node. Parses Java's command line (`-c`, `-p`, `-h`,
//! `-n`) and runs `daemon::boot::controller`, which prints `The Controller Server boot success.
//! ...` once the peer port is bound.

use std::process::ExitCode;

#[global_allocator]
static GLOBAL: allocator::MiMalloc = allocator::MiMalloc;

fn main() -> ExitCode {
    daemon::boot::main(
        controller::cli::parse_cli(std::env::args_os()),
        controller::Config::load_message,
        daemon::boot::controller,
    )
}
