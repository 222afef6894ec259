//! The compressed RegisterBrokerBody (zlib stream of length-prefixed parts, remoting §9) and the
//! compact one-line TopicConfig it carries, plus [`RegisterBrokerBody::decode`], which picks the
//! right body form for a REGISTER_BROKER request.

use std::collections::BTreeMap;
use std::io::{self, Read, Write};
use std::sync::Arc;

use flate2::read::ZlibDecoder;
use flate2::write::ZlibEncoder;
use flate2::Compression;

use super::{
    from_json, to_legacy_json, BodyError, DataVersion, RegisterBrokerBody, TopicConfig,
    TopicConfigSerializeWrapper, TopicFilterType, TopicQueueMappingInfo,
};
use crate::version;

/// The default bound on the inflated size of a compressed RegisterBrokerBody. A 10 000-topic
/// body inflates to well under 1 MiB; frames are at most 16 MiB compressed.
pub const MAX_INFLATED_BODY: u64 = 64 * 1024 * 1024;

/// Bounds on decoding a REGISTER_BROKER body, checked as it is read (a compressed body's topic
/// count before its topics, its inflated size as it inflates), so no body costs more than they
/// allow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BodyLimits {
    /// The most bytes a compressed body may inflate to ([`BodyError::TooLarge`]).
    pub max_inflated: u64,
    /// The most topics a body may carry ([`BodyError::TooManyTopics`]).
    pub max_topics: usize,
}

impl Default for BodyLimits {
    /// [`MAX_INFLATED_BODY`] and no topic limit.
    fn default() -> Self {
        Self { max_inflated: MAX_INFLATED_BODY, max_topics: usize::MAX }
    }
}

impl TopicFilterType {
    /// The Java enum name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::SingleTag => "SINGLE_TAG",
            Self::MultiTag => "MULTI_TAG",
        }
    }

    /// Parses the Java enum name (exact, like `Enum.valueOf`).
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "SINGLE_TAG" => Some(Self::SingleTag),
            "MULTI_TAG" => Some(Self::MultiTag),
            _ => None,
        }
    }
}

impl TopicConfig {
    /// The compact one-line form: `topicName readQueueNums writeQueueNums perm topicFilterType
    /// attributesJson`, joined by single spaces; with `attributes = None` the line ends in a space.
    /// `topicSysFlag` and `order` are not carried. A missing name is written `null`, as Java does.
    /// Java: `TopicConfig#encode`
    pub fn encode_compact(&self) -> String {
        let attributes = self.attributes.as_ref().map(to_legacy_json).unwrap_or_default();
        format!(
            "{} {} {} {} {} {}",
            self.topic_name.as_deref().unwrap_or("null"),
            self.read_queue_nums,
            self.write_queue_nums,
            self.perm,
            self.topic_filter_type.as_str(),
            String::from_utf8_lossy(&attributes),
        )
    }

    /// Parses the compact line. Java splits on `" "` and drops trailing empty parts; it needs at
    /// least 5 parts, integers in parts 2–4 and `SINGLE_TAG`/`MULTI_TAG` in part 5, or the whole
    /// registration fails (errata B2). A 6th part that is not a JSON string map is ignored
    /// (`attributes` stays `{}`); `null` there gives `attributes = None`. `topicSysFlag` and `order`
    /// take their defaults (0, false).
    /// Java: `TopicConfig#decode`
    pub fn decode_compact(line: &str) -> Result<TopicConfig, BodyError> {
        let bad =
            |reason: &'static str| BodyError::CompactTopicConfig { line: line.to_owned(), reason };
        let mut parts: Vec<&str> = line.split(' ').collect();
        while parts.last() == Some(&"") {
            parts.pop();
        }
        let [name, read, write, perm, filter, rest @ ..] = parts.as_slice() else {
            return Err(bad("fewer than 5 space-separated parts"));
        };
        let int =
            |s: &str| s.parse::<i32>().map_err(|_| bad("a queue count or perm is not an int"));
        let mut config = TopicConfig {
            topic_name: Some((*name).to_owned()),
            read_queue_nums: int(read)?,
            write_queue_nums: int(write)?,
            perm: int(perm)?,
            topic_filter_type: TopicFilterType::from_name(filter)
                .ok_or_else(|| bad("unknown topicFilterType"))?,
            ..TopicConfig::default()
        };
        if let Some(attributes) = rest.first() {
            if let Ok(parsed) = from_json::<Option<BTreeMap<String, String>>>(attributes.as_bytes())
            {
                config.attributes = parsed;
            }
        }
        Ok(config)
    }
}

impl RegisterBrokerBody {
    /// Decodes a REGISTER_BROKER body the way the Java NameServer does for a broker of
    /// `broker_version`: brokers older than V3_0_11 (37) send a bare TopicConfigSerializeWrapper
    /// (its filter list is then `None`); otherwise the header's `compressed` flag picks
    /// [`decode_compressed`](Self::decode_compressed) or the JSON form.
    ///
    /// Errors: a negative version (Java fails on it before reading the body), and any decode error
    /// of the chosen form. An absent body is the caller's case (Java: all-zero DataVersion).
    /// Java: `DefaultRequestProcessor#registerBroker` + `RegisterBrokerBody#decode`
    pub fn decode(
        bytes: &[u8],
        compressed: bool,
        broker_version: i32,
    ) -> Result<RegisterBrokerBody, BodyError> {
        Self::decode_limited(bytes, compressed, broker_version, BodyLimits::default())
    }

    /// [`RegisterBrokerBody::decode`] within `limits`: every form is held to `max_topics`, the
    /// compressed one also to `max_inflated` (the only form that inflates).
    pub fn decode_limited(
        bytes: &[u8],
        compressed: bool,
        broker_version: i32,
        limits: BodyLimits,
    ) -> Result<RegisterBrokerBody, BodyError> {
        if broker_version < 0 {
            return Err(BodyError::NegativeVersion(broker_version));
        }
        let body = if broker_version < version::V3_0_11 {
            let bare: TopicConfigSerializeWrapper = from_json(bytes)?;
            RegisterBrokerBody {
                filter_server_list: None,
                topic_config_serialize_wrapper: bare.into(),
            }
        } else if compressed {
            return Self::decode_compressed_limited(bytes, broker_version, limits);
        } else {
            from_json(bytes)?
        };
        let count = body.topic_config_serialize_wrapper.topic_config_table.len();
        if count > limits.max_topics {
            return Err(BodyError::TooManyTopics { count: count as u64, max: limits.max_topics });
        }
        Ok(body)
    }

    /// Decodes the zlib form (remoting §9). The mapping section is read only when
    /// `broker_version >= 413` (V5_0_0); data after the last part is ignored, as is the zlib
    /// trailer if nothing needs it. A filter list that is not a JSON string array is ignored
    /// (empty list); `null` gives `None`.
    ///
    /// Errors: not zlib or truncated ([`BodyError::Inflate`], [`BodyError::Truncated`]); a negative
    /// length; more than [`MAX_INFLATED_BODY`] inflated bytes; a bad DataVersion or mapping JSON;
    /// a mapping without `topic`; a bad compact TopicConfig line (errata B2). Never panics, and
    /// allocates no more than the data actually inflated.
    /// Java: `RegisterBrokerBody#decode(byte[], boolean, Version)`
    pub fn decode_compressed(
        bytes: &[u8],
        broker_version: i32,
    ) -> Result<RegisterBrokerBody, BodyError> {
        Self::decode_compressed_limited(bytes, broker_version, BodyLimits::default())
    }

    /// [`RegisterBrokerBody::decode_compressed`] within `limits`: more than `max_topics`
    /// announced is refused before any topic is read, and inflating stops at `max_inflated`.
    pub fn decode_compressed_limited(
        bytes: &[u8],
        broker_version: i32,
        limits: BodyLimits,
    ) -> Result<RegisterBrokerBody, BodyError> {
        let max = limits.max_inflated;
        let inner = ZlibDecoder::new(bytes).take(max.saturating_add(1));
        let mut r = Parts { inner, read: 0, max };
        let data_version: DataVersion = from_json(&r.block()?)?;
        let mut body = RegisterBrokerBody::default();
        let wrapper = &mut body.topic_config_serialize_wrapper;
        wrapper.data_version = data_version;

        // A negative count reads nothing, as Java's `for (i = 0; i < n; i++)`.
        let count = r.int()?;
        if usize::try_from(count).is_ok_and(|n| n > limits.max_topics) {
            return Err(BodyError::TooManyTopics { count: count as u64, max: limits.max_topics });
        }
        let table = Arc::make_mut(&mut wrapper.topic_config_table);
        for _ in 0..count {
            let line = r.block()?;
            let config = TopicConfig::decode_compact(&String::from_utf8_lossy(&line))?;
            let name = config.topic_name.clone().unwrap_or_default();
            table.insert(name, config);
        }

        let filter = r.block()?;
        // Java logs and keeps its empty list when this is not a string array.
        body.filter_server_list =
            from_json::<Option<Vec<String>>>(&filter).unwrap_or_else(|_| Some(Vec::new()));

        if broker_version >= version::V5_0_0 {
            let wrapper = &mut body.topic_config_serialize_wrapper;
            for _ in 0..r.int()? {
                let info: TopicQueueMappingInfo = from_json(&r.block()?)?;
                let topic = info.topic.clone().ok_or(BodyError::MappingWithoutTopic)?;
                wrapper.topic_queue_mapping_info_map.insert(topic, info);
            }
        }
        Ok(body)
    }

    /// Encodes the zlib form (remoting §9) with best compression (zlib header `78 DA`). The
    /// mapping section is written when `broker_version >= 413` (V5_0_0), as such a broker does.
    /// Java: `RegisterBrokerBody#encode(true)`
    pub fn encode_compressed(&self, broker_version: i32) -> Vec<u8> {
        let wrapper = &self.topic_config_serialize_wrapper;
        let mut plain = Vec::with_capacity(128 + 48 * wrapper.topic_config_table.len());
        put_block(&mut plain, &to_legacy_json(&wrapper.data_version));
        put_len(&mut plain, wrapper.topic_config_table.len());
        for config in wrapper.topic_config_table.values() {
            put_block(&mut plain, config.encode_compact().as_bytes());
        }
        match &self.filter_server_list {
            Some(list) => put_block(&mut plain, &to_legacy_json(list)),
            None => put_block(&mut plain, b"null"),
        }
        if broker_version >= version::V5_0_0 {
            put_len(&mut plain, wrapper.topic_queue_mapping_info_map.len());
            for info in wrapper.topic_queue_mapping_info_map.values() {
                put_block(&mut plain, &to_legacy_json(info));
            }
        }
        let mut z = ZlibEncoder::new(Vec::with_capacity(plain.len() / 4 + 64), Compression::best());
        // Compressing into a Vec cannot fail.
        z.write_all(&plain).and_then(|()| z.finish()).expect("zlib into a Vec is infallible")
    }
}

impl From<TopicConfigSerializeWrapper> for super::TopicConfigAndMappingSerializeWrapper {
    fn from(w: TopicConfigSerializeWrapper) -> Self {
        Self {
            data_version: w.data_version,
            topic_config_table: w.topic_config_table.into(),
            ..Self::default()
        }
    }
}

fn put_len(out: &mut Vec<u8>, len: usize) {
    // Java lengths are ints; nothing we encode comes near 2 GiB.
    out.extend_from_slice(&i32::try_from(len).unwrap_or(i32::MAX).to_be_bytes());
}

fn put_block(out: &mut Vec<u8>, bytes: &[u8]) {
    put_len(out, bytes.len());
    out.extend_from_slice(bytes);
}

/// Reads big-endian ints and length-prefixed blocks from the inflating stream.
struct Parts<R> {
    inner: R,
    /// Inflated bytes consumed so far.
    read: u64,
    /// The most inflated bytes allowed.
    max: u64,
}

impl<R: Read> Parts<R> {
    fn fill(&mut self, buf: &mut [u8]) -> Result<(), BodyError> {
        self.inner.read_exact(buf).map_err(inflate_error)?;
        self.read += buf.len() as u64;
        if self.read > self.max {
            return Err(BodyError::TooLarge(self.max));
        }
        Ok(())
    }

    fn int(&mut self) -> Result<i32, BodyError> {
        let mut b = [0u8; 4];
        self.fill(&mut b)?;
        Ok(i32::from_be_bytes(b))
    }

    fn block(&mut self) -> Result<Vec<u8>, BodyError> {
        let len = self.int()?;
        let len = u64::try_from(len).map_err(|_| BodyError::NegativeLength(len))?;
        if self.read.saturating_add(len) > self.max {
            return Err(BodyError::TooLarge(self.max));
        }
        // Grows only as data actually arrives: a lying length cannot make us allocate it.
        let mut out = Vec::new();
        let got = (&mut self.inner).take(len).read_to_end(&mut out).map_err(inflate_error)?;
        if (got as u64) < len {
            return Err(BodyError::Truncated);
        }
        self.read += len;
        Ok(out)
    }
}

fn inflate_error(e: io::Error) -> BodyError {
    if e.kind() == io::ErrorKind::UnexpectedEof {
        BodyError::Truncated
    } else {
        BodyError::Inflate(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compact_line_keeps_leading_empty_name_and_drops_trailing_spaces() {
        let c = TopicConfig::decode_compact(" 1 2 6 MULTI_TAG   ").unwrap();
        assert_eq!(c.topic_name.as_deref(), Some(""));
        assert_eq!((c.read_queue_nums, c.write_queue_nums, c.perm), (1, 2, 6));
        assert_eq!(c.topic_filter_type, TopicFilterType::MultiTag);
        assert_eq!(c.attributes, Some(BTreeMap::new()));
    }

    #[test]
    fn compact_line_with_null_attributes_gives_none() {
        let c = TopicConfig::decode_compact("t 1 1 6 SINGLE_TAG null").unwrap();
        assert_eq!(c.attributes, None);
    }

    fn zlib(plain: &[u8]) -> Vec<u8> {
        let mut z = ZlibEncoder::new(Vec::new(), Compression::best());
        z.write_all(plain).unwrap();
        z.finish().unwrap()
    }

    #[test]
    fn a_zlib_bomb_stops_at_the_inflated_limit() {
        // A DataVersion block announcing 8 MiB of spaces: 8 KiB compressed.
        let mut plain = Vec::new();
        put_len(&mut plain, 8 << 20);
        plain.resize(4 + (8 << 20), b' ');
        let bomb = zlib(&plain);
        assert!(bomb.len() < 64 * 1024);
        let limits = BodyLimits { max_inflated: 1 << 20, max_topics: usize::MAX };
        let err = RegisterBrokerBody::decode_limited(&bomb, true, 479, limits);
        assert!(matches!(err, Err(BodyError::TooLarge(max)) if max == 1 << 20), "{err:?}");
        let default = RegisterBrokerBody::decode_limited(&bomb, true, 479, BodyLimits::default());
        assert!(!matches!(default, Err(BodyError::TooLarge(_))), "8 MiB is under 64 MiB");
    }

    #[test]
    fn a_body_with_more_topics_than_allowed_is_refused_in_every_form() {
        let mut body = RegisterBrokerBody::default();
        for i in 0..11 {
            let name = format!("T{i}");
            Arc::make_mut(&mut body.topic_config_serialize_wrapper.topic_config_table)
                .insert(name.clone(), TopicConfig::named(name));
        }
        let ten = BodyLimits { max_inflated: MAX_INFLATED_BODY, max_topics: 10 };
        let eleven = BodyLimits { max_topics: 11, ..ten };
        let json = to_legacy_json(&body);
        let zlib = body.encode_compressed(479);
        let bare = to_legacy_json(&TopicConfigSerializeWrapper {
            topic_config_table: body
                .topic_config_serialize_wrapper
                .topic_config_table
                .as_ref()
                .clone(),
            ..TopicConfigSerializeWrapper::default()
        });
        for (bytes, compressed, version) in
            [(&json, false, 479), (&zlib, true, 479), (&bare, false, 36)]
        {
            let refused = RegisterBrokerBody::decode_limited(bytes, compressed, version, ten);
            assert!(
                matches!(refused, Err(BodyError::TooManyTopics { count: 11, max: 10 })),
                "{refused:?}"
            );
            assert!(RegisterBrokerBody::decode_limited(bytes, compressed, version, eleven).is_ok());
        }
    }

    #[test]
    fn a_compressed_body_announcing_millions_of_topics_is_refused_before_reading_them() {
        let mut plain = Vec::new();
        put_block(&mut plain, b"{\"counter\":1,\"stateVersion\":0,\"timestamp\":1}");
        put_len(&mut plain, 2_000_000); // and not one topic line follows
        let limits = BodyLimits { max_inflated: MAX_INFLATED_BODY, max_topics: 200_000 };
        let refused = RegisterBrokerBody::decode_compressed_limited(&zlib(&plain), 479, limits);
        assert!(matches!(refused, Err(BodyError::TooManyTopics { count: 2_000_000, .. })));
    }

    #[test]
    fn block_longer_than_the_cap_is_refused_before_reading() {
        let mut plain = Vec::new();
        plain.extend_from_slice(&i32::MAX.to_be_bytes());
        let mut r = Parts { inner: plain.as_slice(), read: 0, max: MAX_INFLATED_BODY };
        assert!(matches!(r.block(), Err(BodyError::TooLarge(_))));
    }
}
