//! The metrics overhead phase (issue #12): S1 against two fresh instances of ours, populated
//! alike, one as configured by default (metrics recorded) and one with `metricsEnable=false`,
//! in alternating rounds (the order swapped every round), so the report can state S1 with
//! metrics as a ratio of S1 without. Both are fresh: the suite's own instance has been through
//! S2's churn, which a fresh comparison instance has not.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use crate::load::{Fleet, Readers};
use crate::phase::{gate, line, read_phase, ReadMode};
use crate::results::{MetricsOverhead, Sizes};
use crate::server::{Server, Spec};
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
    /// Runs `sizes.metrics_rounds` paired rounds against two fresh instances of `ours` started
    /// under `workdir`: one as configured by default (metrics recorded), one with
    /// `metricsEnable=false`. Both fresh, so neither carries the earlier phases' churn.
    pub async fn run(
        &self,
        ours: &Spec,
        workdir: &Path,
        say: &dyn Fn(&str),
    ) -> anyhow::Result<MetricsOverhead> {
        let off_spec =
            Spec { extra_config: vec!["metricsEnable=false".to_owned()], ..ours.clone() };
        // A server dropped on an early return is killed (`Server`'s `Drop`).
        let mut on = Server::spawn(ours, &workdir.join("ours-metrics-on"))?;
        let mut off = Server::spawn(&off_spec, &workdir.join("ours-metrics-off"))?;
        let result = self.with_servers(&mut on, &mut off, say).await;
        on.stop();
        off.stop();
        result
    }

    async fn with_servers(
        &self,
        on: &mut Server,
        off: &mut Server,
        say: &dyn Fn(&str),
    ) -> anyhow::Result<MetricsOverhead> {
        on.wait_ready(Duration::from_secs(60)).await?;
        off.wait_ready(Duration::from_secs(60)).await?;
        let on_fleet = Fleet::new(&on.addr, self.topology, self.bodies, None)?;
        let off_fleet = match Fleet::new(&off.addr, self.topology, self.bodies, None) {
            Ok(fleet) => fleet,
            Err(e) => {
                on_fleet.close().await;
                return Err(e);
            }
        };
        let result = self.measure(on, off, [&on_fleet, &off_fleet], say).await;
        on_fleet.close().await;
        off_fleet.close().await;
        result
    }

    async fn measure(
        &self,
        on: &Server,
        off: &Server,
        fleets: [&Fleet; 2],
        say: &dyn Fn(&str),
    ) -> anyhow::Result<MetricsOverhead> {
        let (stop, stop_rx) = watch::channel(false);
        for fleet in fleets {
            fleet.populate(4).await?;
            drop(fleet.keep_alive(
                Duration::from_secs(30),
                stop_rx.clone(),
                self.measuring.subscribe(),
            ));
        }
        let (sizes, seed) = (self.sizes, self.sizes.seed ^ 0x0B5);
        for server in [on, off] {
            read_phase(&server.addr, sizes.conns, self.topology, self.mode, self.prewarm, seed)
                .await?;
        }
        let mut pids = self.pids.to_vec();
        pids.extend([on.pid, off.pid]);
        let mut overhead = MetricsOverhead::default();
        for round in 0..sizes.metrics_rounds {
            let mut order = [(on.addr.as_str(), true), (off.addr.as_str(), false)];
            if round % 2 == 1 {
                order.reverse();
            }
            for (addr, metrics) in order {
                gate(sizes, say).await;
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
            say(&format!(
                "S1 metrics on/off: {ratio:.3} (median of paired rounds; {on:.0} vs {off:.0} req/s)"
            ));
        }
        Ok(overhead)
    }
}
