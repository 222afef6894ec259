//! The JSON command header (serialize type 0): written byte-exact like fastjson 1.2.83
//! (`JSON.toJSONString(cmd)`), read as leniently as fastjson reads it.
//!
//! Output: keys in alphabetical order `code, extFields, flag, language, opaque, remark,
//! serializeTypeCurrentRPC, version`; `extFields` and `remark` left out when `None`;
//! `serializeTypeCurrentRPC` always `"JSON"`; language by name; ext entries in `ExtFields` order.
//!
//! Input: any key order, unknown keys ignored, missing keys take Java's defaults (opaque 0),
//! `null` remark/extFields, language as a name (any case; unknown → `OTHER`) or an int, ints as
//! numeric strings, ext values that are numbers/booleans/arrays/objects turned into text and
//! `null` ext values dropped; unquoted keys, single quotes and trailing commas via
//! [`crate::fastjson::normalize`]. Rejected: empty input, `null`, non-objects, trailing garbage.

use std::fmt;

use bytes::BufMut;
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;

use crate::code::LanguageCode;
use crate::command::{ExtFields, RemotingCommand, SerializeType, TooManyExtFields, MAX_EXT_FIELDS};
use crate::fastjson::{self, escape_legacy_into, LenientJsonError};

fn put_int<B: BufMut + ?Sized>(out: &mut B, v: i32) {
    out.put_slice(itoa::Buffer::new().format(v).as_bytes());
}

fn put_str<B: BufMut + ?Sized>(out: &mut B, s: &str) {
    out.put_u8(b'"');
    escape_legacy_into(out, s);
    out.put_u8(b'"');
}

/// Appends the fastjson JSON text of `cmd`'s header (its `serialize_type` is not consulted).
/// Java: `RemotingSerializable#encode(RemotingCommand)`
pub fn encode<B: BufMut + ?Sized>(cmd: &RemotingCommand, out: &mut B) {
    out.put_slice(b"{\"code\":");
    put_int(out, cmd.code);
    if let Some(ext) = &cmd.ext_fields {
        out.put_slice(b",\"extFields\":{");
        for (i, (k, v)) in ext.iter().enumerate() {
            if i > 0 {
                out.put_u8(b',');
            }
            put_str(out, k);
            out.put_u8(b':');
            put_str(out, v);
        }
        out.put_u8(b'}');
    }
    out.put_slice(b",\"flag\":");
    put_int(out, cmd.flag);
    out.put_slice(b",\"language\":\"");
    out.put_slice(cmd.language.name().as_bytes());
    out.put_slice(b"\",\"opaque\":");
    put_int(out, cmd.opaque);
    if let Some(remark) = &cmd.remark {
        out.put_slice(b",\"remark\":");
        put_str(out, remark);
    }
    out.put_slice(b",\"serializeTypeCurrentRPC\":\"JSON\",\"version\":");
    put_int(out, cmd.version);
    out.put_u8(b'}');
}

/// The JSON header of `cmd` as a `Vec`.
pub fn encode_to_vec(cmd: &RemotingCommand) -> Vec<u8> {
    let mut out = Vec::with_capacity(128);
    encode(cmd, &mut out);
    out
}

/// Decodes a JSON header. Strict JSON is parsed in one pass; anything else is first rewritten by
/// [`fastjson::normalize`]. The result has no body and `serialize_type = Json`.
/// Java: `RemotingSerializable#decode(byte[], RemotingCommand.class)`
pub fn decode(bytes: &[u8]) -> Result<RemotingCommand, LenientJsonError> {
    match super::plain::decode_plain(bytes) {
        Some(cmd) => Ok(cmd),
        None => decode_general(bytes),
    }
}

/// [`decode`] without the fast path for plain headers.
pub(crate) fn decode_general(bytes: &[u8]) -> Result<RemotingCommand, LenientJsonError> {
    match serde_json::from_slice::<JsonHeader>(bytes) {
        Ok(h) => Ok(h.0),
        Err(strict_err) => {
            if bytes.iter().all(u8::is_ascii_whitespace) {
                return Err(LenientJsonError::Empty);
            }
            let normalized = fastjson::normalize(bytes)?;
            if matches!(normalized, std::borrow::Cow::Borrowed(_)) {
                // Nothing to rewrite: the strict error stands.
                return Err(strict_err.into());
            }
            Ok(serde_json::from_slice::<JsonHeader>(&normalized)?.0)
        }
    }
}

struct JsonHeader(RemotingCommand);

#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "camelCase")]
enum Field {
    Code,
    Language,
    Version,
    Opaque,
    Flag,
    Remark,
    ExtFields,
    #[serde(other)]
    Other,
}

impl<'de> Deserialize<'de> for JsonHeader {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(HeaderVisitor)
    }
}

struct HeaderVisitor;

impl<'de> Visitor<'de> for HeaderVisitor {
    type Value = JsonHeader;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a RemotingCommand JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<JsonHeader, A::Error> {
        // Missing keys keep Java's defaults; a repeated key keeps its last value (fastjson).
        let mut cmd = RemotingCommand { serialize_type: SerializeType::Json, ..Default::default() };
        while let Some(field) = map.next_key::<Field>()? {
            match field {
                Field::Code => cmd.code = map.next_value::<LenientInt>()?.0,
                Field::Version => cmd.version = map.next_value::<LenientInt>()?.0,
                Field::Opaque => cmd.opaque = map.next_value::<LenientInt>()?.0,
                Field::Flag => cmd.flag = map.next_value::<LenientInt>()?.0,
                Field::Language => cmd.language = map.next_value::<Language>()?.0,
                Field::Remark => cmd.remark = map.next_value_seed(TextValue)?,
                Field::ExtFields => cmd.ext_fields = map.next_value::<OptExt>()?.0,
                Field::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(JsonHeader(cmd))
    }
}

/// An int field: a JSON number in `i32` range (a float is truncated), a numeric string, a boolean
/// (1/0) or `null` (0), as fastjson's `TypeUtils.castToInt` allows.
struct LenientInt(i32);

impl<'de> Deserialize<'de> for LenientInt {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = LenientInt;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an int or a numeric string")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<LenientInt, E> {
                i32::try_from(v)
                    .map(LenientInt)
                    .map_err(|_| E::custom(format!("int out of range: {v}")))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<LenientInt, E> {
                i32::try_from(v)
                    .map(LenientInt)
                    .map_err(|_| E::custom(format!("int out of range: {v}")))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<LenientInt, E> {
                let t = v.trunc();
                if t.is_finite() && t >= f64::from(i32::MIN) && t <= f64::from(i32::MAX) {
                    Ok(LenientInt(t as i32))
                } else {
                    Err(E::custom(format!("int out of range: {v}")))
                }
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<LenientInt, E> {
                Ok(LenientInt(i32::from(v)))
            }
            fn visit_unit<E: de::Error>(self) -> Result<LenientInt, E> {
                Ok(LenientInt(0))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<LenientInt, E> {
                let t = v.trim();
                if t.is_empty() || t == "null" {
                    return Ok(LenientInt(0));
                }
                t.parse().map(LenientInt).map_err(|_| E::custom(format!("not an int: {v:?}")))
            }
        }
        d.deserialize_any(V)
    }
}

/// `language`: a name in any case (unknown → `OTHER`), an int code, or `null` (→ `JAVA`).
struct Language(LanguageCode);

impl<'de> Deserialize<'de> for Language {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Language;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a LanguageCode name or ordinal")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Language, E> {
                Ok(Language(LanguageCode::from_name(v).unwrap_or(LanguageCode::Other)))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Language, E> {
                Ok(Language(u8::try_from(v).map_or(LanguageCode::Other, LanguageCode::from_u8)))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Language, E> {
                Ok(Language(u8::try_from(v).map_or(LanguageCode::Other, LanguageCode::from_u8)))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Language, E> {
                Ok(Language(LanguageCode::Java))
            }
        }
        d.deserialize_any(V)
    }
}

/// A value that becomes text: strings as is, numbers and booleans in their text form, arrays and
/// objects as their JSON text, `null` as `None` (fastjson's conversion into a `String` field or a
/// `HashMap<String,String>` value).
#[derive(Clone, Copy)]
struct TextValue;

impl<'de> DeserializeSeed<'de> for TextValue {
    type Value = Option<String>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Option<String>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for TextValue {
    type Value = Option<String>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Option<String>, E> {
        Ok(Some(v.to_owned()))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Option<String>, E> {
        Ok(Some(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Option<String>, E> {
        Ok(Some(itoa::Buffer::new().format(v).to_owned()))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Option<String>, E> {
        Ok(Some(itoa::Buffer::new().format(v).to_owned()))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Option<String>, E> {
        // Debug keeps the fraction (`1.0`, as fastjson's BigDecimal text does).
        Ok(Some(format!("{v:?}")))
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Option<String>, E> {
        Ok(Some(if v { "true" } else { "false" }.to_owned()))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Option<String>, E> {
        Ok(None)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Option<String>, A::Error> {
        let v = serde_json::Value::deserialize(de::value::SeqAccessDeserializer::new(seq))?;
        Ok(Some(v.to_string()))
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Option<String>, A::Error> {
        let v = serde_json::Value::deserialize(de::value::MapAccessDeserializer::new(map))?;
        Ok(Some(v.to_string()))
    }
}

/// `extFields`: an object (entries in wire order, `null` values dropped) or `null`.
struct OptExt(Option<ExtFields>);

impl<'de> Deserialize<'de> for OptExt {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = OptExt;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an extFields object or null")
            }
            fn visit_unit<E: de::Error>(self) -> Result<OptExt, E> {
                Ok(OptExt(None))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<OptExt, A::Error> {
                // A null value is "absent"; a later null also hides an earlier value.
                let mut entries = Vec::new();
                while let Some(key) = map.next_key::<String>()? {
                    if entries.len() == MAX_EXT_FIELDS {
                        return Err(de::Error::custom(TooManyExtFields));
                    }
                    entries.push((key, map.next_value_seed(TextValue)?));
                }
                let ext = ExtFields::from_wire(entries).map_err(de::Error::custom)?;
                Ok(OptExt(Some(ext)))
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enc(cmd: &RemotingCommand) -> String {
        String::from_utf8(encode_to_vec(cmd)).unwrap()
    }

    fn dec(s: &str) -> RemotingCommand {
        decode(s.as_bytes()).unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    #[test]
    fn writes_keys_alphabetically_and_omits_null_remark_and_ext() {
        let cmd =
            RemotingCommand { code: 0, flag: 1, opaque: 1, version: 479, ..Default::default() };
        assert_eq!(
            enc(&cmd),
            r#"{"code":0,"flag":1,"language":"JAVA","opaque":1,"serializeTypeCurrentRPC":"JSON","version":479}"#
        );
    }

    #[test]
    fn writes_empty_ext_as_braces_and_escapes_remark_like_fastjson() {
        let cmd = RemotingCommand {
            code: -3,
            flag: 1,
            opaque: i32::MIN,
            version: 479,
            language: LanguageCode::Rust,
            remark: Some("a\"\n\u{1}/é".into()),
            ext_fields: Some(ExtFields::new()),
            ..Default::default()
        };
        assert_eq!(
            enc(&cmd),
            "{\"code\":-3,\"extFields\":{},\"flag\":1,\"language\":\"RUST\",\"opaque\":-2147483648,\
             \"remark\":\"a\\\"\\n\\u0001/é\",\"serializeTypeCurrentRPC\":\"JSON\",\"version\":479}"
        );
    }

    #[test]
    fn unknown_language_byte_is_written_as_other() {
        let cmd = RemotingCommand { language: LanguageCode::Unknown(77), ..Default::default() };
        assert!(enc(&cmd).contains(r#""language":"OTHER""#));
    }

    #[test]
    fn missing_keys_take_java_defaults() {
        let cmd = dec("{}");
        assert_eq!((cmd.code, cmd.version, cmd.opaque, cmd.flag), (0, 0, 0, 0));
        assert_eq!(cmd.language, LanguageCode::Java);
        assert_eq!((cmd.remark, cmd.ext_fields), (None, None));
    }

    #[test]
    fn accepts_null_remark_and_ext_and_ignores_unknown_keys() {
        let cmd = dec(
            r#"{"code":105,"language":"RUST","version":1,"opaque":2,"flag":0,"remark":null,"extFields":null,"serializeTypeCurrentRPC":"JSON","x":[1,{"y":2}]}"#,
        );
        assert_eq!(
            (cmd.code, cmd.language, cmd.version, cmd.opaque),
            (105, LanguageCode::Rust, 1, 2)
        );
        assert_eq!((cmd.remark, cmd.ext_fields), (None, None));
    }

    #[test]
    fn language_accepts_any_case_names_ints_and_maps_unknown_names_to_other() {
        assert_eq!(dec(r#"{"language":"java"}"#).language, LanguageCode::Java);
        assert_eq!(dec(r#"{"language":9}"#).language, LanguageCode::Go);
        assert_eq!(dec(r#"{"language":"node_js"}"#).language, LanguageCode::NodeJs);
        assert_eq!(dec(r#"{"language":"FOO"}"#).language, LanguageCode::Other);
        assert_eq!(dec(r#"{"language":300}"#).language, LanguageCode::Other);
    }

    #[test]
    fn int_fields_accept_numeric_strings_and_reject_garbage() {
        let cmd = dec(r#"{"code":"105","opaque":" -7 ","flag":null,"version":"479"}"#);
        assert_eq!((cmd.code, cmd.opaque, cmd.flag, cmd.version), (105, -7, 0, 479));
        assert!(decode(br#"{"code":"abc"}"#).is_err());
        assert!(decode(br#"{"code":4294967296}"#).is_err());
        assert!(decode(br#"{"code":[1]}"#).is_err());
    }

    #[test]
    fn ext_values_of_other_types_become_text_and_null_values_are_absent() {
        let cmd = dec(
            r#"{"extFields":{"a":0,"b":false,"c":null,"d":[1,2],"e":{"f":"g"},"h":-1.5,"i":"s","j":1.0}}"#,
        );
        let ext = cmd.ext_fields.unwrap();
        let got: Vec<_> = ext.iter().collect();
        assert_eq!(
            got,
            [
                ("a", "0"),
                ("b", "false"),
                ("d", "[1,2]"),
                ("e", r#"{"f":"g"}"#),
                ("h", "-1.5"),
                ("i", "s"),
                ("j", "1.0")
            ]
        );
    }

    #[test]
    fn a_repeated_key_keeps_the_last_value() {
        let cmd = dec(r#"{"code":1,"code":2,"extFields":{"k":"a","k":"b"}}"#);
        assert_eq!(cmd.code, 2);
        assert_eq!(cmd.ext("k"), Some("b"));
    }

    #[test]
    fn fastjson_leniency_unquoted_keys_single_quotes_and_trailing_commas() {
        let cmd = dec("{code:105,'language':'GO',extFields:{topic:'TopicTest',},}");
        assert_eq!((cmd.code, cmd.language), (105, LanguageCode::Go));
        assert_eq!(cmd.ext("topic"), Some("TopicTest"));
    }

    #[test]
    fn rejects_what_fastjson_rejects() {
        for bad in [
            "",
            " ",
            "null",
            "[]",
            "[{}]",
            "\"x\"",
            "105",
            "{\"code\":105} x",
            "{\"code\":105}{}",
            "{\"code\":105",
            "{\"extFields\":[]}",
            "{\"extFields\":\"x\"}",
        ] {
            assert!(decode(bad.as_bytes()).is_err(), "accepted {bad:?}");
        }
        assert!(decode(b"{\"code\":105} \r\n").is_ok());
    }
}
