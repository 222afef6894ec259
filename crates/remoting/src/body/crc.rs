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
