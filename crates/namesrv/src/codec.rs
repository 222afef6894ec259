//! `ServerCodec`: the remoting frame codec under the server's limits. `Framed` calls `decode`
//! after every read of the connection, so the codec knows when the frame being received began
//! (the connection task closes it after `serverFrameTimeoutSeconds`) and how many bytes the
//! connection holds for it, which it takes from the server-wide partial-frame budget
//! (`serverMaxPendingFrameBytes`). The frame length itself is capped by
//! `com.rocketmq.remoting.frameMaxLength`.

use std::sync::Arc;

use bytes::BytesMut;
use remoting::frame::{FrameError, RemotingCodec};
use remoting::RemotingCommand;
use tokio::time::Instant;
use tokio_util::codec::{Decoder, Encoder};

use crate::limits::{Cap, Held};
use crate::state::State;

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
    /// Holding the partial frame would pass `serverMaxPendingFrameBytes`.
    #[error("a partial frame of {held} bytes would pass serverMaxPendingFrameBytes ({limit})")]
    PendingBytes { held: u64, limit: u64 },
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
    started: Option<Instant>,
}

impl ServerCodec {
    /// A codec for one connection of `state`'s server, accepting frames up to
    /// `frameMaxLength` (as configured now).
    pub fn new(state: &Arc<State>) -> Self {
        let max = usize::try_from(state.config.load().frame_max_length).unwrap_or(0);
        Self {
            inner: RemotingCodec::with_max_frame(max.saturating_sub(4)),
            held: Held::new(&state.limits.pending_frame_bytes),
            state: Arc::clone(state),
            started: None,
        }
    }

    /// When the first bytes of the frame being received arrived; `None` between frames.
    pub fn frame_started(&self) -> Option<Instant> {
        self.started
    }
}

impl Decoder for ServerCodec {
    type Item = RemotingCommand;
    type Error = ServerFrameError;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<RemotingCommand>, Self::Error> {
        let decoded = self.inner.decode(src).inspect_err(|e| {
            if let FrameError::TooLong { len, max } = e {
                self.state.limits.triggered(
                    Cap::FrameLength,
                    self.state.uptime_ms(),
                    format_args!("a frame of {len} bytes announced (frameMaxLength {})", max + 4),
                );
            }
        })?;
        if decoded.is_some() || src.is_empty() {
            self.started = None;
            self.held.set(0, u64::MAX);
            return Ok(decoded);
        }
        self.started.get_or_insert_with(Instant::now);
        self.reserve_large_frame(src)?;
        let holding = if src.capacity() > FREE_BYTES { src.capacity() as u64 } else { 0 };
        self.hold(holding)?;
        Ok(None)
    }
}

impl ServerCodec {
    /// Once more than [`FREE_BYTES`] of a frame that does not fit the buffer have arrived, makes
    /// room for the whole frame in one allocation, taken from the budget first. Growing by
    /// doubling instead copies a 16 MB frame some ten times and leaves each smaller step to the
    /// allocator, which may keep it resident: 16 connections stalled at 8 of 16 MB grew the
    /// process by twice the budget.
    fn reserve_large_frame(&mut self, src: &mut BytesMut) -> Result<(), ServerFrameError> {
        // The inner codec has read the length prefix; `src` holds the payload so far.
        let Some(payload) = self.inner.pending_len() else {
            return Ok(());
        };
        if src.len() <= FREE_BYTES || payload <= src.capacity() {
            return Ok(());
        }
        self.hold(payload as u64)?;
        // Exactly this size (`reserve` may double the capacity instead).
        let mut room = BytesMut::with_capacity(payload);
        room.extend_from_slice(src);
        *src = room;
        Ok(())
    }

    /// Holds `holding` bytes of the budget for this connection's partial frame, or refuses.
    fn hold(&mut self, holding: u64) -> Result<(), ServerFrameError> {
        let config = self.state.config.load();
        let budget = u64::try_from(config.server_max_pending_frame_bytes).unwrap_or(u64::MAX);
        let limit = if holding > LARGE_BYTES {
            // Still room for one longest frame when the budget is set that low.
            let longest = u64::try_from(config.frame_max_length).unwrap_or(0).min(budget);
            (budget - budget / 4).max(longest)
        } else {
            budget
        };
        if !self.held.set(holding, limit) {
            self.state.limits.triggered(
                Cap::PendingFrameBytes,
                self.state.uptime_ms(),
                format_args!(
                    "{} bytes held for partial frames; a connection needing {holding} closed \
                     (serverMaxPendingFrameBytes {limit})",
                    self.state.limits.pending_frame_bytes.used()
                ),
            );
            return Err(ServerFrameError::PendingBytes { held: holding, limit });
        }
        Ok(())
    }
}

impl Encoder<RemotingCommand> for ServerCodec {
    type Error = ServerFrameError;

    fn encode(&mut self, cmd: RemotingCommand, dst: &mut BytesMut) -> Result<(), Self::Error> {
        Ok(self.inner.encode(cmd, dst)?)
    }
}
