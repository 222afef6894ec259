//! `ceiling`: the limit of this machine for one request/response exchange. Answers every frame
//! with the same pre-encoded SUCCESS response (body from `--body-file`).

use clap::Parser;

/// Answers every remoting frame with one pre-encoded response.
#[derive(Parser)]
struct Cli {
    /// Listen address.
    #[arg(long, default_value = "127.0.0.1:9876")]
    addr: String,
    /// The response body (e.g. a real GET_ROUTEINFO_BY_TOPIC answer).
    #[arg(long)]
    body_file: std::path::PathBuf,
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let body = std::fs::read(&cli.body_file)?;
    let answer = bench::ceiling::Answer::new(body.into())?;
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind(&cli.addr).await?;
        println!("ceiling listening on {}", listener.local_addr()?);
        bench::ceiling::serve(listener, answer).await
    })
}
