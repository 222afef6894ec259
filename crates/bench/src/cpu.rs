//! CPU accounting on a shared machine: how many cores the server under test, the load generator
//! and everything else used during a phase (from `/proc/stat` and `/proc/<pid>/stat`), and a gate
//! that waits for other work on the machine to calm down before a measured phase starts.

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

/// Clock ticks per second of `/proc` CPU times (`USER_HZ`; 100 on Linux).
const HZ: f64 = 100.0;

/// Cores used during one phase.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PhaseCpu {
    /// `S1 r0`, `S2 r1`, `S3`, …
    pub phase: String,
    pub server_cores: f64,
    pub generator_cores: f64,
    /// The other (idle) servers of the suite: brokers' keep-alive registrations, GC, timers.
    #[serde(default)]
    pub peers_cores: f64,
    /// Everything else on the machine (other users' work).
    pub other_cores: f64,
}

#[derive(Debug, Clone, Copy)]
struct Snapshot {
    busy: u64,
    server: u64,
    peers: u64,
    me: u64,
    at: Instant,
}

/// Busy jiffies of all CPUs (user+nice+system+irq+softirq+steal).
fn machine_busy() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/stat").ok()?;
    let line = text.lines().find(|l| l.starts_with("cpu "))?;
    let v: Vec<u64> = line.split_whitespace().skip(1).filter_map(|x| x.parse().ok()).collect();
    // user nice system idle iowait irq softirq steal
    Some(v.iter().take(8).enumerate().filter(|(i, _)| *i != 3 && *i != 4).map(|(_, x)| x).sum())
}

/// utime + stime of a process (all its threads), in ticks.
fn process_ticks(pid: u32) -> u64 {
    let Ok(text) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { return 0 };
    // Fields after the command name, which ends with the last ')'.
    let Some(rest) = text.rsplit_once(')').map(|(_, r)| r) else { return 0 };
    let f: Vec<&str> = rest.split_whitespace().collect();
    // rest[0] is field 3 (state); utime = field 14, stime = field 15.
    let get = |i: usize| f.get(i - 3).and_then(|x| x.parse::<u64>().ok()).unwrap_or(0);
    get(14) + get(15)
}

impl Snapshot {
    fn take(server_pid: Option<u32>, peers: &[u32]) -> Self {
        Self {
            busy: machine_busy().unwrap_or(0),
            server: server_pid.map_or(0, process_ticks),
            peers: peers.iter().map(|p| process_ticks(*p)).sum(),
            me: process_ticks(std::process::id()),
            at: Instant::now(),
        }
    }
}

/// Measures a phase: [`CpuMeter::start`] when it begins, [`CpuMeter::finish`] when it ends.
#[derive(Debug)]
pub struct CpuMeter {
    start: Snapshot,
    server_pid: Option<u32>,
    peers: Vec<u32>,
}

impl CpuMeter {
    /// Starts measuring `server_pid`, and `all_servers` but it as peers.
    pub fn start(server_pid: Option<u32>, all_servers: &[u32]) -> Self {
        let peers: Vec<u32> =
            all_servers.iter().copied().filter(|p| Some(*p) != server_pid).collect();
        Self { start: Snapshot::take(server_pid, &peers), server_pid, peers }
    }

    pub fn finish(&self, phase: &str) -> PhaseCpu {
        let end = Snapshot::take(self.server_pid, &self.peers);
        let secs = end.at.duration_since(self.start.at).as_secs_f64().max(1e-3);
        let cores = |ticks: u64| ticks as f64 / HZ / secs;
        let server = end.server.saturating_sub(self.start.server);
        let me = end.me.saturating_sub(self.start.me);
        let busy = end.busy.saturating_sub(self.start.busy);
        let peers = end.peers.saturating_sub(self.start.peers);
        PhaseCpu {
            phase: phase.to_owned(),
            server_cores: cores(server),
            generator_cores: cores(me),
            peers_cores: cores(peers),
            other_cores: cores(busy.saturating_sub(server + me + peers)),
        }
    }
}

/// Waits until other processes (everything but this one and `ignore_pids`) use at most
/// `max_cores` over a 1 s sample, for at most `max_wait`. Returns the last sample (cores used
/// by others) and whether the machine was quiet.
pub async fn wait_quiet(
    max_cores: f64,
    max_wait: Duration,
    ignore_pids: &[u32],
    say: &dyn Fn(&str),
) -> (f64, bool) {
    let deadline = Instant::now() + max_wait;
    let mut told = false;
    loop {
        let b0 = machine_busy().unwrap_or(0);
        let own0: u64 = ignore_pids.iter().map(|p| process_ticks(*p)).sum::<u64>()
            + process_ticks(std::process::id());
        let t0 = Instant::now();
        tokio::time::sleep(Duration::from_secs(1)).await;
        let b1 = machine_busy().unwrap_or(0);
        let own1: u64 = ignore_pids.iter().map(|p| process_ticks(*p)).sum::<u64>()
            + process_ticks(std::process::id());
        let secs = t0.elapsed().as_secs_f64();
        let other =
            (b1.saturating_sub(b0)).saturating_sub(own1.saturating_sub(own0)) as f64 / HZ / secs;
        if other <= max_cores {
            if told {
                say(&format!("  machine quiet again ({other:.2} cores used by others)"));
            }
            return (other, true);
        }
        if Instant::now() >= deadline {
            say(&format!(
                "  machine still busy ({other:.2} cores used by others); measuring anyway"
            ));
            return (other, false);
        }
        if !told {
            say(&format!(
                "  machine busy ({other:.2} cores used by others); waiting up to {max_wait:?}"
            ));
            told = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_busy_loop_shows_up_as_generator_cpu() {
        // Spin for 0.3 s of this process's CPU time (not of wall time: on a busy machine a
        // wall-clock spin may get little CPU), then check the meter accounts for at least that.
        let wall = Instant::now();
        let meter = CpuMeter::start(None, &[]);
        let start_ticks = process_ticks(std::process::id());
        let spin_ticks = (0.3 * HZ) as u64;
        let mut x = 0u64;
        while process_ticks(std::process::id()) < start_ticks + spin_ticks {
            assert!(wall.elapsed() < Duration::from_secs(120), "never got 0.3 s of CPU");
            for _ in 0..10_000 {
                x = x.wrapping_mul(31).wrapping_add(7);
            }
        }
        std::hint::black_box(x);
        let cpu = meter.finish("t");
        let at_least = 0.3 / wall.elapsed().as_secs_f64();
        assert!(cpu.generator_cores >= at_least, "{cpu:?} vs at least {at_least}");
        assert!(cpu.other_cores >= 0.0);
    }
}
