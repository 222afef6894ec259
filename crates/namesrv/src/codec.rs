//! `ServerCodec`: the remoting frame codec under the server's limits. `Framed` calls `decode`
//! after every read of the connection, so the codec knows when the frame being received began
//! (the connection task closes it after `serverFrameTimeoutSeconds`) and how many bytes the
//! connection holds for it, which it takes from the server-wide frame budget
//! (`serverMaxPendingFrameBytes`) and keeps until the frame is answered; when the budget has
//! no room the connection waits for it, reading nothing more (`transport::room`). The frame length
//! itself is capped by `com.rocketmq.remoting.frameMaxLength`.

use std::sync::Arc;

use bytes::BytesMut;
use remoting::frame::{FrameError, RemotingCodec};
use remoting::RemotingCommand;
use tokio::time::Instant;
use tokio_util::codec::{Decoder, Encoder};

use crate::limits::{Cap, Held};
use crate::state::State;
use transport::room::Room;

/// A partial frame's buffer holds up to this much before it counts against the budget: an
/// ordinary request split across two reads never does.
const FREE_BYTES: usize = 16 * 1024;

/// Spare room a waiting connection's buffer keeps past what arrived (the frame reader asks for
/// a byte more before it reads, which would otherwise double a full buffer).
const WAIT_ROOM: usize = 8 * 1024;

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
}

impl ServerCodec {
    /// A codec for one connection of `state`'s server, accepting frames up to
    /// `frameMaxLength` (as configured now); `room` is shared with the connection's stream.
    pub fn new(state: &Arc<State>, room: &Arc<Room>) -> Self {
        let max = usize::try_from(state.config.load().frame_max_length).unwrap_or(0);
        Self {
            inner: RemotingCodec::with_max_frame(max.saturating_sub(4)),
            held: Held::new(&state.limits.pending_frame_bytes),
            answering: None,
            room: Arc::clone(room),
            state: Arc::clone(state),
            started: None,
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
            // A frame that held part of the budget keeps it until it is answered: its body may
            // wait for the registration lane meanwhile (`Connection::handle` drops the hold).
            if self.held.bytes() > 0 {
                let next = Held::new(&self.state.limits.pending_frame_bytes);
                self.answering = Some(std::mem::replace(&mut self.held, next));
            }
            return Ok(decoded);
        }
        if src.is_empty() {
            self.started = None;
            self.held.set(0, u64::MAX);
            return Ok(None);
        }
        self.started.get_or_insert_with(Instant::now);
        if self.reserve_large_frame(src) {
            let holding = if src.capacity() > FREE_BYTES { src.capacity() as u64 } else { 0 };
            self.hold(holding, src);
        }
        Ok(None)
    }
}

impl ServerCodec {
    /// Once more than [`FREE_BYTES`] of a frame that does not fit the buffer have arrived, makes
    /// room for the whole frame in one allocation, taken from the budget first. Growing by
    /// doubling instead copies a 16 MB frame some ten times and leaves each smaller step to the
    /// allocator, which may keep it resident: 16 connections stalled at 8 of 16 MB grew the
    /// process by twice the budget. False when the connection now waits for room instead.
    fn reserve_large_frame(&mut self, src: &mut BytesMut) -> bool {
        // The inner codec has read the length prefix; `src` holds the payload so far.
        let Some(payload) = self.inner.pending_len() else {
            return true;
        };
        if src.len() <= FREE_BYTES || payload <= src.capacity() {
            return true;
        }
        if !self.hold(payload as u64, src) {
            return false;
        }
        // Exactly this size (`reserve` may double the capacity instead).
        let mut room = BytesMut::with_capacity(payload);
        room.extend_from_slice(src);
        *src = room;
        true
    }

    /// Holds `holding` bytes of the budget for this connection's partial frame. When that
    /// would pass the limit, gives back all it held, keeps what arrived in a buffer of its
    /// size, and waits for room ([`Room::wait_for`]): false.
    fn hold(&mut self, holding: u64, src: &mut BytesMut) -> bool {
        let config = self.state.config.load();
        let budget = u64::try_from(config.server_max_pending_frame_bytes).unwrap_or(u64::MAX);
        let limit = if holding > LARGE_BYTES {
            // Still room for one longest frame when the budget is set that low.
            let longest = u64::try_from(config.frame_max_length).unwrap_or(0).min(budget);
            (budget - budget / 4).max(longest)
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
                "{} bytes held for partial frames; a connection needing {holding} waits for \
                 room (serverMaxPendingFrameBytes {limit})",
                self.state.limits.pending_frame_bytes.used()
            ),
        );
        self.held.set(0, u64::MAX);
        let by_capacity = holding == src.capacity() as u64;
        if src.capacity() > src.len() + WAIT_ROOM {
            let mut kept = BytesMut::with_capacity(src.len() + WAIT_ROOM);
            kept.extend_from_slice(src);
            *src = kept;
        }
        // A buffer's hold is for its capacity, which may have shrunk just now.
        let wanted = if by_capacity { src.capacity() as u64 } else { holding }.min(limit);
        self.room.wait_for(wanted, limit);
        self.started = None;
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

    #[test]
    fn a_frame_holds_its_part_of_the_budget_until_it_is_answered() {
        let dir = tempfile::tempdir().expect("dir");
        let config = Config {
            kv_config_path: dir.path().join("kv.json").to_string_lossy().into_owned(),
            ..Config::default()
        };
        let state = crate::build_state(config, None).expect("state");
        let budget = &state.limits.pending_frame_bytes;
        let room = Room::new(budget);
        let mut codec = ServerCodec::new(&state, &room);
        let request =
            RemotingCommand::request(RequestCode::RegisterBroker).with_body(vec![b'x'; 100_000]);
        let frame = remoting::frame::encode_to_bytes(&request).expect("encode");
        let payload = frame.len() as u64 - 4;

        let mut src = BytesMut::from(&frame[..40_000]);
        assert!(codec.decode(&mut src).expect("decode").is_none());
        assert_eq!(budget.used(), payload, "its whole length, once under way");
        src.extend_from_slice(&frame[40_000..]);
        let decoded = codec.decode(&mut src).expect("decode").expect("the frame");
        assert_eq!(decoded.body_bytes().len(), 100_000);
        assert_eq!(budget.used(), payload, "held while the frame is handled");
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
