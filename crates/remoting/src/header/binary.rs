//! The ROCKETMQ binary command header (serialize type 1), big-endian:
//! `code i16 | language u8 | version i16 | opaque i32 | flag i32 | remarkLen i32 | remark |
//! extLen i32 | { keyLen i16 | key | valLen i32 | val }*`.
//!
//! Java quirks kept: `code`/`version` are truncated to 16 bits on write and sign-extended on read;
//! an empty remark is written as length 0 and length 0 reads as `None`; an empty or absent ext map
//! is written as `extLen = 0`, and `extLen <= 0` reads as `None`; a zero-length key or value reads
//! as "absent"; strings are read as UTF-8 with replacement of invalid bytes.
//! Every length is checked against the header slice: reading past it is an error, never a panic.

use bytes::BufMut;

use crate::code::LanguageCode;
use crate::command::{ExtFields, RemotingCommand, SerializeType, TooManyExtFields, MAX_EXT_FIELDS};
use crate::header::HeaderError;

/// The fixed part: code 2 + language 1 + version 2 + opaque 4 + flag 4 + remarkLen 4 + extLen 4.
pub const FIXED_LEN: usize = 21;

/// The byte length of `cmd`'s binary header, or the error [`encode`] would return.
pub fn encoded_len(cmd: &RemotingCommand) -> Result<usize, HeaderError> {
    Ok(FIXED_LEN + remark_bytes(cmd)?.len() + ext_len(cmd)?)
}

fn remark_bytes(cmd: &RemotingCommand) -> Result<&[u8], HeaderError> {
    let remark = cmd.remark.as_deref().unwrap_or("").as_bytes();
    if i32::try_from(remark.len()).is_err() {
        return Err(HeaderError::ValueTooLong { field: "remark", len: remark.len() });
    }
    Ok(remark)
}

fn ext_len(cmd: &RemotingCommand) -> Result<usize, HeaderError> {
    let mut total = 0usize;
    for (k, v) in cmd.ext_fields.iter().flat_map(ExtFields::iter) {
        if i16::try_from(k.len()).is_err() {
            return Err(HeaderError::KeyTooLong(k.len()));
        }
        if i32::try_from(v.len()).is_err() {
            return Err(HeaderError::ValueTooLong { field: "ext value", len: v.len() });
        }
        total = total.saturating_add(2 + k.len() + 4 + v.len());
    }
    if i32::try_from(total).is_err() {
        return Err(HeaderError::ValueTooLong { field: "extFields", len: total });
    }
    Ok(total)
}

/// Appends `cmd`'s binary header (its `serialize_type` is not consulted). Errors, writing nothing,
/// when an ext key exceeds 32 767 bytes or a length exceeds `i32::MAX`.
/// Java: `RocketMQSerializable#rocketMQProtocolEncode`
pub fn encode<B: BufMut + ?Sized>(cmd: &RemotingCommand, out: &mut B) -> Result<(), HeaderError> {
    let remark = remark_bytes(cmd)?;
    let ext_len = ext_len(cmd)?;
    // Java writes `(short) code` / `(short) version`: truncation is the wire behaviour.
    out.put_i16(cmd.code as i16);
    out.put_u8(cmd.language.to_u8());
    out.put_i16(cmd.version as i16);
    out.put_i32(cmd.opaque);
    out.put_i32(cmd.flag);
    // Lengths were checked to fit an i32 above.
    out.put_i32(remark.len() as i32);
    out.put_slice(remark);
    out.put_i32(ext_len as i32);
    for (k, v) in cmd.ext_fields.iter().flat_map(ExtFields::iter) {
        out.put_i16(k.len() as i16);
        out.put_slice(k.as_bytes());
        out.put_i32(v.len() as i32);
        out.put_slice(v.as_bytes());
    }
    Ok(())
}

/// A bounds-checked big-endian reader over a byte slice.
struct Reader<'a> {
    buf: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize, field: &'static str) -> Result<&'a [u8], HeaderError> {
        if n > self.buf.len() {
            return Err(HeaderError::Truncated { field, need: n, left: self.buf.len() });
        }
        let (head, rest) = self.buf.split_at(n);
        self.buf = rest;
        Ok(head)
    }

    fn array<const N: usize>(&mut self, field: &'static str) -> Result<[u8; N], HeaderError> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.take(N, field)?);
        Ok(a)
    }

    fn i16(&mut self, field: &'static str) -> Result<i16, HeaderError> {
        self.array(field).map(i16::from_be_bytes)
    }

    fn i32(&mut self, field: &'static str) -> Result<i32, HeaderError> {
        self.array(field).map(i32::from_be_bytes)
    }

    /// A string of `len` bytes; length 0 is `None`.
    fn string(&mut self, len: i32, field: &'static str) -> Result<Option<String>, HeaderError> {
        let n = usize::try_from(len).map_err(|_| HeaderError::NegativeLength { field, len })?;
        let bytes = self.take(n, field)?;
        Ok((n > 0).then(|| String::from_utf8_lossy(bytes).into_owned()))
    }
}

/// Decodes a binary header from exactly these bytes (bytes left over after the ext block are
/// ignored). The result has no body and `serialize_type = RocketMq`.
/// Java: `RocketMQSerializable#rocketMQProtocolDecode`
pub fn decode(bytes: &[u8]) -> Result<RemotingCommand, HeaderError> {
    let mut r = Reader { buf: bytes };
    let code = i32::from(r.i16("code")?);
    let language = LanguageCode::from_u8(r.array::<1>("language")?[0]);
    let version = i32::from(r.i16("version")?);
    let opaque = r.i32("opaque")?;
    let flag = r.i32("flag")?;
    let remark_len = r.i32("remarkLen")?;
    let remark = r.string(remark_len, "remark")?;
    let ext_len = r.i32("extLen")?;
    let ext_fields = match usize::try_from(ext_len) {
        Ok(n) if n > 0 => Some(decode_ext(r.take(n, "extFields")?)?),
        // Java: `extFieldsLength > 0` guards the map; zero or negative means "no map".
        _ => None,
    };
    Ok(RemotingCommand {
        code,
        language,
        version,
        opaque,
        flag,
        remark,
        ext_fields,
        body: None,
        serialize_type: SerializeType::RocketMq,
    })
}

/// Decodes the ext block: entries until the block is used up; an entry crossing the block's end is
/// an error. Entries with an empty key or value are dropped; a repeated key keeps the later value.
/// Java: `RocketMQSerializable#mapDeserialize`
fn decode_ext(block: &[u8]) -> Result<ExtFields, HeaderError> {
    let mut r = Reader { buf: block };
    let mut entries = Vec::new();
    while !r.buf.is_empty() {
        let key_len = r.i16("ext key length")?;
        let key = r.string(i32::from(key_len), "ext key")?;
        let val_len = r.i32("ext value length")?;
        let value = r.string(val_len, "ext value")?;
        // Java stores `k -> null` for a null value, which reads as absent and hides an earlier
        // value.
        if let Some(key) = key {
            if entries.len() == MAX_EXT_FIELDS {
                return Err(TooManyExtFields.into());
            }
            entries.push((key, value));
        }
    }
    Ok(ExtFields::from_wire(entries)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        let s: String = s.split_whitespace().collect();
        (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
    }

    fn enc(cmd: &RemotingCommand) -> Vec<u8> {
        let mut out = Vec::new();
        encode(cmd, &mut out).unwrap();
        assert_eq!(out.len(), encoded_len(cmd).unwrap());
        out
    }

    #[test]
    fn code_and_version_are_truncated_to_16_bits_and_sign_extended() {
        let cmd = RemotingCommand { code: 200_050, version: 40_000, ..Default::default() };
        let back = decode(&enc(&cmd)).unwrap();
        assert_eq!(back.code, i32::from(200_050_i32 as i16));
        assert_eq!(back.version, -25_536);
    }

    #[test]
    fn unknown_language_byte_is_kept() {
        let mut bytes = enc(&RemotingCommand::default());
        bytes[2] = 200;
        assert_eq!(decode(&bytes).unwrap().language, LanguageCode::Unknown(200));
    }

    #[test]
    fn empty_ext_map_is_written_as_zero_and_read_as_none() {
        let cmd = RemotingCommand { ext_fields: Some(ExtFields::new()), ..Default::default() };
        let bytes = enc(&cmd);
        assert_eq!(bytes.len(), FIXED_LEN);
        assert_eq!(decode(&bytes).unwrap().ext_fields, None);
    }

    #[test]
    fn negative_ext_length_reads_as_no_map() {
        let mut bytes = enc(&RemotingCommand::default());
        bytes[17..21].copy_from_slice(&(-5i32).to_be_bytes());
        assert_eq!(decode(&bytes).unwrap().ext_fields, None);
    }

    #[test]
    fn zero_length_keys_and_values_are_absent() {
        // ext: "" -> "x", "k" -> "", "a" -> "b"
        let block = hex("0000 00000001 78  0001 6b 00000000  0001 61 00000001 62");
        let mut bytes = hex("0067 00 0009 00000000 00000000 00000000");
        bytes.extend_from_slice(&(block.len() as i32).to_be_bytes());
        bytes.extend_from_slice(&block);
        let ext = decode(&bytes).unwrap().ext_fields.unwrap();
        assert_eq!(ext.iter().collect::<Vec<_>>(), [("a", "b")]);
    }

    #[test]
    fn out_of_bounds_lengths_are_errors() {
        let base = hex("0067 00 0009 00000000 00000000");
        let cases: Vec<Vec<u8>> = vec![
            base[..12].to_vec(),                                      // cut inside flag
            [&base[..], &hex("0000000d 5361")[..]].concat(),          // remark past the end
            [&base[..], &hex("ffffffff 00000000")[..]].concat(),      // negative remark length
            [&base[..], &hex("00000000 0000000e 0003")[..]].concat(), // ext block past the end
            [&base[..], &hex("00000000 00000003 0003 6b65 79")[..]].concat(), // key crosses block
            [&base[..], &hex("00000000 00000006 0001 6b 0000")[..]].concat(), // value len cut
            [&base[..], &hex("00000000 00000009 0001 6b 00000005 76")[..]].concat(), // value crosses
            [&base[..], &hex("00000000 00000002 ffff")[..]].concat(), // negative key length
            [&base[..], &hex("00000000 00000007 0001 6b ffffffff")[..]].concat(), // negative value length
            [&base[..], &hex("00000000")[..]].concat(),                           // no extLen
        ];
        for (i, bytes) in cases.iter().enumerate() {
            assert!(decode(bytes).is_err(), "case {i} decoded: {bytes:02x?}");
        }
    }

    #[test]
    fn ext_key_longer_than_i16_cannot_be_encoded() {
        let mut ext = ExtFields::new();
        ext.insert("k".repeat(32_768), "v");
        let cmd = RemotingCommand { ext_fields: Some(ext), ..Default::default() };
        let mut out = Vec::new();
        assert!(matches!(encode(&cmd, &mut out), Err(HeaderError::KeyTooLong(32_768))));
        assert!(out.is_empty());
        let mut ok = ExtFields::new();
        ok.insert("k".repeat(32_767), "v");
        let cmd = RemotingCommand { ext_fields: Some(ok), ..Default::default() };
        assert_eq!(decode(&enc(&cmd)).unwrap().ext_fields, cmd.ext_fields);
    }

    #[test]
    fn invalid_utf8_is_replaced_not_rejected() {
        let bytes = hex("0067 00 0009 00000000 00000000 00000002 ff61 00000000");
        assert_eq!(decode(&bytes).unwrap().remark.as_deref(), Some("\u{fffd}a"));
    }
}
