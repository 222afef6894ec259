//! The body checksum of REGISTER_BROKER (`bodyCrc32` header field): CRC-32 masked to 31 bits.

/// CRC-32 (IEEE, as `java.util.zip.CRC32`) of `bytes`, masked with `0x7FFFFFFF`. For a
/// compressed RegisterBrokerBody it is computed over the compressed bytes.
/// Java: `UtilAll#crc32(byte[])`
pub fn body_crc32(bytes: &[u8]) -> i32 {
    // The mask keeps 31 bits, so the value always fits a non-negative i32.
    i32::try_from(crc32fast::hash(bytes) & 0x7FFF_FFFF).unwrap_or(0)
}

/// Whether a REGISTER_BROKER body passes its checksum: always when `expected` is 0 (the broker sent
/// none); otherwise the masked CRC of the body (0 for no body) must equal `expected`.
/// Java: `DefaultRequestProcessor#checksum`
pub fn body_crc32_matches(body: Option<&[u8]>, expected: i32) -> bool {
    expected == 0 || body.map_or(0, body_crc32) == expected
}

/// The position of the `DataVersion` value in a registration body: the lengths of the bytes
/// before and after it, and their CRC32s (so the checksum of a body that differs only in its
/// version needs no pass over the body).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VersionFrame {
    pub prefix_len: usize,
    pub suffix_len: usize,
    pub prefix_crc: u32,
    pub suffix_crc: u32,
}

impl VersionFrame {
    /// The frame of a body split into `before`, the version, and `after`.
    pub fn new(before: &[u8], after: &[u8]) -> Self {
        Self {
            prefix_len: before.len(),
            suffix_len: after.len(),
            prefix_crc: crc32fast::hash(before),
            suffix_crc: crc32fast::hash(after),
        }
    }

    /// The masked `bodyCrc32` of this frame's prefix and suffix around `middle`.
    /// Java: `UtilAll#crc32` (`& 0x7FFFFFFF`)
    pub fn body_crc32(&self, middle: &[u8]) -> i32 {
        let mut crc =
            crc32fast::Hasher::new_with_initial_len(self.prefix_crc, self.prefix_len as u64);
        let mut mid = crc32fast::Hasher::new();
        mid.update(middle);
        crc.combine(&mid);
        crc.combine(&crc32fast::Hasher::new_with_initial_len(
            self.suffix_crc,
            self.suffix_len as u64,
        ));
        i32::try_from(crc.finalize() & 0x7FFF_FFFF).unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::VersionFrame;

    #[test]
    fn the_combined_crc_is_the_crc_of_the_whole_body() {
        let body = br#"{"a":1,"dataVersion":{"counter":12345},"topicConfigTable":{"T":{}}}"#;
        let (start, end) = (21, 38);
        assert_eq!(&body[start..end], br#"{"counter":12345}"#.as_slice());
        let frame = VersionFrame::new(&body[..start], &body[end..]);
        assert_eq!(frame.body_crc32(&body[start..end]), super::body_crc32(body));
        assert_ne!(frame.body_crc32(br#"{"counter":12346}"#), super::body_crc32(body));
    }
}
