//! The route snapshot: the route tables as bytes and back, for a warm restart. Pure: the
//! server's `snapshot.rs` owns the file, the schedule and the clock.
//!
//! Every version starts with one header line naming the format version, the payload's length
//! and its CRC32:
//!
//! ```text
//! rocketmq-namesrv-rs route snapshot v2 len=<20 digits> crc32=<8 hex digits>\n
//! <payload>
//! ```
//!
//! The header makes a truncated or altered file detectable and names the format, so a build
//! reads every older one (an upgrade keeps every route) and refuses a newer one. The version is
//! read first, so a later format may change the rest of the line.
//!
//! - **v2** (written by this build, `v2.rs`): a binary payload, streamed into the file — the
//!   header is written last, in place (its width is fixed), so no buffer of the whole file is
//!   ever held. Names (clusters, broker names, addresses) are interned once in a string table,
//!   integers are LEB128 varints, the distinct per-topic queue lists form a dictionary (the
//!   topics of one broker set usually share one list), and each topic is its name plus an
//!   index into that dictionary. At 1,000,000 topics / 200 brokers (the bench's 38-character
//!   names) 40 bytes a topic, where v1 took 229. The bytes follow the topic map's own order,
//!   so two tables with the same routes may give different files.
//! - **v1** (read only, `v1.rs`): a JSON document (`{"writtenAtMs":…,"clusters":{…},
//!   "groups":[…],"live":[…],"topics":{…},"filters":[…],"mappings":{…}}`), what builds before
//!   #25 wrote.
//!
//! What is kept: every table Java's `RouteInfoManager` has (clusters, broker groups, live
//! brokers with their DataVersion, heartbeat timeout and HA address, topic queues, filter
//! servers, static-topic mappings). What is not: liveness stamps (a restored broker is live
//! from the restore time on, and expires by its heartbeat timeout unless it registers again),
//! connections (a restored entry has none: [`RESTORED_CONN`]) and the digests that let an
//! unchanged re-registration skip decoding (the first registration after a restart runs the
//! full algorithm).
//!
//! Nothing read from a file is trusted: the checksum is verified before the payload is parsed,
//! and the parser still checks every count against the bytes left, every index against its
//! table and every name for UTF-8, so even a file with a matching checksum can only be
//! refused, never make the reader panic or allocate more than the file's own size allows.

mod v1;
mod v2;

use std::io::{self, Seek, SeekFrom, Write};

use super::table::RouteTable;
use super::ConnId;

/// The format version written by this build.
pub const FORMAT_VERSION: u32 = 2;

/// The connection of a restored live entry: none (connection ids start at 1), so no connection
/// close ever unregisters it; only expiry or a new registration replaces it.
pub const RESTORED_CONN: ConnId = 0;

const MAGIC: &str = "rocketmq-namesrv-rs route snapshot";

/// Why snapshot bytes could not be restored.
#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    /// The first line is not a snapshot header.
    #[error("not a route snapshot (bad header line)")]
    Header,
    /// Written by a format this build does not read.
    #[error(
        "route snapshot format v{0} is not supported (this build reads v1 and v{FORMAT_VERSION})"
    )]
    Version(u32),
    /// The payload is shorter or longer than the header says (a torn write).
    #[error("route snapshot payload is {actual} bytes, the header says {expected}")]
    Length { expected: usize, actual: usize },
    /// The payload's CRC32 differs from the header's.
    #[error("route snapshot checksum mismatch (header {expected:08x}, payload {actual:08x})")]
    Checksum { expected: u32, actual: u32 },
    /// A v1 payload (or a v2 static-topic mapping) is not the expected JSON.
    #[error("route snapshot payload: {0}")]
    Json(#[from] serde_json::Error),
    /// A v2 payload does not parse (a count beyond the bytes left, an index out of its table,
    /// a name that is not UTF-8, …).
    #[error("route snapshot payload malformed at byte {at}: {what}")]
    Malformed { at: usize, what: &'static str },
}

impl From<packed::Malformed> for SnapshotError {
    fn from(packed::Malformed { at, what }: packed::Malformed) -> Self {
        Self::Malformed { at, what }
    }
}

/// What a restored snapshot held.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SnapshotInfo {
    /// When it was written (the writer's wall-clock milliseconds).
    pub written_at_ms: u64,
    /// The format version of the bytes restored.
    pub version: u32,
    pub topics: usize,
    pub groups: usize,
    pub live: usize,
}

/// The header line; a v2 header has a fixed width (so it can be written last, in place).
fn header(version: u32, len: u64, crc: u32) -> String {
    format!("{MAGIC} v{version} len={len:020} crc32={crc:08x}\n")
}

impl RouteTable {
    /// Streams this table's snapshot (format v2, stamped `written_at_ms`) into `out` from its
    /// current position: a placeholder header, the payload through a 64 KiB buffer (its CRC
    /// computed on the way), then the header in place. Returns the bytes written. Holds no copy
    /// of the payload and nothing per topic: besides the buffer, the writer keeps the string
    /// table and the dictionary of distinct queue lists.
    pub fn write_snapshot<W: Write + Seek>(
        &self,
        written_at_ms: u64,
        mut out: W,
    ) -> io::Result<u64> {
        let start = out.stream_position()?;
        let placeholder = header(FORMAT_VERSION, 0, 0);
        out.write_all(placeholder.as_bytes())?;
        let (mut out, len, crc) = v2::write(self, written_at_ms, out)?;
        let header = header(FORMAT_VERSION, len, crc);
        debug_assert_eq!(header.len(), placeholder.len());
        out.seek(SeekFrom::Start(start))?;
        out.write_all(header.as_bytes())?;
        out.seek(SeekFrom::Start(start + header.len() as u64 + len))?;
        out.flush()?;
        Ok(header.len() as u64 + len)
    }

    /// The snapshot bytes of this table (format v2) in memory: [`Self::write_snapshot`] into a
    /// `Vec` (for tests and measurements; the server streams into its file).
    pub fn to_snapshot(&self, written_at_ms: u64) -> Vec<u8> {
        let mut out = io::Cursor::new(Vec::new());
        // Writing into a Vec cannot fail.
        let _ = self.write_snapshot(written_at_ms, &mut out);
        out.into_inner()
    }

    /// The table held by snapshot `bytes` (v1 or v2), every live broker stamped alive at
    /// `now_ms` with no connection; errors for a bad header, an unknown version, a torn or
    /// altered payload, or one that does not parse.
    pub fn from_snapshot(bytes: &[u8], now_ms: u64) -> Result<(Self, SnapshotInfo), SnapshotError> {
        let newline =
            memchr::memchr(b'\n', &bytes[..bytes.len().min(256)]).ok_or(SnapshotError::Header)?;
        let line = std::str::from_utf8(&bytes[..newline]).map_err(|_| SnapshotError::Header)?;
        let (version, expected_len, expected_crc) = parse_header(line)?;
        let payload = &bytes[newline + 1..];
        if payload.len() != expected_len {
            return Err(SnapshotError::Length { expected: expected_len, actual: payload.len() });
        }
        let actual = crc32fast::hash(payload);
        if actual != expected_crc {
            return Err(SnapshotError::Checksum { expected: expected_crc, actual });
        }
        let (table, written_at_ms) = match version {
            1 => v1::read(payload, now_ms)?,
            _ => v2::read(payload, now_ms)?,
        };
        let info = SnapshotInfo {
            written_at_ms,
            version,
            topics: table.topics.len(),
            groups: table.groups.len(),
            live: table.live.len(),
        };
        Ok((table, info))
    }
}

/// `MAGIC v<version> len=<n> crc32=<hex>` → (version, n, crc); the version is checked first,
/// so a later format may change the rest of the line.
fn parse_header(line: &str) -> Result<(u32, usize, u32), SnapshotError> {
    let rest =
        line.strip_prefix(MAGIC).and_then(|r| r.strip_prefix(" v")).ok_or(SnapshotError::Header)?;
    let mut parts = rest.split(' ');
    let version: u32 = parts.next().and_then(|v| v.parse().ok()).ok_or(SnapshotError::Header)?;
    if !(1..=FORMAT_VERSION).contains(&version) {
        return Err(SnapshotError::Version(version));
    }
    // Digits only (no sign), as every writer wrote them; v2's are fixed-width.
    let digits = |s: &str, hex: bool| {
        !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit() || (hex && matches!(b, b'a'..=b'f')))
    };
    let len = parts
        .next()
        .and_then(|p| p.strip_prefix("len="))
        .filter(|n| digits(n, false) && (version == 1 || n.len() == 20))
        .and_then(|n| n.parse().ok())
        .ok_or(SnapshotError::Header)?;
    let crc = parts
        .next()
        .and_then(|p| p.strip_prefix("crc32="))
        .filter(|h| digits(h, true) && h.len() == 8)
        .and_then(|h| u32::from_str_radix(h, 16).ok())
        .ok_or(SnapshotError::Header)?;
    if parts.next().is_some() {
        return Err(SnapshotError::Header);
    }
    Ok((version, len, crc))
}

#[cfg(any(test, feature = "snapshot-v1-writer"))]
#[path = "../tests/v1_writer.rs"]
mod v1_writer;
#[cfg(any(test, feature = "snapshot-v1-writer"))]
pub use v1_writer::to_v1_snapshot;
