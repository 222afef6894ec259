//! The election policy: which broker of a group becomes master. Pure; liveness comes in through
//! [`BrokerLiveness`]. Java: `DefaultElectPolicy`

use std::cmp::Reverse;
use std::collections::BTreeSet;

/// What a broker last reported in BROKER_HEARTBEAT that matters to an election.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LiveInfo {
    /// The last master epoch in the broker's epoch file (-1 when it sent none).
    pub epoch: i32,
    /// The broker's max commit-log offset (-1 when it sent none).
    pub max_offset: i64,
    /// `brokerElectionPriority`: lower wins ties (`i32::MAX` when it sent none).
    pub election_priority: i32,
}

/// Which brokers are alive, and what they last reported. Java: `BrokerValidPredicate` +
/// `BrokerLiveInfoGetter`
pub trait BrokerLiveness {
    /// The broker has heartbeated within its timeout.
    fn is_alive(&self, cluster: &str, broker_name: &str, id: i64) -> bool;
    /// Its last report, when known.
    fn live_info(&self, cluster: &str, broker_name: &str, id: i64) -> Option<LiveInfo>;
}

/// Every broker alive, none with a report (for tests and tools).
#[derive(Debug, Clone, Copy, Default)]
pub struct AllAlive;

impl BrokerLiveness for AllAlive {
    fn is_alive(&self, _: &str, _: &str, _: i64) -> bool {
        true
    }
    fn live_info(&self, _: &str, _: &str, _: i64) -> Option<LiveInfo> {
        None
    }
}

/// A group's candidates for an election.
#[derive(Debug, Clone, Copy)]
pub struct Candidates<'a> {
    pub cluster: &'a str,
    pub broker_name: &'a str,
    /// The sync-state set, tried first.
    pub sync_state_set: &'a BTreeSet<i64>,
    /// Every registered replica, tried next; `None` unless `enableElectUncleanMaster`.
    pub all_replicas: Option<&'a BTreeSet<i64>>,
    pub old_master: Option<i64>,
    /// The broker an admin asked for (`designateElect`): it or nobody.
    pub preferred: Option<i64>,
}

/// Picks a new master: among the live members of the sync-state set, else (unclean elections
/// enabled) among all live replicas. In each: the old master if it is alive and no other broker
/// is preferred; else the preferred broker, if alive, or nobody; else the best report — highest
/// epoch, then highest max offset, then lowest election priority, then lowest id.
/// Java: `DefaultElectPolicy#elect` (its comparator casts the offset difference to `int`, which
/// misorders offsets more than 2 GiB apart; here offsets compare exactly)
pub fn elect(live: &dyn BrokerLiveness, c: &Candidates<'_>) -> Option<i64> {
    try_elect(live, c, c.sync_state_set)
        .or_else(|| c.all_replicas.and_then(|all| try_elect(live, c, all)))
}

fn try_elect(live: &dyn BrokerLiveness, c: &Candidates<'_>, ids: &BTreeSet<i64>) -> Option<i64> {
    let alive: Vec<i64> =
        ids.iter().copied().filter(|&id| live.is_alive(c.cluster, c.broker_name, id)).collect();
    if alive.is_empty() {
        return None;
    }
    if let Some(old) = c.old_master {
        if alive.contains(&old) && c.preferred.is_none_or(|p| p == old) {
            return Some(old);
        }
    }
    if let Some(preferred) = c.preferred {
        return alive.contains(&preferred).then_some(preferred);
    }
    alive.into_iter().min_by_key(|&id| {
        let info = live.live_info(c.cluster, c.broker_name, id);
        let (epoch, offset, priority) = info.map_or((i32::MIN, i64::MIN, i32::MAX), |i| {
            (i.epoch, i.max_offset, i.election_priority)
        });
        (Reverse(epoch), Reverse(offset), priority, id)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// Brokers 1..=3 alive unless listed dead, with the given reports.
    struct Fixture {
        dead: Vec<i64>,
        info: BTreeMap<i64, LiveInfo>,
    }

    impl BrokerLiveness for Fixture {
        fn is_alive(&self, _: &str, _: &str, id: i64) -> bool {
            !self.dead.contains(&id)
        }
        fn live_info(&self, _: &str, _: &str, id: i64) -> Option<LiveInfo> {
            self.info.get(&id).copied()
        }
    }

    fn info(epoch: i32, max_offset: i64, election_priority: i32) -> LiveInfo {
        LiveInfo { epoch, max_offset, election_priority }
    }

    fn set(ids: &[i64]) -> BTreeSet<i64> {
        ids.iter().copied().collect()
    }

    fn run(
        f: &Fixture,
        sync: &[i64],
        all: Option<&[i64]>,
        old: Option<i64>,
        preferred: Option<i64>,
    ) -> Option<i64> {
        let sync = set(sync);
        let all = all.map(set);
        elect(
            f,
            &Candidates {
                cluster: "c",
                broker_name: "b",
                sync_state_set: &sync,
                all_replicas: all.as_ref(),
                old_master: old,
                preferred,
            },
        )
    }

    fn fixture(dead: &[i64]) -> Fixture {
        Fixture { dead: dead.to_vec(), info: BTreeMap::new() }
    }

    #[test]
    fn a_live_old_master_is_kept() {
        assert_eq!(run(&fixture(&[]), &[1, 2, 3], None, Some(2), None), Some(2));
        assert_eq!(run(&fixture(&[]), &[1, 2, 3], None, Some(2), Some(2)), Some(2));
    }

    #[test]
    fn a_dead_old_master_is_replaced_from_the_sync_state_set() {
        assert_eq!(run(&fixture(&[1]), &[1, 2], Some(&[1, 2, 3]), Some(1), None), Some(2));
    }

    #[test]
    fn the_preferred_broker_wins_only_when_alive() {
        assert_eq!(run(&fixture(&[]), &[1, 2, 3], None, Some(1), Some(3)), Some(3));
        assert_eq!(run(&fixture(&[3]), &[1, 2, 3], None, Some(1), Some(3)), None);
    }

    #[test]
    fn outside_the_sync_state_set_only_when_unclean() {
        assert_eq!(run(&fixture(&[1]), &[1], None, Some(1), None), None);
        assert_eq!(run(&fixture(&[1]), &[1], Some(&[1, 2, 3]), Some(1), None), Some(2));
        assert_eq!(run(&fixture(&[1, 2, 3]), &[1], Some(&[1, 2, 3]), Some(1), None), None);
    }

    #[test]
    fn reports_rank_by_epoch_then_offset_then_priority() {
        let mut f = fixture(&[1]);
        f.info = [(2, info(2, 10, 0)), (3, info(1, 99, 0))].into();
        assert_eq!(run(&f, &[1, 2, 3], None, Some(1), None), Some(2), "higher epoch");
        f.info = [(2, info(1, 10, 0)), (3, info(1, 99, 0))].into();
        assert_eq!(run(&f, &[1, 2, 3], None, Some(1), None), Some(3), "higher offset");
        f.info = [(2, info(1, 10, 5)), (3, info(1, 10, 1))].into();
        assert_eq!(run(&f, &[1, 2, 3], None, Some(1), None), Some(3), "lower priority value");
        f.info = [(2, info(1, 10, 1)), (3, info(1, 10, 1))].into();
        assert_eq!(run(&f, &[1, 2, 3], None, Some(1), None), Some(2), "lowest id on a tie");
    }

    #[test]
    fn offsets_far_apart_compare_exactly() {
        let mut f = fixture(&[1]);
        f.info = [(2, info(1, 0, 0)), (3, info(1, 3 << 31, 0))].into();
        assert_eq!(run(&f, &[1, 2, 3], None, Some(1), None), Some(3));
    }

    #[test]
    fn nobody_when_no_one_is_alive() {
        assert_eq!(run(&fixture(&[1, 2, 3]), &[1, 2, 3], None, None, None), None);
        assert_eq!(run(&fixture(&[]), &[], None, None, None), None);
    }
}
