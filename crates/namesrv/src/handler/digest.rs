//! The request digest of a REGISTER_BROKER: every header field the route tables depend on and
//! the body, digested whole or around its `DataVersion`, so a re-registration that equals the
//! broker's last one (but for the version) is known without decoding its body, and its
//! `bodyCrc32` checked from the stamped parts.

use remoting::body::skim::skim_register_body;
use remoting::body::{body_crc32, DataVersion};
use remoting::headers::RegisterBrokerRequestHeader;
use remoting::{version, RemotingCommand};
use xxhash_rust::xxh3::Xxh3;

use crate::route::VersionFrame;
use crate::state::State;

/// A body's bytes before and after its `DataVersion` value, where a skim found them.
pub(super) type AroundVersion<'a> = (&'a [u8], &'a [u8]);

/// A registration's request digest, for the unchanged-registration shortcut and the stamp
/// the registration leaves: digested around the body's `DataVersion` when its place is known
/// (the stamped one when all but the version is unchanged, else where a skim finds it), else
/// over the whole body; with the version found there and its frame. `None` when the header's
/// `bodyCrc32` does not match the body (checked first, as Java does).
pub(super) fn digest_registration(
    state: &State,
    request: &RemotingCommand,
    header: &RegisterBrokerRequestHeader,
    fields: &Xxh3,
    (compressed, skimmed): (bool, Option<AroundVersion<'_>>),
    digested: Option<Digested>,
) -> Option<(u64, Option<DataVersion>, Option<VersionFrame>)> {
    let body_bytes = request.body_bytes();
    // Where this address's last fully applied body had its DataVersion (and that body's
    // digest), and this body digested around the same place.
    let stamped = match (&header.cluster_name, &header.broker_addr) {
        (Some(cluster), Some(addr)) if !compressed => {
            state.routes.snapshot().version_frame(cluster, addr)
        }
        _ => None,
    };
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

/// The digest of everything in a REGISTER_BROKER request that the route tables depend on but
/// the body: every header field, the zone, the version gates of the body format and the
/// `deleteTopicWithBrokerRegistration` flag. Finished by [`digest_whole`] or
/// [`digest_around_version`]; equal digests mean equal registrations.
pub(super) fn digest_fields(
    request: &RemotingCommand,
    header: &RegisterBrokerRequestHeader,
    zone_name: Option<&str>,
    delete_topics: bool,
) -> Xxh3 {
    let mut hasher = Xxh3::new();
    let text = |h: &mut Xxh3, v: Option<&str>| {
        match v {
            Some(v) => {
                h.update(&[1]);
                h.update(&(v.len() as u64).to_le_bytes());
                h.update(v.as_bytes());
            }
            None => h.update(&[0]),
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
        hasher.update(&n.to_le_bytes());
    }
    hasher
}

/// The request digest over the whole body.
pub(super) fn digest_whole(fields: &Xxh3, body: &[u8]) -> u64 {
    let mut hasher = fields.clone();
    hasher.update(&[0]);
    hasher.update(body);
    hasher.digest()
}

/// A body digested around the `DataVersion` frame its address's last registration stamped, on
/// arrival, for the registration lane: the same frame and the same flag give the same digest.
pub(super) struct Digested {
    pub frame: VersionFrame,
    /// `deleteTopicWithBrokerRegistration` when it was digested (a field of the digest).
    pub delete_topics: bool,
    pub around: Option<Around>,
}

/// A body digested around its `DataVersion`.
pub(super) struct Around {
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
pub(super) fn digest_around_version(
    fields: &Xxh3,
    body: &[u8],
    frame: VersionFrame,
) -> Option<Around> {
    let end = body.len().checked_sub(frame.suffix_len)?;
    let middle = body.get(frame.prefix_len..end)?;
    let version = lone_data_version(middle)?;
    let mut hasher = fields.clone();
    hasher.update(&[1]);
    hasher.update(&(frame.prefix_len as u64).to_le_bytes());
    hasher.update(&body[..frame.prefix_len]);
    hasher.update(&body[end..]);
    Some(Around { digest: hasher.digest(), version, middle: frame.prefix_len..end })
}

/// `bytes` as exactly one strict JSON `DataVersion` object (no `$ref`, nothing around it).
fn lone_data_version(bytes: &[u8]) -> Option<DataVersion> {
    if bytes.first() != Some(&b'{') || memchr::memmem::find(bytes, b"$ref").is_some() {
        return None;
    }
    serde_json::from_slice(bytes).ok()
}
