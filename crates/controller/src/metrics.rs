//! What a controller node counts as it works: plain atomics (`crates/counters`), recorded by
//! the dispatcher, the heartbeat handler, the elections and the leader watch. The values read
//! at scrape time (role, Raft term and indexes, broker groups, live brokers, store size) are
//! [`crate::status`]'s. How both are exposed (`rocketmq_controller_*` in the Prometheus text
//! formats) is `crates/ops`' business: this crate knows no exposition format and no HTTP.

use std::sync::atomic::{AtomicU64, Ordering};

pub use counters::{RequestResult, RequestStats};

/// What started an election (`elections_total{trigger}`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trigger {
    /// The master's connection to this leader closed (a killed or restarted broker).
    MasterLost,
    /// The master stopped heartbeating: the liveness scan expired it, or the leader's scan for
    /// inactive masters found its group without a live master.
    HeartbeatTimeout,
    /// A CONTROLLER_ELECT_MASTER request (1002): `mqadmin electMaster`, or a broker asking.
    Admin,
}

impl Trigger {
    /// Every trigger, in counter order.
    pub const ALL: [Trigger; 3] = [Self::MasterLost, Self::HeartbeatTimeout, Self::Admin];

    /// The label value.
    pub fn label(self) -> &'static str {
        match self {
            Self::MasterLost => "master_lost",
            Self::HeartbeatTimeout => "heartbeat_timeout",
            Self::Admin => "admin",
        }
    }
}

/// How an election ended (`elections_total{result}`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ElectionResult {
    /// A new master was elected and committed.
    Elected,
    /// The old master is still alive: nothing to elect (CONTROLLER_MASTER_STILL_EXIST).
    MasterStillAlive,
    /// No live broker may become master (CONTROLLER_MASTER_NOT_AVAILABLE,
    /// CONTROLLER_ELECT_MASTER_FAILED): the group has no master.
    NoCandidate,
    /// Refused with another code (unknown group, fenced by a newer epoch, …).
    Refused,
    /// Not decided: the event did not commit in time, or the node stopped.
    Failed,
}

impl ElectionResult {
    /// Every result, in counter order.
    pub const ALL: [ElectionResult; 5] =
        [Self::Elected, Self::MasterStillAlive, Self::NoCandidate, Self::Refused, Self::Failed];

    /// The label value.
    pub fn label(self) -> &'static str {
        match self {
            Self::Elected => "elected",
            Self::MasterStillAlive => "master_still_alive",
            Self::NoCandidate => "no_candidate",
            Self::Refused => "refused",
            Self::Failed => "failed",
        }
    }

    /// The result an election answered with `code` stands for.
    pub fn of_code(code: i32) -> Self {
        use remoting::ResponseCode as R;
        match R::from_i32(code) {
            R::Success => Self::Elected,
            R::ControllerMasterStillExist => Self::MasterStillAlive,
            R::ControllerMasterNotAvailable | R::ControllerElectMasterFailed => Self::NoCandidate,
            _ => Self::Refused,
        }
    }
}

const ELECTION_SLOTS: usize = Trigger::ALL.len() * ElectionResult::ALL.len();

/// Every counter of a controller node.
#[derive(Debug)]
pub struct Metrics {
    /// `requests_total{code,request,result}` and `request_duration_seconds{code,request}`:
    /// requests on the controller port (the Raft RPCs between controller nodes are not counted).
    pub requests: RequestStats,
    /// `heartbeats_total`: BROKER_HEARTBEATs recorded in the liveness table.
    heartbeats: AtomicU64,
    /// `leader_changes_total`: times this node saw a new Raft leader (itself included).
    leader_changes: AtomicU64,
    /// `elections_total{trigger,result}`: master elections of broker groups decided here.
    elections: [AtomicU64; ELECTION_SLOTS],
}

impl Default for Metrics {
    fn default() -> Self {
        Self {
            requests: RequestStats::new(),
            heartbeats: AtomicU64::new(0),
            leader_changes: AtomicU64::new(0),
            elections: std::array::from_fn(|_| AtomicU64::new(0)),
        }
    }
}

impl Metrics {
    /// Counts a heartbeat recorded.
    pub fn heartbeat(&self) {
        self.heartbeats.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts a new Raft leader seen.
    pub fn leader_changed(&self) {
        self.leader_changes.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts an election by what started it and how it ended.
    pub fn election(&self, trigger: Trigger, result: ElectionResult) {
        self.elections[slot(trigger, result)].fetch_add(1, Ordering::Relaxed);
    }

    /// Heartbeats recorded so far.
    pub fn heartbeats(&self) -> u64 {
        self.heartbeats.load(Ordering::Relaxed)
    }

    /// New leaders seen so far.
    pub fn leader_changes(&self) -> u64 {
        self.leader_changes.load(Ordering::Relaxed)
    }

    /// Elections by every (trigger, result), zeros included (so a rate is defined from the
    /// first scrape).
    pub fn elections(&self) -> Vec<(Trigger, ElectionResult, u64)> {
        Trigger::ALL
            .iter()
            .flat_map(|&t| ElectionResult::ALL.iter().map(move |&r| (t, r)))
            .map(|(t, r)| (t, r, self.elections[slot(t, r)].load(Ordering::Relaxed)))
            .collect()
    }
}

fn slot(trigger: Trigger, result: ElectionResult) -> usize {
    trigger as usize * ElectionResult::ALL.len() + result as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elections_count_by_trigger_and_result() {
        let m = Metrics::default();
        m.election(Trigger::MasterLost, ElectionResult::Elected);
        m.election(Trigger::MasterLost, ElectionResult::Elected);
        m.election(Trigger::Admin, ElectionResult::of_code(2011));
        let all = m.elections();
        assert_eq!(all.len(), 15);
        let count = |t, r| all.iter().find(|e| e.0 == t && e.1 == r).map(|e| e.2);
        assert_eq!(count(Trigger::MasterLost, ElectionResult::Elected), Some(2));
        assert_eq!(count(Trigger::Admin, ElectionResult::MasterStillAlive), Some(1));
        assert_eq!(count(Trigger::HeartbeatTimeout, ElectionResult::Elected), Some(0));
        assert_eq!(all.iter().map(|e| e.2).sum::<u64>(), 3);
    }

    #[test]
    fn election_results_follow_the_response_codes() {
        assert_eq!(ElectionResult::of_code(0), ElectionResult::Elected);
        assert_eq!(ElectionResult::of_code(2004), ElectionResult::NoCandidate);
        assert_eq!(ElectionResult::of_code(2012), ElectionResult::NoCandidate);
        assert_eq!(ElectionResult::of_code(2010), ElectionResult::Refused);
    }
}
