//! `Room`: a connection waiting for room in a byte [`Budget`] instead of being closed (the
//! nameserver's frame budget, `serverMaxPendingFrameBytes`; #25: "a body over the memory budget
//! must wait, not be refused"). When the bytes a connection's reader needs would take the budget
//! over its limit, the reader gives back what it held and asks its [`Room`] to wait; the
//! connection's stream ([`Paced`]) then reads nothing more (the sender's bytes stay in its
//! socket and the kernel's) until a give-back makes room, takes the bytes for the reader
//! ([`Room::adopt`]), and lets the reads go on. Waiting connections take room in the order they
//! came. A waiting connection holds no part of the budget, so the connections holding it are
//! all receiving or answering and each ends: nobody waits on a waiter.
//!
//! Who may make others wait: the nameserver's codec takes a frame's whole announced length once
//! more than 16 KiB of it arrived, so a sender that announces large frames and stalls holds room
//! until `serverFrameTimeoutSeconds` closes it — as before, when the others were closed instead.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use tokio::io::{AsyncRead, ReadBuf};
use tokio::sync::futures::OwnedNotified;

use crate::budget::Budget;

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
}

impl Room {
    pub fn new(budget: &Arc<Budget>) -> Arc<Self> {
        Arc::new(Self {
            budget: Arc::clone(budget),
            wanted: AtomicU64::new(0),
            limit: AtomicU64::new(0),
            ticket: AtomicU64::new(0),
            taken: AtomicU64::new(0),
        })
    }

    /// Stops the reads until `bytes` can be taken under `limit` (the caller holds nothing).
    pub fn wait_for(&self, bytes: u64, limit: u64) {
        self.limit.store(limit, Ordering::Release);
        if self.wanted.swap(bytes.max(1), Ordering::AcqRel) == 0 {
            self.ticket.store(self.budget.queue_up(), Ordering::Release);
        }
    }

    /// Whether others wait for room in the budget (a newcomer then waits behind them).
    pub fn others_wait(&self) -> bool {
        self.budget.waiters() > 0
    }

    /// Whether the reads are stopped for room.
    #[inline]
    pub fn waiting(&self) -> bool {
        self.wanted.load(Ordering::Acquire) > 0
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
        if !self.budget.try_take_in_turn(ticket, wanted, limit) {
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
    }
}

/// A connection's stream, read only while its [`Room`] is not waiting.
pub struct Paced<S> {
    inner: S,
    room: Arc<Room>,
    /// Registered for the budget's next give-back while waiting.
    notified: Option<Pin<Box<OwnedNotified>>>,
}

impl<S> Paced<S> {
    pub fn new(inner: S, room: &Arc<Room>) -> Self {
        Self { inner, room: Arc::clone(room), notified: None }
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
        room.wait_for(500, 1000);
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

    #[test]
    fn rooms_take_in_the_order_they_came() {
        let budget = Arc::new(Budget::default());
        let mut other = Held::new(&budget);
        assert!(other.set(1000, 1000));
        let (first, second, third) = (Room::new(&budget), Room::new(&budget), Room::new(&budget));
        first.wait_for(800, 1000);
        second.wait_for(100, 1000);
        third.wait_for(50, 1000);
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

    #[test]
    fn a_room_dropped_while_waiting_or_holding_leaves_the_budget_as_it_was() {
        let budget = Arc::new(Budget::default());
        let room = Room::new(&budget);
        room.wait_for(10, 100);
        drop(room);
        assert_eq!(budget.waiters(), 0);
        let room = Room::new(&budget);
        room.wait_for(10, 100);
        assert!(room.try_take());
        drop(room);
        assert_eq!((budget.used(), budget.waiters()), (0, 0), "taken, never adopted: given back");
    }
}
