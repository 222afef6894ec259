//! `Room`: a connection waiting for room in a byte [`Budget`] instead of being closed (the
//! nameserver's frame budget, `serverMaxPendingFrameBytes`; #25: "a body over the memory budget
//! must wait, not be refused"). When the bytes a connection's reader needs would take the budget
//! over its limit, the reader gives back what it held and asks its [`Room`] to wait; the
//! connection's stream ([`Paced`]) then reads nothing more (the sender's bytes stay in its
//! socket and the kernel's) until a give-back makes room, takes the bytes for the reader
//! ([`Room::adopt`]), and lets the reads go on. Waiting connections take room in the order they
//! came. A connection whose frame is under way keeps what it holds (its frame so far) while it
//! waits for more, so such connections could all wait on one another: the first of them to
//! wait while nobody has the budget's overdraft claims it instead, takes past the limit until
//! its frame is whole, and passes it on once that frame is answered. So every frame ends, and
//! all connections together hold at most the limit plus one frame. A connection that holds
//! nothing waits its turn.
//!
//! A connection may also be paused at a [`Gate`] (the nameserver's: a large frame does not
//! begin while the registration lane has enough queued) with its place in the gate's line: its
//! stream reads nothing until the gate is open for that place, asked again whenever the gate
//! says it changed and at least every [`GATE_RECHECK`].
//!
//! Who may make others wait: the nameserver's codec holds a frame's buffer, which grows to at
//! most sixteen times what arrived (never to the length a sender announces), so holding room costs a
//! sender the bytes it sends; a sender that stalls holds it until `serverFrameTimeoutSeconds`
//! closes it.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use tokio::io::{AsyncRead, ReadBuf};
use tokio::sync::futures::OwnedNotified;
use tokio::sync::Notify;
use tokio::time::Sleep;

use crate::budget::Budget;

/// How often at least a stream paused at its [`Gate`] asks it again (the gate may open as
/// time passes, not only when it says it changed).
pub const GATE_RECHECK: std::time::Duration = std::time::Duration::from_millis(50);

/// What a paused connection asks before reading on ([`Room::pause`]). Asking must not change
/// anything: the reader that paused decides again once it has read.
pub trait Gate: Send + Sync {
    /// Whether the connection paused at `place` in the gate's line may read on now.
    fn open(&self, place: u64) -> bool;
    /// Notified (all waiters) whenever the gate may have opened for someone.
    fn changed(&self) -> &Arc<Notify>;
}

/// What a connection's codec and stream share about its wait for room.
#[derive(Debug)]
pub struct Room {
    budget: Arc<Budget>,
    /// Bytes to take before reading on (0: not waiting), the limit to take them under, and
    /// the place in the budget's line.
    wanted: AtomicU64,
    limit: AtomicU64,
    ticket: AtomicU64,
    /// Bytes the stream took for the codec, not yet adopted by its holder.
    taken: AtomicU64,
    /// This connection's name for the budget's overdraft, and whether it waits with a frame
    /// under way (it may claim the overdraft then).
    holder: AtomicU64,
    under_way: AtomicBool,
    /// Paused at the stream's [`Gate`] (until it is open), and the place in its line.
    paused: AtomicBool,
    place: AtomicU64,
}

impl Room {
    pub fn new(budget: &Arc<Budget>) -> Arc<Self> {
        Arc::new(Self {
            budget: Arc::clone(budget),
            wanted: AtomicU64::new(0),
            limit: AtomicU64::new(0),
            ticket: AtomicU64::new(0),
            taken: AtomicU64::new(0),
            holder: AtomicU64::new(budget.holder_id()),
            under_way: AtomicBool::new(false),
            paused: AtomicBool::new(false),
            place: AtomicU64::new(0),
        })
    }

    /// Stops the reads until the stream's [`Gate`] is open for `place` (at once without one).
    pub fn pause(&self, place: u64) {
        self.place.store(place, Ordering::Release);
        self.paused.store(true, Ordering::Release);
    }

    /// Whether this connection's frame holds the budget's overdraft: it may take past the
    /// limit until the frame is answered.
    #[inline]
    pub fn has_overdraft(&self) -> bool {
        self.budget.has_overdraft(self.holder.load(Ordering::Acquire))
    }

    /// This connection's frame is whole: if it holds the overdraft, the name it holds it by
    /// (for the frame's hold to give up with its bytes, [`Held::carry_overdraft`]); the
    /// connection's next frame goes by a new name.
    ///
    /// [`Held::carry_overdraft`]: crate::budget::Held::carry_overdraft
    #[inline]
    pub fn frame_done(&self) -> Option<u64> {
        if !self.has_overdraft() {
            return None;
        }
        Some(self.holder.swap(self.budget.holder_id(), Ordering::AcqRel))
    }

    /// Stops the reads until `bytes` more can be taken under `limit` in turn, or, for a frame
    /// `under_way` (the caller holds part of the budget, and keeps it), past the limit with
    /// the budget's overdraft once nobody else has it.
    pub fn wait_for(&self, bytes: u64, limit: u64, under_way: bool) {
        self.limit.store(limit, Ordering::Release);
        self.under_way.store(under_way, Ordering::Release);
        if self.wanted.swap(bytes.max(1), Ordering::AcqRel) == 0 {
            self.ticket.store(self.budget.queue_up(), Ordering::Release);
        }
    }

    /// Whether others wait for room in the budget (a newcomer then waits behind them).
    pub fn others_wait(&self) -> bool {
        self.budget.waiters() > 0
    }

    /// Whether the reads are stopped for room, or paused at the gate.
    #[inline]
    pub fn waiting(&self) -> bool {
        self.wanted.load(Ordering::Acquire) > 0 || self.paused.load(Ordering::Acquire)
    }

    /// The bytes taken on the caller's behalf since it last asked (it holds them from now).
    #[inline]
    pub fn adopt(&self) -> u64 {
        // A load first: the codec asks on every decode, and almost never is anything taken.
        if self.taken.load(Ordering::Acquire) == 0 {
            return 0;
        }
        self.taken.swap(0, Ordering::AcqRel)
    }

    /// Takes the wanted bytes if they fit now; true when the reads may go on.
    fn try_take(&self) -> bool {
        let wanted = self.wanted.load(Ordering::Acquire);
        if wanted == 0 {
            return true;
        }
        let (ticket, limit) =
            (self.ticket.load(Ordering::Acquire), self.limit.load(Ordering::Acquire));
        let under_way =
            self.under_way.load(Ordering::Acquire).then(|| self.holder.load(Ordering::Acquire));
        if !self.budget.try_take_in_turn(ticket, wanted, limit, under_way) {
            return false;
        }
        self.taken.fetch_add(wanted, Ordering::AcqRel);
        self.wanted.store(0, Ordering::Release);
        self.budget.leave_line(ticket);
        true
    }
}

impl Drop for Room {
    fn drop(&mut self) {
        if *self.wanted.get_mut() > 0 {
            self.budget.leave_line(*self.ticket.get_mut());
        }
        self.budget.give_back(*self.taken.get_mut());
        self.budget.release_overdraft(*self.holder.get_mut());
    }
}

/// A connection's stream, read only while its [`Room`] is not waiting.
pub struct Paced<S> {
    inner: S,
    room: Arc<Room>,
    /// Registered for the budget's next give-back while waiting.
    notified: Option<Pin<Box<OwnedNotified>>>,
    gate: Option<Arc<dyn Gate>>,
    /// While paused: registered for the gate's next change, and when to ask again anyway.
    gate_changed: Option<Pin<Box<OwnedNotified>>>,
    recheck: Option<Pin<Box<Sleep>>>,
}

impl<S> Paced<S> {
    pub fn new(inner: S, room: &Arc<Room>) -> Self {
        Self {
            inner,
            room: Arc::clone(room),
            notified: None,
            gate: None,
            gate_changed: None,
            recheck: None,
        }
    }

    /// A stream that asks `gate` before reading on when its room is paused.
    pub fn with_gate(inner: S, room: &Arc<Room>, gate: Arc<dyn Gate>) -> Self {
        Self { gate: Some(gate), ..Self::new(inner, room) }
    }

    /// Ready once the room is not paused, or its gate is open for its place (asked when the
    /// gate changes, and every [`GATE_RECHECK`]).
    fn poll_gate(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        loop {
            let Some(gate) =
                self.gate.as_ref().filter(|_| self.room.paused.load(Ordering::Acquire))
            else {
                self.room.paused.store(false, Ordering::Release);
                (self.gate_changed, self.recheck) = (None, None);
                return Poll::Ready(());
            };
            let changed = match self.gate_changed.as_mut() {
                Some(changed) => changed,
                None => {
                    // Registered before asking, so a change in between is not missed.
                    let mut changed = Box::pin(Arc::clone(gate.changed()).notified_owned());
                    changed.as_mut().enable();
                    self.gate_changed.insert(changed)
                }
            };
            if gate.open(self.room.place.load(Ordering::Acquire)) {
                self.room.paused.store(false, Ordering::Release);
                (self.gate_changed, self.recheck) = (None, None);
                return Poll::Ready(());
            }
            let recheck =
                self.recheck.get_or_insert_with(|| Box::pin(tokio::time::sleep(GATE_RECHECK)));
            if changed.as_mut().poll(cx).is_ready() {
                self.gate_changed = None;
                continue;
            }
            ready!(recheck.as_mut().poll(cx));
            (self.gate_changed, self.recheck) = (None, None);
        }
    }

    /// Ready once the room's wanted bytes are taken (at once when it is not waiting).
    fn poll_room(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        loop {
            if self.room.try_take() {
                self.notified = None;
                return Poll::Ready(());
            }
            match self.notified.as_mut() {
                Some(notified) => {
                    ready!(notified.as_mut().poll(cx));
                    self.notified = None;
                }
                None => {
                    // Registered before looking again, so a give-back in between is not missed.
                    let mut notified = Box::pin(self.room.budget.room().notified_owned());
                    notified.as_mut().enable();
                    self.notified = Some(notified);
                }
            }
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Paced<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.room.waiting() {
            ready!(this.poll_gate(cx));
            ready!(this.poll_room(cx));
        }
        Pin::new(&mut this.inner).poll_read(cx, buf)
    }
}

forward_async_write!(Paced);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::budget::Held;
    use tokio::io::AsyncReadExt;

    #[tokio::test]
    async fn a_waiting_stream_reads_once_a_give_back_makes_room() {
        let budget = Arc::new(Budget::default());
        let mut other = Held::new(&budget);
        assert!(other.set(900, 1000));
        let room = Room::new(&budget);
        let (mut tx, rx) = tokio::io::duplex(64);
        let mut paced = Paced::new(rx, &room);
        tokio::io::AsyncWriteExt::write_all(&mut tx, b"abc").await.expect("write");
        room.wait_for(500, 1000, false);
        assert_eq!(budget.waiters(), 1);
        let mut buf = [0u8; 3];
        let read = tokio::time::timeout(std::time::Duration::from_millis(50), paced.read(&mut buf));
        assert!(read.await.is_err(), "no read while the budget has no room");
        drop(other);
        let n = paced.read(&mut buf).await.expect("read");
        assert_eq!(&buf[..n], b"abc"[..n].as_ref());
        assert_eq!((budget.used(), budget.waiters(), room.waiting()), (500, 0, false));
        assert_eq!(room.adopt(), 500, "taken for the codec");
        assert_eq!(room.adopt(), 0);
    }

    /// Open for places up to the one it holds; says when that changes.
    struct Upto(AtomicU64, Arc<Notify>);

    impl Gate for Upto {
        fn open(&self, place: u64) -> bool {
            place <= self.0.load(Ordering::Acquire)
        }
        fn changed(&self) -> &Arc<Notify> {
            &self.1
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_paused_stream_reads_once_its_gate_is_open_for_its_place() {
        let budget = Arc::new(Budget::default());
        let room = Room::new(&budget);
        let gate = Arc::new(Upto(AtomicU64::new(0), Arc::new(Notify::new())));
        let (mut tx, rx) = tokio::io::duplex(64);
        let mut paced = Paced::with_gate(rx, &room, gate.clone());
        tokio::io::AsyncWriteExt::write_all(&mut tx, b"abc").await.expect("write");
        room.pause(2);
        assert!(room.waiting());
        let mut buf = [0u8; 3];
        let read = tokio::time::timeout(std::time::Duration::from_secs(5), paced.read(&mut buf));
        assert!(read.await.is_err(), "no read while the gate is shut, however long");
        gate.0.store(1, Ordering::Release);
        gate.1.notify_waiters();
        let read = tokio::time::timeout(std::time::Duration::from_secs(5), paced.read(&mut buf));
        assert!(read.await.is_err(), "open for the place before it only");
        gate.0.store(2, Ordering::Release);
        gate.1.notify_waiters();
        let started = tokio::time::Instant::now();
        let n = paced.read(&mut buf).await.expect("read");
        assert_eq!(&buf[..n], b"abc"[..n].as_ref());
        assert_eq!(started.elapsed(), std::time::Duration::ZERO, "at once when told");
        assert!(!room.waiting());
        assert_eq!((budget.used(), budget.waiters()), (0, 0), "a pause takes no room");
        // Not told: asked again within the recheck period.
        room.pause(3);
        tokio::io::AsyncWriteExt::write_all(&mut tx, b"d").await.expect("write");
        gate.0.store(3, Ordering::Release);
        let started = tokio::time::Instant::now();
        assert_eq!(paced.read(&mut buf).await.expect("read"), 1);
        assert!(started.elapsed() <= GATE_RECHECK, "asked again within {GATE_RECHECK:?}");
    }

    #[test]
    fn rooms_take_in_the_order_they_came() {
        let budget = Arc::new(Budget::default());
        let mut other = Held::new(&budget);
        assert!(other.set(1000, 1000));
        let (first, second, third) = (Room::new(&budget), Room::new(&budget), Room::new(&budget));
        first.wait_for(800, 1000, false);
        second.wait_for(100, 1000, false);
        third.wait_for(50, 1000, false);
        assert!(other.set(850, 1000), "150 bytes free: room for the second, not the first");
        assert!(!second.try_take(), "not before the first in line");
        assert!(!first.try_take());
        drop(third);
        assert_eq!(budget.waiters(), 2, "one gave up: it leaves the line");
        drop(other);
        assert!(!second.try_take());
        assert!(first.try_take() && second.try_take());
        assert_eq!((budget.used(), budget.waiters()), (900, 0));
    }

    /// Frames under way that wait for more while keeping what they hold would wait on one
    /// another for ever: one of them at a time takes past the limit, until its frame is whole.
    #[test]
    fn frames_under_way_pass_the_limit_one_at_a_time() {
        let budget = Arc::new(Budget::default());
        let (a, b, newcomer) = (Room::new(&budget), Room::new(&budget), Room::new(&budget));
        let (mut a_held, mut b_held) = (Held::new(&budget), Held::new(&budget));
        assert!(a_held.set(500, 1000) && b_held.set(500, 1000));
        newcomer.wait_for(100, 1000, false);
        a.wait_for(300, 1000, true);
        b.wait_for(300, 1000, true);
        assert!(!newcomer.try_take(), "a connection holding nothing waits for room");
        assert!(a.try_take(), "a frame under way takes past the limit with the overdraft");
        a_held.adopt(a.adopt());
        assert!(a.has_overdraft() && !b.has_overdraft());
        assert!(!b.try_take(), "one overdraft at a time");
        assert_eq!(budget.used(), 1300);
        let id = a.frame_done().expect("A's frame held the overdraft");
        assert!(!a.has_overdraft(), "A's next frame does not");
        a_held.carry_overdraft(id);
        assert!(!b.try_take(), "held until A's frame is answered");
        drop(a_held);
        assert!(b.try_take(), "passed on once A's frame is answered");
        b_held.adopt(b.adopt());
        assert_eq!(budget.used(), 800, "A's 800 given back, B's 800 held");
        drop(b);
        assert!(
            !b_held.set(900, 850) && !budget.overdraft_in_use(),
            "B closed: the overdraft is free"
        );
        assert!(newcomer.try_take(), "room for the newcomer (900 of 1000)");
        drop(b_held);
        drop((a, newcomer));
        assert_eq!((budget.used(), budget.waiters()), (0, 0));
    }

    #[test]
    fn a_room_dropped_while_waiting_or_holding_leaves_the_budget_as_it_was() {
        let budget = Arc::new(Budget::default());
        let room = Room::new(&budget);
        room.wait_for(10, 100, false);
        drop(room);
        assert_eq!(budget.waiters(), 0);
        let room = Room::new(&budget);
        room.wait_for(10, 100, false);
        assert!(room.try_take());
        drop(room);
        assert_eq!((budget.used(), budget.waiters()), (0, 0), "taken, never adopted: given back");
    }
}
