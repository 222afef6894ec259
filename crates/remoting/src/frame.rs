//! Framing: `RemotingCodec`, the tokio-util codec for `total_length i32 | header_info i32 |
//! header | body`, with Java's limits. Every malformed frame is an error (the caller closes the
//! connection without a reply); nothing here panics on input or allocates more than the declared,
//! bounded frame length.
//!
//! The length check is hand-rolled rather than composed from `LengthDelimitedCodec`, which would
//! reserve the whole declared frame (up to 16 MiB) as soon as a 4-byte prefix arrives.

use std::io;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use tokio_util::codec::{Decoder, Encoder};

use crate::command::{RemotingCommand, SerializeType};
use crate::header::{self, HeaderError};

/// Java's default `com.rocketmq.remoting.frameMaxLength`, which counts the 4-byte length prefix.
pub const JAVA_FRAME_MAX_LENGTH: usize = 16_777_216;

/// The largest `total_length` accepted by default: `JAVA_FRAME_MAX_LENGTH - 4` = 16 777 212.
pub const DEFAULT_MAX_FRAME_LEN: usize = JAVA_FRAME_MAX_LENGTH - 4;

/// The largest header the 24-bit header-length field can describe.
pub const MAX_HEADER_LEN: usize = 0x00FF_FFFF;

/// The most buffer space reserved ahead of data actually received for a frame whose sender has
/// not yet shown it is really sending it.
const RESERVE_CHUNK: usize = 64 * 1024;

/// Why a frame could not be decoded or encoded. Any decode error means "close the connection,
/// send nothing" (Java `NettyDecoder`).
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    #[error(transparent)]
    Io(#[from] io::Error),
    /// `total_length` above the maximum, or with the high bit set (read unsigned, as Netty does).
    #[error("frame length {len} exceeds the maximum {max}")]
    TooLong { len: u64, max: usize },
    /// `total_length` below 4: the header-info int cannot be read.
    #[error("frame length {0} is too short for the header-info field")]
    TooShort(u32),
    /// `header_length > total_length - 4`.
    #[error("decode error, bad header length: {header_len} (frame length {frame_len})")]
    BadHeaderLength { header_len: usize, frame_len: usize },
    /// A serialize-type byte other than 0 (JSON) or 1 (ROCKETMQ).
    #[error("unknown serialize type {0}")]
    UnknownSerializeType(u8),
    /// The header bytes do not decode (or, when encoding, cannot be encoded).
    #[error(transparent)]
    Header(#[from] HeaderError),
    /// Encoding: the header does not fit the 24-bit length field.
    #[error("header of {0} bytes does not fit the 24-bit header length")]
    HeaderTooLong(usize),
    /// Encoding: the frame does not fit the int32 length prefix.
    #[error("frame of {0} bytes does not fit the int32 length prefix")]
    FrameTooLong(usize),
    /// [`decode_frame`]: the length prefix disagrees with the bytes given.
    #[error("length prefix says {declared} bytes but {actual} follow")]
    LengthMismatch { declared: usize, actual: usize },
}

/// The remoting frame codec (Java `NettyDecoder` + `NettyEncoder`). Decodes both header types;
/// encodes each command in its own `serialize_type`.
#[derive(Debug, Clone)]
pub struct RemotingCodec {
    max_frame_len: usize,
    /// The `total_length` of the frame being received, once its prefix has been consumed.
    pending: Option<usize>,
}

impl Default for RemotingCodec {
    fn default() -> Self {
        Self::new()
    }
}

impl RemotingCodec {
    /// A codec accepting `total_length` up to [`DEFAULT_MAX_FRAME_LEN`].
    pub fn new() -> Self {
        Self::with_max_frame(DEFAULT_MAX_FRAME_LEN)
    }

    /// A codec accepting `total_length` (the value of the length prefix, which does not count
    /// itself) up to `max_frame_len`, capped at `i32::MAX`. For a Java `frameMaxLength` setting
    /// `m`, pass `m - 4`.
    pub fn with_max_frame(max_frame_len: usize) -> Self {
        Self { max_frame_len: max_frame_len.min(i32::MAX as usize), pending: None }
    }

    /// The largest accepted `total_length`.
    pub fn max_frame_len(&self) -> usize {
        self.max_frame_len
    }
}

/// The header-info int: serialize type in the high byte, header length in the low 24 bits
/// (longer lengths are masked, as Java does). Java: `RemotingCommand#markProtocolType`
pub const fn header_info(header_len: u32, ty: SerializeType) -> u32 {
    ((ty as u32) << 24) | (header_len & MAX_HEADER_LEN as u32)
}

/// Checks a length prefix: the frame length it announces, or why it is refused.
fn check_prefix(raw: u32, max: usize) -> Result<usize, FrameError> {
    let len = raw as usize;
    if raw > i32::MAX as u32 || len > max {
        return Err(FrameError::TooLong { len: u64::from(raw), max });
    }
    if len < 4 {
        return Err(FrameError::TooShort(raw));
    }
    Ok(len)
}

/// Decodes a frame without its length prefix: `header_info | header | body`. The body is a
/// zero-copy slice of `frame`, `None` when empty. Java: `RemotingCommand#decode`
pub fn decode_payload(mut frame: Bytes) -> Result<RemotingCommand, FrameError> {
    if frame.len() < 4 {
        return Err(FrameError::TooShort(frame.len() as u32));
    }
    let info = frame.get_u32();
    let header_len = (info & MAX_HEADER_LEN as u32) as usize;
    let type_byte = (info >> 24) as u8;
    if header_len > frame.len() {
        return Err(FrameError::BadHeaderLength { header_len, frame_len: frame.len() + 4 });
    }
    let ty =
        SerializeType::from_u8(type_byte).ok_or(FrameError::UnknownSerializeType(type_byte))?;
    let mut cmd = header::decode(&frame[..header_len], ty)?;
    frame.advance(header_len);
    cmd.body = (!frame.is_empty()).then_some(frame);
    Ok(cmd)
}

/// Decodes one complete frame, length prefix included, that must span exactly `bytes`
/// (with the default maximum). Handy for tests and one-off decoding; copies the body.
pub fn decode_frame(bytes: &[u8]) -> Result<RemotingCommand, FrameError> {
    let prefix: [u8; 4] = match bytes.get(..4).and_then(|p| p.try_into().ok()) {
        Some(p) => p,
        None => return Err(FrameError::LengthMismatch { declared: 4, actual: bytes.len() }),
    };
    let len = check_prefix(u32::from_be_bytes(prefix), DEFAULT_MAX_FRAME_LEN)?;
    if len != bytes.len() - 4 {
        return Err(FrameError::LengthMismatch { declared: len, actual: bytes.len() - 4 });
    }
    decode_payload(Bytes::copy_from_slice(&bytes[4..]))
}

/// Appends the whole frame of `cmd` (prefix, header in `cmd.serialize_type`, body) to `dst`.
/// On error `dst` is left as it was. Java: `RemotingCommand#fastEncodeHeader` + body.
pub fn encode_into(cmd: &RemotingCommand, dst: &mut BytesMut) -> Result<(), FrameError> {
    encode_with_body(cmd, cmd.body_bytes(), dst)
}

/// Appends the frame of `cmd` with `body` as its body (`cmd.body` is ignored): for a body
/// borrowed from elsewhere. On error `dst` is left as it was.
pub fn encode_with_body(
    cmd: &RemotingCommand,
    body: &[u8],
    dst: &mut BytesMut,
) -> Result<(), FrameError> {
    dst.reserve(8 + 128 + body.len());
    encode_head(cmd, body.len(), dst)?;
    dst.put_slice(body);
    Ok(())
}

/// Appends the frame of `cmd` without its body (the length prefix counts the body): a writer
/// then sends `cmd.body` after it without copying it. On error `dst` is left as it was.
pub fn encode_head_into(cmd: &RemotingCommand, dst: &mut BytesMut) -> Result<(), FrameError> {
    encode_head(cmd, cmd.body_bytes().len(), dst)
}

/// The length prefix (counting a body of `body_len` bytes), header-info and header of `cmd`.
fn encode_head(
    cmd: &RemotingCommand,
    body_len: usize,
    dst: &mut BytesMut,
) -> Result<(), FrameError> {
    let start = dst.len();
    dst.reserve(8 + 128);
    dst.put_u64(0);
    if let Err(e) = header::encode(cmd, dst) {
        dst.truncate(start);
        return Err(e.into());
    }
    let header_len = dst.len() - start - 8;
    if header_len > MAX_HEADER_LEN {
        dst.truncate(start);
        return Err(FrameError::HeaderTooLong(header_len));
    }
    let total = 4 + header_len + body_len;
    let Ok(total_i32) = i32::try_from(total) else {
        dst.truncate(start);
        return Err(FrameError::FrameTooLong(total));
    };
    let info = header_info(header_len as u32, cmd.serialize_type);
    dst[start..start + 4].copy_from_slice(&total_i32.to_be_bytes());
    dst[start + 4..start + 8].copy_from_slice(&info.to_be_bytes());
    Ok(())
}

/// The whole frame of `cmd` as bytes (e.g. for a pre-encoded response).
pub fn encode_to_bytes(cmd: &RemotingCommand) -> Result<Bytes, FrameError> {
    let mut buf = BytesMut::new();
    encode_into(cmd, &mut buf)?;
    Ok(buf.freeze())
}

impl RemotingCodec {
    /// The payload length of the frame being received (its prefix read, its payload not yet
    /// complete), `None` between frames.
    pub fn pending_len(&self) -> Option<usize> {
        self.pending
    }
}

impl Decoder for RemotingCodec {
    type Item = RemotingCommand;
    type Error = FrameError;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<RemotingCommand>, FrameError> {
        let len = match self.pending {
            Some(len) => len,
            None => {
                let Some(prefix) = src.get(..4) else {
                    return Ok(None);
                };
                let raw = u32::from_be_bytes([prefix[0], prefix[1], prefix[2], prefix[3]]);
                let len = check_prefix(raw, self.max_frame_len)?;
                src.advance(4);
                self.pending = Some(len);
                len
            }
        };
        if src.len() < len {
            // Room grows with what has arrived, never with what is announced: at most as much
            // again as is buffered (at least RESERVE_CHUNK), so a sender that stalls holds no
            // more than twice what it really sent, and a multi-MB registration is copied into
            // larger buffers a logarithmic number of times (less than its size in all).
            let missing = len - src.len();
            let want = missing.min(src.len().max(RESERVE_CHUNK));
            if src.capacity() - src.len() < want {
                // An allocation of exactly this size (`reserve` may double the capacity, and
                // so hold three times what arrived).
                let mut grown = BytesMut::with_capacity(src.len() + want);
                grown.extend_from_slice(src);
                *src = grown;
            }
            return Ok(None);
        }
        self.pending = None;
        decode_payload(src.split_to(len).freeze()).map(Some)
    }
}

impl Encoder<&RemotingCommand> for RemotingCodec {
    type Error = FrameError;

    fn encode(&mut self, cmd: &RemotingCommand, dst: &mut BytesMut) -> Result<(), FrameError> {
        encode_into(cmd, dst)
    }
}

impl Encoder<RemotingCommand> for RemotingCodec {
    type Error = FrameError;

    fn encode(&mut self, cmd: RemotingCommand, dst: &mut BytesMut) -> Result<(), FrameError> {
        encode_into(&cmd, dst)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::command::ExtFields;

    fn decode_all(
        codec: &mut RemotingCodec,
        bytes: &[u8],
    ) -> Result<Vec<RemotingCommand>, FrameError> {
        let mut buf = BytesMut::from(bytes);
        let mut out = Vec::new();
        while let Some(cmd) = codec.decode(&mut buf)? {
            out.push(cmd);
        }
        Ok(out)
    }

    #[test]
    fn decodes_a_frame_fed_byte_by_byte_and_keeps_the_body() {
        let mut ext = ExtFields::new();
        ext.insert("topic", "T");
        let cmd =
            RemotingCommand { code: 105, opaque: 9, ext_fields: Some(ext), ..Default::default() }
                .with_body(&b"xyz"[..]);
        let bytes = encode_to_bytes(&cmd).unwrap();
        let mut codec = RemotingCodec::new();
        let mut buf = BytesMut::new();
        let mut got = None;
        for (i, b) in bytes.iter().enumerate() {
            assert!(got.is_none(), "frame complete early at byte {i}");
            buf.put_u8(*b);
            got = codec.decode(&mut buf).unwrap();
        }
        assert_eq!(got, Some(cmd));
        assert!(buf.is_empty());
    }

    #[test]
    fn decodes_pipelined_frames_in_order() {
        let a = RemotingCommand { opaque: 1, ..Default::default() };
        let b = RemotingCommand {
            opaque: 2,
            serialize_type: SerializeType::RocketMq,
            ..Default::default()
        };
        let mut bytes = BytesMut::new();
        RemotingCodec::new().encode(&a, &mut bytes).unwrap();
        RemotingCodec::new().encode(b.clone(), &mut bytes).unwrap();
        assert_eq!(decode_all(&mut RemotingCodec::new(), &bytes).unwrap(), [a, b]);
    }

    #[test]
    fn empty_body_decodes_as_none() {
        let cmd = RemotingCommand::default().with_body(Bytes::new());
        let back = decode_frame(&encode_to_bytes(&cmd).unwrap()).unwrap();
        assert_eq!(back.body, None);
    }

    #[test]
    fn too_long_prefix_fails_before_the_frame_arrives_and_reserves_nothing_big() {
        let mut codec = RemotingCodec::with_max_frame(100);
        let mut buf = BytesMut::from(&[0u8, 0, 0, 101][..]);
        assert!(matches!(codec.decode(&mut buf), Err(FrameError::TooLong { len: 101, max: 100 })));
        let mut codec = RemotingCodec::new();
        let mut buf = BytesMut::from(&[0x00u8, 0xFF, 0xFF, 0xFC][..]);
        assert!(codec.decode(&mut buf).unwrap().is_none());
        assert!(buf.capacity() <= RESERVE_CHUNK + 64);
    }

    /// Feeds `frame` as a socket would, into the room the codec reserved; the buffer's
    /// capacity before each read, and the decoded command.
    fn feed_as_a_socket(codec: &mut RemotingCodec, frame: &[u8]) -> (Vec<usize>, RemotingCommand) {
        let mut buf = BytesMut::with_capacity(8 * 1024); // as tokio-util's Framed starts
        let mut capacities = Vec::new();
        let mut fed = 0;
        loop {
            if let Some(cmd) = codec.decode(&mut buf).unwrap() {
                return (capacities, cmd);
            }
            capacities.push(buf.capacity());
            let room = (buf.capacity() - buf.len()).max(1);
            let n = room.min(frame.len() - fed);
            buf.extend_from_slice(&frame[fed..fed + n]);
            fed += n;
        }
    }

    #[test]
    fn a_large_frame_grows_its_buffer_with_what_arrived_in_few_steps() {
        let body = vec![b'x'; 3 << 20];
        let frame = encode_to_bytes(&RemotingCommand::default().with_body(body.clone())).unwrap();
        let (capacities, cmd) = feed_as_a_socket(&mut RemotingCodec::new(), &frame);
        assert_eq!(cmd.body_bytes(), &body[..]);
        assert!(capacities[0] <= RESERVE_CHUNK + 64, "prefix alone: {capacities:?}");
        let grown = capacities.windows(2).filter(|w| w[1] > w[0]).count();
        assert!(grown <= 8, "3 MiB from 64 KiB by doubling: {capacities:?}");
    }

    #[test]
    fn a_sender_never_makes_the_buffer_hold_more_than_twice_what_it_sent() {
        let body = vec![b'x'; 3 << 20];
        let frame = encode_to_bytes(&RemotingCommand::default().with_body(body)).unwrap();
        let mut codec = RemotingCodec::new();
        let mut buf = BytesMut::new();
        // Arrivals of every size, as a socket may deliver them.
        let mut fed = 0;
        let mut step = 1;
        while codec.decode(&mut buf).unwrap().is_none() {
            let received = fed.max(4) - 4;
            assert!(
                buf.capacity() <= 2 * received + RESERVE_CHUNK + 64,
                "{} held for {received} received",
                buf.capacity()
            );
            let n = step.min(frame.len() - fed);
            buf.extend_from_slice(&frame[fed..fed + n]);
            fed += n;
            step = step * 3 % 200_003 + 1;
        }
    }

    #[test]
    fn a_stalled_sender_holds_at_most_twice_what_it_sent() {
        // A 16 MiB frame announced, then 64 KiB + 1 bytes of it, then nothing.
        let mut codec = RemotingCodec::new();
        let mut buf = BytesMut::new();
        buf.extend_from_slice(&(DEFAULT_MAX_FRAME_LEN as u32).to_be_bytes());
        assert!(codec.decode(&mut buf).unwrap().is_none());
        let sent = RESERVE_CHUNK + 1;
        buf.extend_from_slice(&vec![0u8; sent]);
        assert!(codec.decode(&mut buf).unwrap().is_none());
        assert!(buf.capacity() <= 2 * sent + 64, "{} held for {sent} sent", buf.capacity());
    }

    #[test]
    fn encode_error_leaves_the_buffer_untouched() {
        let mut ext = ExtFields::new();
        ext.insert("k".repeat(40_000), "v");
        let cmd = RemotingCommand {
            serialize_type: SerializeType::RocketMq,
            ext_fields: Some(ext),
            ..Default::default()
        };
        let mut dst = BytesMut::from(&b"ab"[..]);
        assert!(RemotingCodec::new().encode(&cmd, &mut dst).is_err());
        assert_eq!(&dst[..], b"ab");
    }

    #[test]
    fn header_longer_than_24_bits_is_refused_on_encode() {
        let cmd =
            RemotingCommand { remark: Some("r".repeat(MAX_HEADER_LEN)), ..Default::default() };
        assert!(matches!(encode_to_bytes(&cmd), Err(FrameError::HeaderTooLong(_))));
    }

    #[test]
    fn decode_frame_requires_exact_length() {
        let bytes = encode_to_bytes(&RemotingCommand::default()).unwrap();
        assert!(decode_frame(&bytes).is_ok());
        assert!(matches!(
            decode_frame(&bytes[..bytes.len() - 1]),
            Err(FrameError::LengthMismatch { .. })
        ));
        assert!(matches!(decode_frame(&[0, 0]), Err(FrameError::LengthMismatch { .. })));
        let mut longer = bytes.to_vec();
        longer.push(0);
        assert!(decode_frame(&longer).is_err());
    }
}
