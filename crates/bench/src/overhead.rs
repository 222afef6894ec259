//! The metrics overhead phase (issue #12): S1 against ours as run (metrics recorded) and against
//! a second instance of the same binary with `metricsEnable=false`, populated alike, in
//! alternating rounds (the order swapped every round), so the report can state S1 with metrics
//! as a ratio of S1 without.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use crate::load::{Fleet, Readers};
use crate::results::{MetricsOverhead, Sizes};
use crate::server::{Server, Spec};
use crate::suite::{gate, line, read_phase, ReadMode};
use crate::topology::{RegistrationBody, Topology};

/// What the phase needs from the suite.
pub struct Phase<'a> {
    pub sizes: &'a Sizes,
    pub topology: &'a Topology,
    pub bodies: &'a [Arc<RegistrationBody>],
    pub mode: &'a ReadMode,
    pub readers: &'a Readers,
    pub prewarm: &'a Readers,
    pub pids: &'a [u32],
    /// Raised while measuring (the idle servers' brokers then hold their keep-alives).
    pub measuring: &'a watch::Sender<bool>,
}

impl Phase<'_> {
    /// Runs `sizes.metrics_rounds` paired rounds against `ours_addr` and a metrics-off instance
    /// of `ours` started under `workdir`.
    pub async fn run(
        &self,
        ours: &Spec,
        ours_addr: &str,
        workdir: &Path,
        say: &dyn Fn(&str),
    ) -> anyhow::Result<MetricsOverhead> {
        let spec = Spec { extra_config: vec!["metricsEnable=false".to_owned()], ..ours.clone() };
        let mut server = Server::spawn(&spec, &workdir.join("ours-nometrics"))?;
        server.wait_ready(Duration::from_secs(60)).await?;
        let fleet = Fleet::new(&server.addr, self.topology, self.bodies, None)?;
        let result = self.measure(&server, &fleet, ours_addr, say).await;
        fleet.close().await;
        server.stop();
        result
    }

    async fn measure(
        &self,
        off: &Server,
        fleet: &Fleet,
        ours_addr: &str,
        say: &dyn Fn(&str),
    ) -> anyhow::Result<MetricsOverhead> {
        fleet.populate(4).await?;
        let (stop, stop_rx) = watch::channel(false);
        drop(fleet.keep_alive(Duration::from_secs(30), stop_rx, self.measuring.subscribe()));
        let (sizes, seed) = (self.sizes, self.sizes.seed ^ 0x0B5);
        read_phase(&off.addr, sizes.conns, self.topology, self.mode, self.prewarm, seed).await?;
        let mut pids = self.pids.to_vec();
        pids.push(off.pid);
        let mut overhead = MetricsOverhead::default();
        for round in 0..sizes.metrics_rounds {
            let mut order = [(ours_addr, true), (off.addr.as_str(), false)];
            if round % 2 == 1 {
                order.reverse();
            }
            for (addr, metrics) in order {
                gate(sizes, &pids, say).await;
                self.measuring.send_replace(true);
                let seed = sizes.seed + round as u64;
                let result =
                    read_phase(addr, sizes.conns, self.topology, self.mode, self.readers, seed)
                        .await;
                self.measuring.send_replace(false);
                let (rec, elapsed) = result?;
                let summary = rec.summary(elapsed);
                let label = if metrics { "metrics on" } else { "metrics off" };
                say(&format!("S1m r{round} {label:>14}: {}", line(&summary)));
                if metrics {
                    overhead.on.push(summary);
                } else {
                    overhead.off.push(summary);
                }
            }
        }
        stop.send_replace(true);
        if let Some((ratio, on, off)) = overhead.ratio() {
            say(&format!("S1 metrics on/off: {ratio:.3} ({on:.0} vs {off:.0} req/s)"));
        }
        Ok(overhead)
    }
}
