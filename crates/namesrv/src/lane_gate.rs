//! `LaneGate`: large frames wait to begin while the registration lane has enough queued (#25).
//! The lane applies registrations one batch at a time; bodies beyond what it can prepare ahead
//! (`lane::PREPARED_AHEAD_BYTES`) only wait in memory, so under a churn of changed
//! registrations (S7's 1 % churn: 200 brokers re-registering 2 MB bodies) they, and the bodies
//! on their way to the lane, made much of the peak RSS. A connection whose last registration
//! went to the lane and whose next frame announces more than a megabyte is paused
//! (`transport::room::Room::pause`) before reading it while the bodies queued for the lane,
//! plus the large frames let on and not yet whole counted at the queue's average size, reach
//! [`LANE_QUEUE_MARK`]; its bytes wait in the sender's socket instead. Counting those on their
//! way lets the paused connections begin one at a time as the queue drains, not all at once.
//!
//! Connections whose registrations are answered in place (unchanged and DataVersion-only
//! re-registrations, which never queue: S2's and the DataVersion churn's) never wait here and
//! are not counted; nor are those that never registered a large body.
//!
//! Nothing a sender announces is taken on trust: the queue is counted in the bytes of bodies
//! that arrived whole, a frame on its way at the size of those, and for [`LET_ON_WINDOW`] at
//! most, whatever length it announced and however long it stalls.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use std::collections::VecDeque;

use parking_lot::Mutex;
use tokio::sync::Notify;
use tokio::time::Instant;

/// The bytes of registration bodies queued for the lane (or applied by it), with those on their
/// way, at which large frames wait to begin: a batch of S7's 2 MB bodies. In S7 `t1m` runs the
/// 1 % churn peaked at 326–327 MiB with it against 336–356 MiB at twice as much and 432–480
/// without the gate, its registrations no slower.
pub const LANE_QUEUE_MARK: u64 = 16 << 20;

/// How long at most a frame let on counts as on its way: a sender that stalls stops counting
/// then (its frame deadline closes it later), so stalled senders cannot keep the gate shut.
pub const LET_ON_WINDOW: Duration = Duration::from_millis(500);

/// See the module docs.
#[derive(Debug, Default)]
pub struct LaneGate {
    /// Bodies of the registrations on the lane: bytes, and how many.
    queued_bytes: AtomicU64,
    queued: AtomicU64,
    /// The size of the last body handed to the lane: what a frame on its way counts for
    /// while the lane has no queue.
    last_body: AtomicU64,
    line: Mutex<Line>,
    next_name: AtomicU64,
    /// Told whenever the gate may have opened (a body or a frame gone, a place left).
    changed: Arc<Notify>,
}

/// The large frames let on and not yet whole (a name each, and when it was let on), and the
/// connections waiting to begin one, in the order they came.
#[derive(Debug, Default)]
struct Line {
    arriving: Vec<(u64, Instant)>,
    waiting: VecDeque<u64>,
}

/// A registration's body on the lane, counted until dropped (when it is answered).
#[derive(Debug)]
pub struct Queued {
    gate: Arc<LaneGate>,
    bytes: u64,
}

impl Drop for Queued {
    fn drop(&mut self) {
        self.gate.queued_bytes.fetch_sub(self.bytes, Ordering::AcqRel);
        self.gate.queued.fetch_sub(1, Ordering::AcqRel);
        self.gate.changed.notify_waiters();
    }
}

/// A large frame let on, counted as on its way until dropped (when it is whole, or its
/// connection closes) or [`LET_ON_WINDOW`] has passed.
#[derive(Debug)]
pub struct LetOn {
    gate: Arc<LaneGate>,
    name: u64,
}

impl Drop for LetOn {
    fn drop(&mut self) {
        let mut line = self.gate.line.lock();
        if let Some(at) = line.arriving.iter().position(|&(name, _)| name == self.name) {
            line.arriving.swap_remove(at);
            drop(line);
            self.gate.changed.notify_waiters();
        }
    }
}

/// A connection's place in the line of those waiting to begin a large frame; dropped, it
/// leaves the line.
#[derive(Debug)]
pub struct Place {
    gate: Arc<LaneGate>,
    name: u64,
}

impl Place {
    /// The place's name, which the connection's stream asks the gate with.
    pub fn name(&self) -> u64 {
        self.name
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        let mut line = self.gate.line.lock();
        if let Some(at) = line.waiting.iter().position(|&name| name == self.name) {
            line.waiting.remove(at);
            drop(line);
            self.gate.changed.notify_waiters();
        }
    }
}

impl LaneGate {
    /// Counts a body of `bytes` handed to the lane until the returned guard is dropped.
    pub fn enter(self: &Arc<Self>, bytes: u64) -> Queued {
        self.queued_bytes.fetch_add(bytes, Ordering::AcqRel);
        self.queued.fetch_add(1, Ordering::AcqRel);
        self.last_body.store(bytes, Ordering::Release);
        Queued { gate: Arc::clone(self), bytes }
    }

    /// Bytes of the bodies on the lane now.
    pub fn queued_bytes(&self) -> u64 {
        self.queued_bytes.load(Ordering::Acquire)
    }

    /// Large frames let on and on their way now (let on within [`LET_ON_WINDOW`]).
    pub fn arriving(&self) -> usize {
        self.line.lock().arriving.len()
    }

    /// Connections waiting to begin a large frame now.
    pub fn waiting(&self) -> usize {
        self.line.lock().waiting.len()
    }

    /// Lets a large frame begin at `now` if the gate is open and the connection is first in
    /// line (or nobody waits and it has no place yet), counting the frame as on its way until
    /// the returned guard is dropped. Otherwise `None`, and the connection has a place in line
    /// (`place`, kept until it is let on or gives up).
    pub fn admit(self: &Arc<Self>, now: Instant, place: &mut Option<Place>) -> Option<LetOn> {
        let mut line = self.line.lock();
        let first = match place {
            Some(p) => line.waiting.front() == Some(&p.name),
            None => line.waiting.is_empty(),
        };
        if first && self.open_with(&mut line.arriving, now) {
            // Out of the line here; dropped once the line is unlocked (its drop locks it).
            let left = place.take();
            if left.is_some() {
                line.waiting.pop_front();
            }
            let name = self.next_name.fetch_add(1, Ordering::Relaxed);
            line.arriving.push((name, now));
            drop(line);
            drop(left);
            // The next in line may begin too.
            self.changed.notify_waiters();
            return Some(LetOn { gate: Arc::clone(self), name });
        }
        if place.is_none() {
            let name = self.next_name.fetch_add(1, Ordering::Relaxed);
            line.waiting.push_back(name);
            *place = Some(Place { gate: Arc::clone(self), name });
        }
        None
    }

    /// Open while the bodies queued and those on their way stay under the mark; a frame on
    /// its way counts at the queue's average size, or the last body's when there is no queue
    /// (the lane may drain faster than large frames arrive), as nothing while no body has gone
    /// to the lane. Forgets frames let on longer ago than the window.
    fn open_with(&self, arriving: &mut Vec<(u64, Instant)>, now: Instant) -> bool {
        arriving.retain(|&(_, at)| now.saturating_duration_since(at) < LET_ON_WINDOW);
        let queued = self.queued.load(Ordering::Acquire);
        let bytes = self.queued_bytes.load(Ordering::Acquire);
        let each = match queued {
            0 => self.last_body.load(Ordering::Acquire),
            n => bytes / n,
        };
        bytes.saturating_add((arriving.len() as u64).saturating_mul(each)) < LANE_QUEUE_MARK
    }
}

impl transport::room::Gate for LaneGate {
    /// Asked by a paused connection's stream; its codec decides (and counts) once it has read.
    fn open(&self, place: u64) -> bool {
        let mut line = self.line.lock();
        line.waiting.front() == Some(&place) && self.open_with(&mut line.arriving, Instant::now())
    }

    fn changed(&self) -> &Arc<Notify> {
        &self.changed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use transport::room::Gate;

    /// A sixteenth of the mark.
    const BODY: u64 = LANE_QUEUE_MARK / 16;

    fn admit(gate: &Arc<LaneGate>, now: Instant) -> Option<LetOn> {
        gate.admit(now, &mut None)
    }

    #[test]
    fn open_until_a_body_went_to_the_lane_then_shut_at_the_mark() {
        let gate = Arc::new(LaneGate::default());
        let now = Instant::now();
        let early: Vec<LetOn> = (0..20).map(|_| admit(&gate, now).expect("open")).collect();
        assert_eq!(gate.arriving(), 20, "counted all the same");
        drop(early);
        let queued: Vec<Queued> = (0..15).map(|_| gate.enter(BODY)).collect();
        let one = admit(&gate, now).expect("15 bodies queued: one more may begin");
        let mut place = None;
        assert!(gate.admit(now, &mut place).is_none(), "it counts as on its way: the mark");
        let place = place.expect("waits in line");
        assert!(!gate.open(place.name()));
        drop(one);
        assert_eq!(gate.arriving(), 0, "whole: no longer on its way");
        assert!(gate.open(place.name()));
        drop((queued, place));
        assert_eq!((gate.queued_bytes(), gate.waiting()), (0, 0));
        // The lane drained faster than frames arrive: those on their way count at the last
        // body's size.
        let on_the_way: Vec<LetOn> = (0..20).filter_map(|_| admit(&gate, now)).collect();
        assert_eq!(on_the_way.len(), 16, "16 bodies: the mark");
    }

    /// A frame on its way counts until it is whole, or for the window at most, whatever it
    /// announced and however long it stalls: stalled senders cannot keep the gate shut.
    #[test]
    fn frames_let_on_count_until_whole_or_for_the_window() {
        let gate = Arc::new(LaneGate::default());
        let start = Instant::now();
        let _queued: Vec<Queued> = (0..15).map(|_| gate.enter(BODY)).collect();
        let _stalled = admit(&gate, start).expect("15 bodies queued: one more");
        let mut place = None;
        assert!(gate.admit(start, &mut place).is_none(), "15 queued + 1 on its way: the mark");
        let later = start + LET_ON_WINDOW;
        assert!(gate.admit(later, &mut place).is_some(), "the stalled one no longer counts");
        assert!(place.is_none() && gate.waiting() == 0, "let on: out of the line");
    }

    /// Those waiting are let on in the order they came, one at a time as room appears; one
    /// that gives up leaves the line, and newcomers queue behind those waiting.
    #[test]
    fn waiting_connections_are_let_on_in_the_order_they_came() {
        let gate = Arc::new(LaneGate::default());
        let now = Instant::now();
        let mut queued: Vec<Queued> = (0..16).map(|_| gate.enter(BODY)).collect();
        let mut places: Vec<Option<Place>> = (0..4).map(|_| None).collect();
        for place in &mut places {
            assert!(gate.admit(now, place).is_none());
        }
        assert_eq!(gate.waiting(), 4);
        let names: Vec<u64> = places.iter().flatten().map(Place::name).collect();
        queued.pop();
        assert!(!gate.open(names[1]), "room for one, and not the second's turn");
        assert!(gate.admit(now, &mut places[1]).is_none());
        let first = gate.admit(now, &mut places[0]).expect("the first's turn");
        assert!(!gate.open(names[1]), "the first on its way fills the room again");
        drop(first);
        places[1] = None;
        assert_eq!(gate.waiting(), 2, "the second gave up");
        let mut newcomer = None;
        assert!(gate.admit(now, &mut newcomer).is_none(), "a newcomer waits behind the line");
        assert!(gate.admit(now, &mut places[2]).is_some(), "the third is first now");
        assert_eq!(gate.waiting(), 2, "the fourth and the newcomer");
    }
}
