//! `ServerCodec`: the remoting frame codec under the server's limits. `Framed` calls `decode`
//! after every read of the connection, so the codec knows when the frame being received began
//! (the connection task closes it after `serverFrameTimeoutSeconds`) and how many bytes the
//! connection holds for it, which it takes from the server-wide frame budget
//! (`serverMaxPendingFrameBytes`) and keeps until the frame is answered; when the budget has
//! no room the connection waits for it, reading nothing more (`transport::room`). The frame length
//! itself is capped by `com.rocketmq.remoting.frameMaxLength`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use bytes::BytesMut;
use remoting::frame::{FrameError, RemotingCodec};
use remoting::RemotingCommand;
use tokio::time::Instant;
use tokio_util::codec::{Decoder, Encoder};

use crate::limits::{Cap, Held, LANE_QUEUE_MARK};
use crate::state::State;
use transport::gate::{LetOn, Place};
use transport::room::Room;

/// A partial frame's buffer holds up to this much before it counts against the budget: an
/// ordinary request split across two reads never does.
const FREE_BYTES: usize = 16 * 1024;

/// A partial frame holding more than this is large: large frames together may hold at most
/// three quarters of the budget, so that a stall of large frames (an attack, or a burst of huge
/// registrations) always leaves room for ordinary requests and broker registrations.
const LARGE_BYTES: u64 = 1 << 20;

/// Why a connection's input was refused (the connection is closed, nothing is answered).
#[derive(Debug, thiserror::Error)]
pub enum ServerFrameError {
    /// Malformed, or longer than `frameMaxLength`.
    #[error(transparent)]
    Frame(#[from] FrameError),
}

impl From<std::io::Error> for ServerFrameError {
    fn from(e: std::io::Error) -> Self {
        Self::Frame(FrameError::Io(e))
    }
}

/// See the module docs.
pub struct ServerCodec {
    inner: RemotingCodec,
    state: Arc<State>,
    held: Held,
    /// What the frame decoded last holds until it is answered ([`ServerCodec::take_answering`]).
    answering: Option<Held>,
    room: Arc<Room>,
    started: Option<Instant>,
    /// The frame being received may go on: small, or let on through the lane gate.
    let_on: bool,
    /// A large frame let on, counted as on its way until it is whole.
    on_its_way: Option<LetOn<LANE_QUEUE_MARK>>,
    /// The connection's place in the lane gate's line while its large frame waits to begin.
    place: Option<Place<LANE_QUEUE_MARK>>,
    /// Whether the connection's last registration went to the lane (`ConnCtx::to_lane`).
    to_lane: Arc<AtomicBool>,
}

impl ServerCodec {
    /// A codec for one connection of `state`'s server, accepting frames up to
    /// `frameMaxLength` (as configured now); `room` is shared with the connection's stream,
    /// `to_lane` with its handlers (set while its last registration went to the lane).
    pub fn new(state: &Arc<State>, room: &Arc<Room>, to_lane: &Arc<AtomicBool>) -> Self {
        let max = usize::try_from(state.config.load().frame_max_length).unwrap_or(0);
        Self {
            inner: RemotingCodec::with_max_frame(max.saturating_sub(4)),
            held: Held::new(&state.limits.pending_frame_bytes),
            answering: None,
            room: Arc::clone(room),
            state: Arc::clone(state),
            started: None,
            let_on: false,
            on_its_way: None,
            place: None,
            to_lane: Arc::clone(to_lane),
        }
    }

    /// The budget the frame decoded last holds, for its handler to keep until it is answered.
    pub fn take_answering(&mut self) -> Option<Held> {
        self.answering.take()
    }

    /// When the frame being received began, or was let on after waiting for room; `None`
    /// between frames and while waiting (the frame deadline does not run then).
    pub fn frame_started(&self) -> Option<Instant> {
        self.started
    }

    /// Whether the connection waits for room in the budget (it is not idle then).
    pub fn waiting_for_room(&self) -> bool {
        self.room.waiting()
    }
}

impl Decoder for ServerCodec {
    type Item = RemotingCommand;
    type Error = ServerFrameError;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<RemotingCommand>, Self::Error> {
        if self.room.waiting() {
            return Ok(None);
        }
        let taken = self.room.adopt();
        if taken > 0 {
            self.held.adopt(taken);
        }
        let decoded = self.inner.decode(src).inspect_err(|e| {
            if let FrameError::TooLong { len, max } = e {
                self.state.limits.triggered(
                    Cap::FrameLength,
                    self.state.uptime_ms(),
                    format_args!("a frame of {len} bytes announced (frameMaxLength {})", max + 4),
                );
            }
        })?;
        if decoded.is_some() {
            self.started = None;
            self.let_on = false;
            self.on_its_way = None;
            // A frame that held part of the budget keeps it until it is answered: its body may
            // wait for the registration lane meanwhile (`Connection::handle` drops the hold).
            // So does a frame that took the overdraft: it passes it on once answered.
            if let Some(overdraft) = self.room.frame_done() {
                self.held.carry_overdraft(overdraft);
            }
            if self.held.bytes() > 0 {
                let next = Held::new(&self.state.limits.pending_frame_bytes);
                self.answering = Some(std::mem::replace(&mut self.held, next));
            }
            return Ok(decoded);
        }
        if src.is_empty() {
            self.started = None;
            self.let_on = false;
            self.on_its_way = None;
            self.held.set(0, u64::MAX);
            return Ok(None);
        }
        if !self.let_on && !self.may_begin() {
            return Ok(None);
        }
        self.started.get_or_insert_with(Instant::now);
        let wanted = self.capacity_wanted(src);
        let holding = if wanted > FREE_BYTES { wanted as u64 } else { 0 };
        if self.hold(holding) && wanted > src.capacity() {
            // Exactly this size (`reserve` may double the capacity instead).
            let mut grown = BytesMut::with_capacity(wanted);
            grown.extend_from_slice(src);
            *src = grown;
        }
        Ok(None)
    }
}

impl ServerCodec {
    /// Whether the frame being received may begin: one announcing more than [`LARGE_BYTES`]
    /// asks the lane gate (`transport::gate`) before it holds anything; while it is shut, the
    /// connection is paused, its frame not yet begun (its deadline not running).
    fn may_begin(&mut self) -> bool {
        let pending = self.inner.pending_len();
        let large = pending.is_some_and(|len| len as u64 > LARGE_BYTES);
        if !large || self.held.bytes() > 0 || !self.to_lane.load(Ordering::Acquire) {
            // Small, already under way (its first bytes arrived in a read that held room), or
            // from a broker whose last registration was answered in place.
            self.let_on = pending.is_some();
            return true;
        }
        let gate = &self.state.limits.lane_gate;
        if let Some(let_on) = gate.admit(Instant::now(), &mut self.place) {
            self.on_its_way = Some(let_on);
            self.let_on = true;
            return true;
        }
        self.started = None;
        self.room.pause(self.place.as_ref().map_or(0, Place::name));
        self.state.limits.triggered(
            Cap::PendingFrameBytes,
            self.state.uptime_ms(),
            format_args!(
                "{} bytes of registrations queued for the registration lane; a large frame \
                 waits to begin",
                gate.queued_bytes()
            ),
        );
        false
    }

    /// The capacity the partial frame's buffer should have now: the frame's whole length once
    /// a sixteenth of it arrived; before that, twice what it has once more than half of it (and
    /// more than [`FREE_BYTES`]) arrived; else what it has. So the buffer is at most sixteen
    /// times what arrived (a sender pays for the room it holds with the bytes it sends: the
    /// length it announces is never taken on trust), and a large frame is copied about an
    /// eighth of its length on the way: doubling all the way copied it whole, and jumping at an
    /// eighth still copied nearly half of it (S2's profile: memmove 3.4 % of the server's
    /// samples before, 9.8 % then; its reads 0.86–0.89× in paired rounds). The buffer grows
    /// before it is full: a connection that waits for room still has room for the frame
    /// reader's next read (which would otherwise double a full buffer, unaccounted).
    fn capacity_wanted(&self, src: &BytesMut) -> usize {
        let (capacity, arrived) = (src.capacity(), src.len());
        match self.inner.pending_len() {
            Some(payload) if payload > capacity && arrived.saturating_mul(16) >= payload => payload,
            Some(payload) if payload > capacity && arrived > FREE_BYTES.max(capacity / 2) => {
                payload.min(capacity.saturating_mul(2).max(2 * FREE_BYTES))
            }
            _ => capacity,
        }
    }

    /// Holds `holding` bytes of the budget for this connection's partial frame. When taking
    /// more would pass the limit, keeps what it holds and waits for the rest
    /// ([`Room::wait_for`]; a frame already under way may take the overdraft then): false.
    fn hold(&mut self, holding: u64) -> bool {
        if self.room.has_overdraft() {
            self.held.set(holding, u64::MAX);
            return true;
        }
        let config = self.state.config.load();
        let budget = u64::try_from(config.server_max_pending_frame_bytes).unwrap_or(u64::MAX);
        let longest = u64::try_from(config.frame_max_length).unwrap_or(0);
        let limit = if holding > LARGE_BYTES {
            // Still room for one longest frame when the budget is set that low.
            (budget - budget / 4).max(longest.min(budget))
        } else if self.state.limits.pending_frame_bytes.overdraft_in_use() {
            // The frame on the overdraft does not eat the ordinary frames' quarter.
            budget.saturating_add(longest)
        } else {
            budget
        };
        // A large frame waits behind those already waiting (in the order they came).
        let queued = holding > LARGE_BYTES.max(self.held.bytes()) && self.room.others_wait();
        if !queued && self.held.set(holding, limit) {
            return true;
        }
        self.state.limits.triggered(
            Cap::PendingFrameBytes,
            self.state.uptime_ms(),
            format_args!(
                "{} bytes held for partial frames; a connection holding {} and needing {holding} \
                 waits for room (serverMaxPendingFrameBytes {limit})",
                self.state.limits.pending_frame_bytes.used(),
                self.held.bytes()
            ),
        );
        let under_way = self.held.bytes() > 0;
        self.room.wait_for(holding.saturating_sub(self.held.bytes()), limit, under_way);
        // A frame that holds nothing while it waits is timed from when it is let on. One under
        // way keeps its deadline: it holds room meanwhile (stalled senders that filled the
        // budget all reach their deadlines together, not one after another).
        if !under_way {
            self.started = None;
        }
        false
    }
}

impl Encoder<RemotingCommand> for ServerCodec {
    type Error = ServerFrameError;

    fn encode(&mut self, cmd: RemotingCommand, dst: &mut BytesMut) -> Result<(), Self::Error> {
        Ok(self.inner.encode(cmd, dst)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use remoting::RequestCode;

    /// Feeds `bytes` to the codec as `Framed` does: each read fills at most the buffer's spare
    /// room (a full buffer is grown by a byte's reserve first), then decodes.
    fn feed(
        codec: &mut ServerCodec,
        src: &mut BytesMut,
        mut bytes: &[u8],
    ) -> Option<RemotingCommand> {
        let mut decoded = None;
        while !bytes.is_empty() {
            assert!(!codec.waiting_for_room(), "no read while waiting");
            if src.len() == src.capacity() {
                src.reserve(1);
            }
            let n = bytes.len().min(src.capacity() - src.len());
            src.extend_from_slice(&bytes[..n]);
            bytes = &bytes[n..];
            decoded = codec.decode(src).expect("decode").or(decoded);
        }
        decoded
    }

    #[test]
    fn a_frame_holds_at_most_sixteen_times_what_arrived_and_its_buffer_until_it_is_answered() {
        let dir = tempfile::tempdir().expect("dir");
        let config = Config {
            kv_config_path: dir.path().join("kv.json").to_string_lossy().into_owned(),
            ..Config::default()
        };
        let state = crate::build_state(config, None).expect("state");
        let budget = &state.limits.pending_frame_bytes;
        let room = Room::new(budget);
        let mut codec = ServerCodec::new(&state, &room, &Arc::default());
        let request =
            RemotingCommand::request(RequestCode::RegisterBroker).with_body(vec![b'x'; 3_000_000]);
        let frame = remoting::frame::encode_to_bytes(&request).expect("encode");
        let payload = frame.len() as u64 - 4;

        // The frame announces 3 MB; what is held follows what arrived, never the announcement.
        let mut src = BytesMut::with_capacity(8 * 1024);
        let mut arrived = 0;
        for step in [20_000, 30_000, 450_000, 500_000] {
            assert!(feed(&mut codec, &mut src, &frame[arrived..arrived + step]).is_none());
            arrived += step;
            let used = budget.used();
            // (Up to 64 KiB the frame reader grows the buffer by its own steps.)
            let most = (16 * arrived as u64).max(128 * 1024);
            assert!(used > 0 && used <= most, "{used} held for {arrived} arrived");
            assert_eq!(used, src.capacity() as u64, "the buffer's capacity, exactly");
        }
        let decoded = feed(&mut codec, &mut src, &frame[arrived..]).expect("the frame");
        assert_eq!(decoded.body_bytes().len(), 3_000_000);
        assert_eq!(budget.used(), payload, "its buffer, grown to the frame, held while handled");
        let answering = codec.take_answering().expect("held");
        assert!(codec.take_answering().is_none());
        assert!(codec.decode(&mut src).expect("decode").is_none());
        assert_eq!(budget.used(), payload, "the next frame's wait takes nothing from it");
        drop(answering);
        assert_eq!(budget.used(), 0, "given back once answered");

        // A frame that arrives whole in one read never holds anything.
        let mut src = BytesMut::from(&frame[..]);
        assert!(codec.decode(&mut src).expect("decode").is_some());
        assert!(codec.take_answering().is_none());
        assert_eq!(budget.used(), 0);
    }
}
