//! `QueueGate`: large frames wait to begin while a queue behind the server holds its mark.
//! The nameserver puts one in front of its registration lane (`namesrv::limits::LaneGate`,
//! #25): the lane applies registrations one batch at a time, so under a churn of changed
//! registrations (S7's 1 % churn: 200 brokers re-registering 2 MB bodies) the bodies queued
//! for it, and those on their way, made much of the peak RSS. A connection the server sends
//! here (its last registration went to the lane) whose next frame announces more than a
//! megabyte is paused ([`crate::room::Room::pause`]) before reading it while the bodies queued,
//! plus the large frames let on and not yet whole counted at the queue's average size, reach
//! the mark; its bytes wait in the sender's socket instead. Counting those on their way lets
//! the paused connections begin one at a time as the queue drains, not all at once; they
//! begin in the order they came.
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

/// How long at most a frame let on counts as on its way: a sender that stalls stops counting
/// then (its frame deadline closes it later), so stalled senders cannot keep the gate shut.
pub const LET_ON_WINDOW: Duration = Duration::from_millis(500);

/// See the module docs; `MARK`: the bytes queued and on their way at which it shuts.
#[derive(Debug, Default)]
pub struct QueueGate<const MARK: u64> {
    /// Bodies in the queue: bytes, and how many.
    queued_bytes: AtomicU64,
    queued: AtomicU64,
    /// The size of the last body queued: what a frame on its way counts for while there is
    /// no queue.
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

/// A body in the queue, counted until dropped (when it is answered).
#[derive(Debug)]
pub struct Queued<const MARK: u64> {
    gate: Arc<QueueGate<MARK>>,
    bytes: u64,
}

impl<const MARK: u64> Drop for Queued<MARK> {
    fn drop(&mut self) {
        self.gate.queued_bytes.fetch_sub(self.bytes, Ordering::AcqRel);
        self.gate.queued.fetch_sub(1, Ordering::AcqRel);
        self.gate.changed.notify_waiters();
    }
}

/// A large frame let on, counted as on its way until dropped (when it is whole, or its
/// connection closes) or [`LET_ON_WINDOW`] has passed.
#[derive(Debug)]
pub struct LetOn<const MARK: u64> {
    gate: Arc<QueueGate<MARK>>,
    name: u64,
}

impl<const MARK: u64> Drop for LetOn<MARK> {
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
pub struct Place<const MARK: u64> {
    gate: Arc<QueueGate<MARK>>,
    name: u64,
}

impl<const MARK: u64> Place<MARK> {
    /// The place's name, which the connection's stream asks the gate with.
    pub fn name(&self) -> u64 {
        self.name
    }
}

impl<const MARK: u64> Drop for Place<MARK> {
    fn drop(&mut self) {
        let mut line = self.gate.line.lock();
        if let Some(at) = line.waiting.iter().position(|&name| name == self.name) {
            line.waiting.remove(at);
            drop(line);
            self.gate.changed.notify_waiters();
        }
    }
}

impl<const MARK: u64> QueueGate<MARK> {
    /// Counts a body of `bytes` in the queue until the returned guard is dropped.
    pub fn enter(self: &Arc<Self>, bytes: u64) -> Queued<MARK> {
        self.queued_bytes.fetch_add(bytes, Ordering::AcqRel);
        self.queued.fetch_add(1, Ordering::AcqRel);
        self.last_body.store(bytes, Ordering::Release);
        Queued { gate: Arc::clone(self), bytes }
    }

    /// Bytes of the bodies in the queue now.
    pub fn queued_bytes(&self) -> u64 {
        self.queued_bytes.load(Ordering::Acquire)
    }

    /// Large frames let on and on their way now (let on within [`LET_ON_WINDOW`]).
    #[cfg(test)]
    fn arriving(&self) -> usize {
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
    pub fn admit(
        self: &Arc<Self>,
        now: Instant,
        place: &mut Option<Place<MARK>>,
    ) -> Option<LetOn<MARK>> {
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
        bytes.saturating_add((arriving.len() as u64).saturating_mul(each)) < MARK
    }
}

impl<const MARK: u64> crate::room::Gate for QueueGate<MARK> {
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
    use crate::room::Gate;

    const MARK: u64 = 16 << 20;
    type LaneGate = QueueGate<MARK>;

    /// A sixteenth of the mark.
    const BODY: u64 = MARK / 16;

    fn admit(gate: &Arc<LaneGate>, now: Instant) -> Option<LetOn<MARK>> {
        gate.admit(now, &mut None)
    }

    #[test]
    fn open_until_a_body_went_to_the_lane_then_shut_at_the_mark() {
        let gate = Arc::new(LaneGate::default());
        let now = Instant::now();
        let early: Vec<LetOn<MARK>> = (0..20).map(|_| admit(&gate, now).expect("open")).collect();
        assert_eq!(gate.arriving(), 20, "counted all the same");
        drop(early);
        let queued: Vec<Queued<MARK>> = (0..15).map(|_| gate.enter(BODY)).collect();
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
        let on_the_way: Vec<LetOn<MARK>> = (0..20).filter_map(|_| admit(&gate, now)).collect();
        assert_eq!(on_the_way.len(), 16, "16 bodies: the mark");
    }

    /// A frame on its way counts until it is whole, or for the window at most, whatever it
    /// announced and however long it stalls: stalled senders cannot keep the gate shut.
    #[test]
    fn frames_let_on_count_until_whole_or_for_the_window() {
        let gate = Arc::new(LaneGate::default());
        let start = Instant::now();
        let _queued: Vec<Queued<MARK>> = (0..15).map(|_| gate.enter(BODY)).collect();
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
        let mut queued: Vec<Queued<MARK>> = (0..16).map(|_| gate.enter(BODY)).collect();
        let mut places: Vec<Option<Place<MARK>>> = (0..4).map(|_| None).collect();
        for place in &mut places {
            assert!(gate.admit(now, place).is_none());
        }
        assert_eq!(gate.waiting(), 4);
        let names: Vec<u64> = places.iter().flatten().map(Place::<MARK>::name).collect();
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
