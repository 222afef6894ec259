//! The request digest of a REGISTER_BROKER (#25): every header field the route tables depend on
//! and the body, digested whole or around its `DataVersion`, so a nameserver knows a
//! re-registration that equals the broker's last one (but for the version) without decoding its
//! body. Equal digests mean equal registrations.

use std::hash::Hasher as _;
use std::ops::Range;

use super::difference::Skimmed;
use super::skim::skim_register_body;
use super::{body_crc32, DataVersion, VersionFrame};
use crate::headers::RegisterBrokerRequestHeader;
use crate::{version, RemotingCommand};

/// The request digest's hasher: XXH3-64, streamed.
pub use twox_hash::XxHash3_64 as Xxh3;

/// The digest of everything in a REGISTER_BROKER request that the route tables depend on but
/// the body: every header field, the zone, the version gates of the body format and the
/// `deleteTopicWithBrokerRegistration` flag. Finished by [`digest_whole`] or
/// [`digest_around_version`]; equal digests mean equal registrations.
pub fn digest_fields(
    request: &RemotingCommand,
    header: &RegisterBrokerRequestHeader,
    zone_name: Option<&str>,
    delete_topics: bool,
) -> Xxh3 {
    let mut hasher = Xxh3::new();
    let text = |h: &mut Xxh3, v: Option<&str>| {
        match v {
            Some(v) => {
                h.write(&[1]);
                h.write(&(v.len() as u64).to_le_bytes());
                h.write(v.as_bytes());
            }
            None => h.write(&[0]),
        };
    };
    text(&mut hasher, header.cluster_name.as_deref());
    text(&mut hasher, header.broker_addr.as_deref());
    text(&mut hasher, header.broker_name.as_deref());
    text(&mut hasher, header.ha_server_addr.as_deref());
    text(&mut hasher, zone_name);
    let numbers = [
        header.broker_id.unwrap_or(i64::MIN),
        header.heartbeat_timeout_millis.unwrap_or(i64::MIN),
        header.enable_acting_master.map_or(2, i64::from),
        i64::from(header.compressed.unwrap_or(false)),
        i64::from(request.version < version::V3_0_11),
        i64::from(request.version < version::V5_0_0),
        i64::from(delete_topics),
        i64::from(request.body.is_some()),
    ];
    for n in numbers {
        hasher.write(&n.to_le_bytes());
    }
    hasher
}

/// The request digest over the whole body.
pub fn digest_whole(fields: &Xxh3, body: &[u8]) -> u64 {
    let mut hasher = fields.clone();
    hasher.write(&[0]);
    hasher.write(body);
    hasher.finish()
}

/// A registration's request digest, for the unchanged-registration shortcut and the stamp
/// the registration leaves: digested around the body's `DataVersion` when its place is known
/// (the stamped one when all but the version is unchanged, else where a skim finds it), else
/// over the whole body; with the version found there and its frame. `None` when the header's
/// `bodyCrc32` does not match the body (checked first, as Java does). A skim that digested the
/// body on its way (`Skimmed::digested`) gives all of it without another pass.
///
/// `stamped`: where the address's last fully applied body had its `DataVersion`, and that
/// body's digest (the route tables keep it); `digested`: this body digested around that frame
/// on arrival, if it was.
pub fn digest_registration(
    request: &RemotingCommand,
    header: &RegisterBrokerRequestHeader,
    fields: &Xxh3,
    (compressed, skimmed): (bool, Option<&Skimmed>),
    stamped: Option<(VersionFrame, u64)>,
    digested: Option<Digested>,
) -> Option<(u64, Option<DataVersion>, Option<VersionFrame>)> {
    let body_bytes = request.body_bytes();
    if let Some((around, frame)) = skimmed.and_then(Skimmed::digested) {
        // Digested around its own version: the digest the stamped frame gives when all but the
        // version is unchanged (the same bytes put the version in the same place), and the
        // stamp the next registration is digested against.
        let crc = header.body_crc32.unwrap_or(0);
        if crc != 0 && frame.body_crc32(&body_bytes[around.middle.clone()]) != crc {
            return None;
        }
        return Some((around.digest, Some(around.version), Some(*frame)));
    }
    let skimmed = skimmed.map(|s| s.around(body_bytes));
    // This body digested around the stamped frame.
    let stamped = stamped.filter(|_| !compressed);
    let around = stamped.and_then(|(frame, _)| match digested {
        Some(earlier) if earlier.frame == frame => earlier.around,
        _ => digest_around_version(fields, body_bytes, frame),
    });
    let rest_unchanged =
        matches!((stamped, &around), (Some((_, digest)), Some(a)) if a.digest == digest);
    // This body's own frame: the stamped one when all but the version is unchanged, else where
    // a skim finds its DataVersion (`None`: the body is digested whole).
    let (frame, around) = if rest_unchanged {
        (stamped.map(|(frame, _)| frame), around)
    } else {
        let frame = match skimmed {
            Some((before, after)) => Some(VersionFrame::new(before, after)),
            None => request
                .body
                .as_deref()
                .filter(|_| !compressed)
                .and_then(|bytes| skim_register_body(bytes, request.version))
                .map(|s| VersionFrame::new(s.before, s.after)),
        };
        // Digested around the same place as the stamped frame already: the same digest.
        let same_place = |f: &VersionFrame| {
            stamped
                .is_some_and(|(s, _)| (s.prefix_len, s.suffix_len) == (f.prefix_len, f.suffix_len))
        };
        let around = match frame {
            Some(f) if same_place(&f) => around,
            _ => frame.and_then(|f| digest_around_version(fields, body_bytes, f)),
        };
        (frame, around)
    };
    let crc = header.body_crc32.unwrap_or(0);
    if crc != 0 {
        // Java checks first. With a frame, the CRC is the frame's parts' CRCs combined with the
        // version's (no second pass over the body).
        let actual = match (frame, &around) {
            (Some(frame), Some(a)) => frame.body_crc32(&body_bytes[a.middle.clone()]),
            _ => body_crc32(body_bytes),
        };
        if actual != crc {
            return None;
        }
    }
    // Digested around the DataVersion when there is a frame (a later body that differs only
    // there then skips decoding), else whole: the way the stamp of the last registration was.
    Some(match &around {
        Some(a) => (a.digest, Some(a.version), frame),
        None => (digest_whole(fields, body_bytes), None, None),
    })
}

/// A body digested around the `DataVersion` frame its address's last registration stamped, on
/// arrival, for the registration lane: the same frame and the same flag give the same digest.
pub struct Digested {
    pub frame: VersionFrame,
    /// `deleteTopicWithBrokerRegistration` when it was digested (a field of the digest).
    pub delete_topics: bool,
    pub around: Option<Around>,
}

/// A body digested around its `DataVersion`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Around {
    /// The request digest over the body without the version.
    pub digest: u64,
    pub version: DataVersion,
    /// Where the version sits in the body.
    pub middle: std::ops::Range<usize>,
}

/// The request digest over the body without its `DataVersion`, which sits where `frame` says,
/// and that version; `None` when the bytes there are not one plain `DataVersion` object. A body
/// equal to a previous one outside the frame, with a valid version inside, decodes to the
/// previous body with the new version.
pub fn digest_around_version(fields: &Xxh3, body: &[u8], frame: VersionFrame) -> Option<Around> {
    let end = body.len().checked_sub(frame.suffix_len)?;
    let middle = body.get(frame.prefix_len..end)?;
    let version = lone_data_version(middle)?;
    let mut hasher = begin_around(fields, frame.prefix_len);
    hasher.write(&body[..frame.prefix_len]);
    hasher.write(&body[end..]);
    Some(Around { digest: hasher.finish(), version, middle: frame.prefix_len..end })
}

/// The request digest around a version whose value starts at `prefix_len`, before any body
/// byte.
fn begin_around(fields: &Xxh3, prefix_len: usize) -> Xxh3 {
    let mut hasher = fields.clone();
    hasher.write(&[1]);
    hasher.write(&(prefix_len as u64).to_le_bytes());
    hasher
}

/// [`digest_around_version`] and the body's [`VersionFrame`], computed a little behind a walk
/// of the body (the registration lane's skim), over the bytes it has just read. Each was a pass
/// of its own over the 2 MB body under S7's 1 % churn at 1,000,000 topics (#25): the digest on
/// the I/O thread that received it, the CRC on the lane thread.
pub(crate) struct Trailing {
    hasher: Xxh3,
    suffix: crc32fast::Hasher,
    prefix_crc: u32,
    /// The `DataVersion` value.
    version: Range<usize>,
    /// The body's bytes before this are digested.
    done: usize,
}

/// How far a walk runs ahead of [`Trailing`] before it catches up: within the first level of
/// the cache, and few enough calls.
const TRAIL: usize = 16 * 1024;

impl Trailing {
    /// Begun where the walk found the `DataVersion` value (`version`, in `body`): the bytes
    /// before it are digested now.
    pub fn new(fields: &Xxh3, body: &[u8], version: Range<usize>) -> Self {
        let before = &body[..version.start];
        let mut hasher = begin_around(fields, before.len());
        hasher.write(before);
        let prefix_crc = crc32fast::hash(before);
        let done = version.end;
        Self { hasher, suffix: crc32fast::Hasher::new(), prefix_crc, version, done }
    }

    /// Digests the bytes up to `walked` (those the walk has read) when it is far enough ahead.
    pub fn follow(&mut self, body: &[u8], walked: usize) {
        if walked >= self.done + TRAIL {
            self.catch_up(body, walked);
        }
    }

    fn catch_up(&mut self, body: &[u8], to: usize) {
        if let Some(part) = body.get(self.done..to) {
            self.hasher.write(part);
            self.suffix.update(part);
            self.done = to;
        }
    }

    /// The body digested around its version, as [`digest_around_version`] digests it, and its
    /// frame; `None` when the version is not one plain `DataVersion` object (that function's
    /// `None`).
    pub fn finish(mut self, body: &[u8]) -> Option<(Around, VersionFrame)> {
        self.catch_up(body, body.len());
        let version = lone_data_version(&body[self.version.clone()])?;
        let frame = VersionFrame {
            prefix_len: self.version.start,
            suffix_len: body.len() - self.version.end,
            prefix_crc: self.prefix_crc,
            suffix_crc: self.suffix.finalize(),
        };
        let around = Around { digest: self.hasher.finish(), version, middle: self.version };
        Some((around, frame))
    }
}

/// `bytes` as exactly one strict JSON `DataVersion` object (no `$ref`, nothing around it).
fn lone_data_version(bytes: &[u8]) -> Option<DataVersion> {
    if bytes.first() != Some(&b'{') || memchr::memmem::find(bytes, b"$ref").is_some() {
        return None;
    }
    serde_json::from_slice(bytes).ok()
}
