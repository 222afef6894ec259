//! Time per signature check of a signed GET_ROUTEINFO_BY_TOPIC (the request `bench/run`'s
//! `ours-auth` readers send), and of the bare HmacSHA1 inside it, for comparison:
//! `cargo run --release -p remoting --example verify_cost`.

use std::time::Instant;

use hmac::{Hmac, Mac};
use remoting::signature::{verify, Credentials, SigningKey};
use remoting::{RemotingCommand, RequestCode};

const SECRET: &str = "reader-secret-123456";
const REPEAT: usize = 250;

fn main() {
    let credentials = Credentials::new("bench-reader", SECRET);
    let requests: Vec<RemotingCommand> = (0..4096)
        .map(|i| {
            let mut cmd = RemotingCommand::request(RequestCode::GetRouteinfoByTopic);
            let topic = format!("topic-c{}-{:05}", i % 4, i);
            cmd.ext_fields = Some([("topic", topic)].into_iter().collect());
            credentials.sign(&mut cmd);
            cmd
        })
        .collect();
    let key = SigningKey::new(SECRET);
    let mac: Hmac<sha1::Sha1> = Hmac::new_from_slice(SECRET.as_bytes()).expect("any key length");
    let contents: Vec<Vec<u8>> = requests.iter().map(remoting::signature::server_content).collect();
    let per_op = |started: Instant| started.elapsed().as_nanos() as f64 / (REPEAT * 4096) as f64;
    for round in 0..3 {
        let started = Instant::now();
        let mut verified = 0;
        for _ in 0..REPEAT {
            verified += requests.iter().filter(|r| verify(&key, r)).count();
        }
        let verify_ns = per_op(started);
        assert_eq!(verified, REPEAT * requests.len());
        let started = Instant::now();
        let mut folded = 0u8;
        for _ in 0..REPEAT {
            for content in &contents {
                let mut m = mac.clone();
                m.update(content);
                folded ^= m.finalize().into_bytes()[0];
            }
        }
        println!(
            "round {round}: verify {verify_ns:.1} ns, HmacSHA1 alone {:.1} ns ({folded})",
            per_op(started)
        );
    }
}
