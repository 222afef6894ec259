//! A REGISTER_BROKER's request digest (`remoting::body::register_digest`) against the stamp its
//! address's last registration left in the route tables: digested around the stamped
//! `DataVersion` when the rest is unchanged, so such a re-registration is known without decoding
//! its body, and its `bodyCrc32` checked from the stamped parts.

use remoting::body::register_digest::{digest_around_version, digest_whole, Around};
use remoting::body::skim::skim_register_body;
use remoting::body::{body_crc32, DataVersion};
use remoting::headers::RegisterBrokerRequestHeader;
use remoting::RemotingCommand;
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

/// A body digested around the `DataVersion` frame its address's last registration stamped, on
/// arrival, for the registration lane: the same frame and the same flag give the same digest.
pub(super) struct Digested {
    pub frame: VersionFrame,
    /// `deleteTopicWithBrokerRegistration` when it was digested (a field of the digest).
    pub delete_topics: bool,
    pub around: Option<Around>,
}
