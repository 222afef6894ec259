//! `Budget`: a server-wide byte budget that connections take bytes from, give back, and wait
//! in line for ([`crate::room`]); `Held`: what one connection holds of it.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use tokio::sync::Notify;

/// A server-wide byte budget: connections take bytes from it and give them back. A connection
/// may wait for room in a line ([`Budget::queue_up`]): only the first in line may take, and
/// every give-back wakes the line.
#[derive(Debug, Default)]
pub struct Budget {
    used: AtomicU64,
    /// Connections waiting for room (only then does a give-back notify).
    waiters: AtomicUsize,
    /// Their tickets, in the order they came.
    line: Mutex<VecDeque<u64>>,
    next_ticket: AtomicU64,
    room: Arc<Notify>,
    /// The one holder that may take past the limit ([`Budget::claim_overdraft`]; 0: none).
    overdraft: AtomicU64,
    next_holder: AtomicU64,
}

impl Budget {
    /// Takes `bytes` if the total stays within `limit`; false (nothing taken) otherwise.
    pub fn try_take(&self, bytes: u64, limit: u64) -> bool {
        self.used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
                used.checked_add(bytes).filter(|total| *total <= limit)
            })
            .is_ok()
    }

    /// Gives back `bytes` taken before, waking whoever waits for room.
    pub fn give_back(&self, bytes: u64) {
        self.used.fetch_sub(bytes, Ordering::AcqRel);
        if bytes > 0 && self.waiters.load(Ordering::Acquire) > 0 {
            self.room.notify_waiters();
        }
    }

    /// Joins the line of connections waiting for room; the ticket leaves it
    /// ([`Budget::leave_line`]).
    pub fn queue_up(&self) -> u64 {
        let ticket = self.next_ticket.fetch_add(1, Ordering::AcqRel);
        self.line.lock().push_back(ticket);
        self.waiters.fetch_add(1, Ordering::AcqRel);
        ticket
    }

    /// Takes `bytes` for `ticket` if it is first in line and they fit within `limit`; or, for a
    /// `holder` that already holds part of the budget (a frame under way), wherever it is in
    /// line, past the limit when it has or can claim the overdraft.
    pub fn try_take_in_turn(
        &self,
        ticket: u64,
        bytes: u64,
        limit: u64,
        under_way: Option<u64>,
    ) -> bool {
        if self.line.lock().front() == Some(&ticket) && self.try_take(bytes, limit) {
            return true;
        }
        match under_way {
            Some(holder) if self.claim_overdraft(holder) => {
                self.take(bytes);
                true
            }
            _ => false,
        }
    }

    /// Takes `bytes` whatever the limit (for the holder of the overdraft).
    pub fn take(&self, bytes: u64) {
        self.used.fetch_add(bytes, Ordering::AcqRel);
    }

    /// A number naming one holder (never 0), for [`Budget::claim_overdraft`].
    pub fn holder_id(&self) -> u64 {
        self.next_holder.fetch_add(1, Ordering::AcqRel) + 1
    }

    /// Makes `holder` the one that may take past the limit, if nobody is (or it already is).
    /// Frames under way keep what they hold while they wait for more, so they could all wait
    /// on one another; the holder of the overdraft finishes its frame, then gives it up
    /// ([`Budget::release_overdraft`]), so the limit is passed by one frame at most.
    pub fn claim_overdraft(&self, holder: u64) -> bool {
        match self.overdraft.compare_exchange(0, holder, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => true,
            Err(owner) => owner == holder,
        }
    }

    /// Whether anyone holds the overdraft now.
    pub fn overdraft_in_use(&self) -> bool {
        self.overdraft.load(Ordering::Acquire) != 0
    }

    /// Whether `holder` holds the overdraft.
    pub fn has_overdraft(&self, holder: u64) -> bool {
        self.overdraft.load(Ordering::Acquire) == holder
    }

    /// Gives up the overdraft if `holder` has it, and lets the line look.
    pub fn release_overdraft(&self, holder: u64) {
        let released =
            self.overdraft.compare_exchange(holder, 0, Ordering::AcqRel, Ordering::Acquire).is_ok();
        if released && self.waiters.load(Ordering::Acquire) > 0 {
            self.room.notify_waiters();
        }
    }

    /// Leaves the line (having taken, or given up), and lets the next one look.
    pub fn leave_line(&self, ticket: u64) {
        {
            let mut line = self.line.lock();
            if let Some(at) = line.iter().position(|&t| t == ticket) {
                line.remove(at);
            }
        }
        self.waiters.fetch_sub(1, Ordering::AcqRel);
        self.room.notify_waiters();
    }

    /// Connections waiting for room now.
    pub fn waiters(&self) -> usize {
        self.waiters.load(Ordering::Acquire)
    }

    /// Woken by every give-back while connections wait (while connections wait in line).
    pub fn room(&self) -> Arc<Notify> {
        Arc::clone(&self.room)
    }

    /// Bytes taken now.
    pub fn used(&self) -> u64 {
        self.used.load(Ordering::Acquire)
    }
}

/// Bytes one connection holds of a [`Budget`]; adjusted as its need changes, all given back
/// when dropped.
#[derive(Debug)]
pub struct Held {
    budget: Arc<Budget>,
    bytes: u64,
    /// The overdraft this hold carries, given up with the bytes ([`Held::carry_overdraft`]).
    overdraft: Option<u64>,
}

impl Held {
    pub fn new(budget: &Arc<Budget>) -> Self {
        Self { budget: Arc::clone(budget), bytes: 0, overdraft: None }
    }

    /// Keeps the budget's overdraft, claimed by `holder` for the frame this holds, until this
    /// hold is given back (the frame answered): so the limit is passed by one frame at most.
    pub fn carry_overdraft(&mut self, holder: u64) {
        self.overdraft = Some(holder);
    }

    /// Holds `bytes` in all (taking or giving back the difference); false, holding what it
    /// held, when taking more would pass `limit`.
    #[inline]
    pub fn set(&mut self, bytes: u64, limit: u64) -> bool {
        if bytes == self.bytes {
            // The common case (a frame that arrived whole): no shared counter touched.
            return true;
        }
        if bytes > self.bytes {
            if !self.budget.try_take(bytes - self.bytes, limit) {
                return false;
            }
        } else {
            self.budget.give_back(self.bytes - bytes);
        }
        self.bytes = bytes;
        true
    }

    /// Bytes held.
    #[inline]
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Holds `bytes` more that were taken from the budget on this holder's behalf.
    pub fn adopt(&mut self, bytes: u64) {
        self.bytes += bytes;
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        self.budget.give_back(self.bytes);
        if let Some(holder) = self.overdraft {
            self.budget.release_overdraft(holder);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_budget_is_shared_and_given_back() {
        let budget = Arc::new(Budget::default());
        let mut a = Held::new(&budget);
        let mut b = Held::new(&budget);
        assert!(a.set(600, 1000));
        assert!(!b.set(500, 1000), "over the limit: refused");
        assert_eq!((b.bytes(), budget.used()), (0, 600));
        assert!(b.set(400, 1000));
        assert!(a.set(100, 1000), "shrinking gives back");
        assert!(b.set(900, 1000));
        drop(a);
        drop(b);
        assert_eq!(budget.used(), 0);
    }
}
