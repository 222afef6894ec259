//! The request digest of a REGISTER_BROKER (#25): every header field the route tables depend on
//! and the body, digested whole or around its `DataVersion`, so a nameserver knows a
//! re-registration that equals the broker's last one (but for the version) without decoding its
//! body. Equal digests mean equal registrations.

use xxhash_rust::xxh3::Xxh3;

use super::{DataVersion, VersionFrame};
use crate::headers::RegisterBrokerRequestHeader;
use crate::{version, RemotingCommand};

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
pub fn digest_whole(fields: &Xxh3, body: &[u8]) -> u64 {
    let mut hasher = fields.clone();
    hasher.update(&[0]);
    hasher.update(body);
    hasher.digest()
}

/// A body digested around its `DataVersion`.
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
