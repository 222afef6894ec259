//! The command header in its two serializations: fastjson-compatible JSON (type 0) and the
//! ROCKETMQ binary layout (type 1). Header bytes only: framing lives in `frame.rs`, the body is
//! never part of a header.

pub mod binary;
pub mod json;
mod plain;

use bytes::BufMut;

use crate::command::{RemotingCommand, SerializeType};
use crate::fastjson::LenientJsonError;

/// Why a header could not be decoded or encoded.
#[derive(Debug, thiserror::Error)]
pub enum HeaderError {
    /// The JSON header is empty, `null`, not an object, not JSON, has trailing garbage, or has a
    /// field of an impossible type.
    #[error("bad JSON header: {0}")]
    Json(#[from] LenientJsonError),
    /// A binary header field runs past the end of the header (or of the ext block).
    #[error("binary header truncated: {field} needs {need} bytes, {left} left")]
    Truncated { field: &'static str, need: usize, left: usize },
    /// A binary header length field is negative.
    #[error("binary header {field} length is negative: {len}")]
    NegativeLength { field: &'static str, len: i32 },
    /// An ext key longer than the int16 length field of the binary layout.
    #[error("ext key of {0} bytes is too long for a binary header (max 32767)")]
    KeyTooLong(usize),
    /// A remark or ext value longer than an int32 length field.
    #[error("{field} of {len} bytes is too long for a binary header")]
    ValueTooLong { field: &'static str, len: usize },
    /// More `extFields` entries than [`crate::command::MAX_EXT_FIELDS`].
    #[error(transparent)]
    TooManyExtFields(#[from] crate::command::TooManyExtFields),
}

/// Decodes a header of the given serialization from exactly these bytes. The returned command has
/// no body and `serialize_type = ty`. Java: `RemotingCommand#headerDecode`
pub fn decode(bytes: &[u8], ty: SerializeType) -> Result<RemotingCommand, HeaderError> {
    let mut cmd = match ty {
        SerializeType::Json => json::decode(bytes)?,
        SerializeType::RocketMq => binary::decode(bytes)?,
    };
    cmd.serialize_type = ty;
    Ok(cmd)
}

/// Appends the header of `cmd` in its own `serialize_type`. Java: `RemotingCommand#headerEncode`
pub fn encode<B: BufMut + ?Sized>(cmd: &RemotingCommand, out: &mut B) -> Result<(), HeaderError> {
    match cmd.serialize_type {
        SerializeType::Json => {
            json::encode(cmd, out);
            Ok(())
        }
        SerializeType::RocketMq => binary::encode(cmd, out),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::command::{ExtFields, MAX_EXT_FIELDS};

    fn header_with_ext(n: usize, ty: SerializeType) -> Vec<u8> {
        let ext: ExtFields = (0..n).map(|i| (format!("k{i}"), "v")).collect();
        let cmd =
            RemotingCommand { ext_fields: Some(ext), serialize_type: ty, ..Default::default() };
        let mut out = Vec::new();
        encode(&cmd, &mut out).expect("encode");
        out
    }

    #[test]
    fn a_header_with_more_ext_fields_than_the_cap_is_refused_in_both_forms() {
        for ty in [SerializeType::Json, SerializeType::RocketMq] {
            let ok = decode(&header_with_ext(MAX_EXT_FIELDS, ty), ty).expect("at the cap");
            assert_eq!(ok.ext_fields.map(|e| e.len()), Some(MAX_EXT_FIELDS));
            assert!(decode(&header_with_ext(MAX_EXT_FIELDS + 1, ty), ty).is_err(), "{ty:?}");
        }
        // The general JSON decoder too (an escape keeps the fast path out).
        let mut text = String::from(r#"{"code":1,"extFields":{"\u0061":"v""#);
        for i in 0..MAX_EXT_FIELDS {
            text.push_str(&format!(r#","k{i}":"v""#));
        }
        text.push_str("}}");
        assert!(decode(text.as_bytes(), SerializeType::Json).is_err());
    }
}
