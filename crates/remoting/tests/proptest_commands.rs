//! Property tests: random commands round-trip through both header types and the frame codec;
//! random bytes never panic the decoders; the lenient JSON reader agrees with strict JSON.

use bytes::{Bytes, BytesMut};
use proptest::prelude::*;
use remoting::frame::{decode_frame, encode_to_bytes};
use remoting::header::{binary, json};
use remoting::{ExtFields, LanguageCode, RemotingCodec, RemotingCommand, SerializeType};
use tokio_util::codec::{Decoder, Encoder};

fn arb_ext() -> impl Strategy<Value = Option<ExtFields>> {
    prop::option::of(
        prop::collection::vec((".{0,12}", ".{0,24}"), 0..8)
            .prop_map(|pairs| pairs.into_iter().collect::<ExtFields>()),
    )
}

fn arb_body() -> impl Strategy<Value = Option<Bytes>> {
    prop::option::of(prop::collection::vec(any::<u8>(), 0..64).prop_map(Bytes::from))
}

/// A command as the JSON header can carry it: any i32 fields, a named language.
fn arb_json_command() -> impl Strategy<Value = RemotingCommand> {
    (
        any::<i32>(),
        0u8..=13,
        any::<i32>(),
        any::<i32>(),
        any::<i32>(),
        prop::option::of(".{0,40}"),
        arb_ext(),
        arb_body(),
    )
        .prop_map(|(code, lang, version, opaque, flag, remark, ext_fields, body)| {
            RemotingCommand {
                code,
                language: LanguageCode::from_u8(lang),
                version,
                opaque,
                flag,
                remark,
                ext_fields,
                body,
                serialize_type: SerializeType::Json,
            }
        })
}

/// A command as the binary header can carry it: 16-bit code and version, any language byte.
fn arb_binary_command() -> impl Strategy<Value = RemotingCommand> {
    (
        any::<i16>(),
        any::<u8>(),
        any::<i16>(),
        any::<i32>(),
        any::<i32>(),
        prop::option::of(".{0,40}"),
        arb_ext(),
        arb_body(),
    )
        .prop_map(|(code, lang, version, opaque, flag, remark, ext_fields, body)| {
            RemotingCommand {
                code: i32::from(code),
                language: LanguageCode::from_u8(lang),
                version: i32::from(version),
                opaque,
                flag,
                remark,
                ext_fields,
                body,
                serialize_type: SerializeType::RocketMq,
            }
        })
}

/// What a decoder gives back: an empty body is no body.
fn normalized_json(mut cmd: RemotingCommand) -> RemotingCommand {
    cmd.body = cmd.body.filter(|b| !b.is_empty());
    cmd
}

/// What the binary decoder gives back: empty remark → none; empty keys/values dropped; an
/// empty map → none.
fn normalized_binary(cmd: RemotingCommand) -> RemotingCommand {
    let mut cmd = normalized_json(cmd);
    cmd.remark = cmd.remark.filter(|r| !r.is_empty());
    cmd.ext_fields = cmd
        .ext_fields
        .filter(|e| !e.is_empty())
        .map(|e| e.iter().filter(|(k, v)| !k.is_empty() && !v.is_empty()).collect());
    cmd
}

proptest! {
    #[test]
    fn json_commands_round_trip_through_the_frame_codec(cmd in arb_json_command()) {
        let mut buf = BytesMut::new();
        RemotingCodec::new().encode(&cmd, &mut buf).unwrap();
        let back = RemotingCodec::new().decode(&mut buf).unwrap().unwrap();
        prop_assert!(buf.is_empty());
        prop_assert_eq!(back, normalized_json(cmd));
    }

    #[test]
    fn binary_commands_round_trip_through_the_frame_codec(cmd in arb_binary_command()) {
        let frame = encode_to_bytes(&cmd).unwrap();
        prop_assert_eq!(decode_frame(&frame).unwrap(), normalized_binary(cmd));
    }

    #[test]
    fn json_header_is_valid_strict_json_with_the_same_content(cmd in arb_json_command()) {
        let bytes = json::encode_to_vec(&cmd);
        let value: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        prop_assert_eq!(value["code"].as_i64(), Some(i64::from(cmd.code)));
        prop_assert_eq!(value["remark"].as_str(), cmd.remark.as_deref());
        let ext = cmd.ext_fields.unwrap_or_default();
        for (k, v) in ext.iter() {
            prop_assert_eq!(value["extFields"][k].as_str(), Some(v));
        }
    }

    #[test]
    fn random_bytes_never_panic_the_codec(data in prop::collection::vec(any::<u8>(), 0..256), chunk in 1usize..16) {
        let mut codec = RemotingCodec::with_max_frame(1 << 16);
        let mut buf = BytesMut::new();
        'feed: for piece in data.chunks(chunk) {
            buf.extend_from_slice(piece);
            loop {
                match codec.decode(&mut buf) {
                    Ok(Some(_)) => continue,
                    Ok(None) => break,
                    Err(_) => break 'feed,
                }
            }
        }
    }

    #[test]
    fn random_headers_in_well_formed_frames_never_panic(ty in 0u8..3, header in prop::collection::vec(any::<u8>(), 0..96), body in prop::collection::vec(any::<u8>(), 0..8)) {
        let mut frame = Vec::new();
        frame.extend_from_slice(&((4 + header.len() + body.len()) as u32).to_be_bytes());
        frame.extend_from_slice(&((u32::from(ty) << 24) | header.len() as u32).to_be_bytes());
        frame.extend_from_slice(&header);
        frame.extend_from_slice(&body);
        let result = RemotingCodec::new().decode(&mut BytesMut::from(&frame[..]));
        if ty == 2 {
            prop_assert!(result.is_err());
        }
    }

    #[test]
    fn binary_headers_with_random_tails_never_panic(prefix in prop::collection::vec(any::<u8>(), 13..14), tail in prop::collection::vec(any::<u8>(), 0..64)) {
        let mut header = prefix;
        header.extend_from_slice(&tail);
        let _ = binary::decode(&header);
    }

    #[test]
    fn json_like_garbage_never_panics(s in r#"[{}\[\]:,"'a-z0-9 \\-]{0,64}"#) {
        let _ = json::decode(s.as_bytes());
        let _ = remoting::fastjson::parse_lenient(s.as_bytes());
    }

    #[test]
    fn lenient_reader_agrees_with_strict_json(v in arb_json_value()) {
        let text = serde_json::to_vec(&v).unwrap();
        prop_assert_eq!(remoting::fastjson::parse_lenient(&text).unwrap(), v);
    }

    #[test]
    fn legacy_escaping_round_trips_through_a_json_parser(s in "\\PC*|[\u{0}-\u{a0}\u{2028}\u{2029}]{0,20}") {
        let mut out = vec![b'"'];
        remoting::fastjson::escape_legacy_into(&mut out, &s);
        out.push(b'"');
        prop_assert_eq!(serde_json::from_slice::<String>(&out).unwrap(), s);
    }
}

fn arb_json_value() -> impl Strategy<Value = serde_json::Value> {
    use serde_json::Value;
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        ".{0,8}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((".{0,6}", inner), 0..6)
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}
