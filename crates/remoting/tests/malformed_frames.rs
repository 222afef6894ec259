//! A corpus of malformed frames: each must make the codec return an error (the server then closes
//! the connection without a reply) — never a panic, never a decoded command, never "wait for more".

use bytes::BytesMut;
use remoting::{FrameError, RemotingCodec};
use tokio_util::codec::Decoder;

/// A complete frame: prefix `4 + header + body`, header-info `type << 24 | header.len()`.
fn frame(ty: u8, header: &[u8], body: &[u8]) -> Vec<u8> {
    frame_with_len(ty, header.len() as u32, header, body)
}

/// A complete frame whose header-info announces `header_len` (maybe a lie).
fn frame_with_len(ty: u8, header_len: u32, header: &[u8], body: &[u8]) -> Vec<u8> {
    let mut f = Vec::new();
    f.extend_from_slice(&((4 + header.len() + body.len()) as u32).to_be_bytes());
    f.extend_from_slice(&((u32::from(ty) << 24) | header_len).to_be_bytes());
    f.extend_from_slice(header);
    f.extend_from_slice(body);
    f
}

fn json(header: &str) -> Vec<u8> {
    frame(0, header.as_bytes(), b"")
}

/// The 21-byte fixed part of a binary header (code 105, JAVA, version 479, opaque 1, flag 0),
/// without its remarkLen and extLen, followed by `rest`.
fn binary(rest: &[u8]) -> Vec<u8> {
    let mut h = vec![0x00, 0x69, 0x00, 0x01, 0xdf, 0, 0, 0, 1, 0, 0, 0, 0];
    h.extend_from_slice(rest);
    frame(1, &h, b"")
}

fn corpus() -> Vec<(&'static str, Vec<u8>)> {
    let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    let deep_ext =
        format!("{{\"extFields\":{{\"a\":{}{}}}}}", "[".repeat(5_000), "]".repeat(5_000));
    vec![
        ("oversize prefix 0x00FFFFFD", vec![0x00, 0xFF, 0xFF, 0xFD]),
        ("oversize prefix 0x01000000", vec![0x01, 0x00, 0x00, 0x00, 0, 0, 0, 0]),
        ("negative prefix 0x80000000", vec![0x80, 0x00, 0x00, 0x00]),
        ("negative prefix -1", vec![0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0, 0]),
        ("plaintext HTTP", b"GET / HTTP/1.1\r\n\r\n".to_vec()),
        ("TLS ClientHello", vec![0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01]),
        ("total length 0", vec![0, 0, 0, 0]),
        ("total length 3", vec![0, 0, 0, 3, 0, 0, 0]),
        ("serialize type 2", frame(2, b"{}", b"")),
        ("serialize type 5 (TV-26)", frame(5, b"{}", b"  ")),
        ("serialize type 0xFF", frame(0xFF, b"{}", b"")),
        ("header length > total - 4", frame_with_len(0, 5, b"{}", b"  ")),
        ("header length 0xFFFFFF in a tiny frame", frame_with_len(0, 0xFF_FFFF, b"{}", b"")),
        ("empty JSON header", json("")),
        ("whitespace JSON header", json("   ")),
        ("null JSON header", json("null")),
        ("array JSON header", json("[]")),
        ("string JSON header", json("\"code\"")),
        ("number JSON header", json("105")),
        ("trailing garbage after JSON header", json(r#"{"code":105} x"#)),
        ("second object after JSON header", json(r#"{"code":105}{}"#)),
        ("unterminated JSON object", json(r#"{"code":105"#)),
        ("unterminated JSON string", json(r#"{"remark":"abc}"#)),
        ("bad escape", json(r#"{"remark":"\q"}"#)),
        ("invalid UTF-8 in a JSON string", frame(0, b"{\"remark\":\"\xff\xfe\"}", b"")),
        ("code out of int range", json(r#"{"code":2147483648}"#)),
        ("code not numeric", json(r#"{"code":"abc"}"#)),
        ("code is an object", json(r#"{"code":{}}"#)),
        ("extFields is an array", json(r#"{"extFields":[1,2]}"#)),
        ("extFields is a string", json(r#"{"extFields":"topic"}"#)),
        ("deeply nested JSON header", json(&deep)),
        ("deeply nested ext value", json(&deep_ext)),
        ("empty binary header", frame(1, b"", b"")),
        ("binary header cut in opaque", frame(1, &[0, 0x69, 0, 0x01, 0xdf, 0, 0], b"")),
        ("binary header without remarkLen", binary(&[])),
        ("binary header without extLen", binary(&[0, 0, 0, 0])),
        ("binary remark past the end", binary(&[0, 0, 0, 9, b'a', b'b', 0, 0, 0, 0])),
        ("binary remark length > header length", binary(&[0x7F, 0xFF, 0xFF, 0xFF])),
        ("binary negative remark length", binary(&[0xFF, 0xFF, 0xFF, 0xFE, 0, 0, 0, 0])),
        ("binary ext block past the end", binary(&[0, 0, 0, 0, 0, 0, 0, 20, 0, 1, b'k'])),
        (
            "binary ext key crosses the block",
            binary(&[0, 0, 0, 0, 0, 0, 0, 3, 0, 3, b'k', b'e', b'y']),
        ),
        (
            "binary ext value length past the end",
            binary(&[0, 0, 0, 0, 0, 0, 0, 9, 0, 1, b'k', 0, 0, 0, 9, b'v', b'v']),
        ),
        ("binary ext value length cut", binary(&[0, 0, 0, 0, 0, 0, 0, 5, 0, 1, b'k', 0, 0])),
        ("binary negative ext key length", binary(&[0, 0, 0, 0, 0, 0, 0, 4, 0xFF, 0xFF, 0, 0])),
        (
            "binary negative ext value length",
            binary(&[0, 0, 0, 0, 0, 0, 0, 7, 0, 1, b'k', 0xFF, 0xFF, 0xFF, 0xFF]),
        ),
        (
            "binary header length larger than header and body",
            frame_with_len(1, 30, &[0, 0x69, 0, 0x01, 0xdf, 0, 0, 0, 1, 0, 0, 0, 0], b"1234567"),
        ),
    ]
}

#[test]
fn every_malformed_frame_is_an_error() {
    for (name, bytes) in corpus() {
        let mut codec = RemotingCodec::new();
        let mut buf = BytesMut::from(&bytes[..]);
        match codec.decode(&mut buf) {
            Err(_) => {}
            Ok(Some(cmd)) => panic!("{name}: decoded {cmd:?}"),
            Ok(None) => panic!("{name}: waits for more bytes instead of failing"),
        }
    }
}

#[test]
fn a_malformed_frame_after_a_good_one_fails_only_the_second() {
    let mut bytes = json(r#"{"code":105,"opaque":1}"#);
    bytes.extend_from_slice(&json("null"));
    let mut codec = RemotingCodec::new();
    let mut buf = BytesMut::from(&bytes[..]);
    assert_eq!(codec.decode(&mut buf).unwrap().map(|c| c.code), Some(105));
    assert!(codec.decode(&mut buf).is_err());
}

#[test]
fn length_errors_are_reported_as_such() {
    let decode = |b: &[u8]| RemotingCodec::new().decode(&mut BytesMut::from(b));
    assert!(matches!(decode(&[0x00, 0xFF, 0xFF, 0xFD]), Err(FrameError::TooLong { .. })));
    assert!(matches!(decode(&[0x80, 0, 0, 0]), Err(FrameError::TooLong { len: 0x8000_0000, .. })));
    assert!(matches!(decode(&[0, 0, 0, 2]), Err(FrameError::TooShort(2))));
    assert!(matches!(decode(&frame(5, b"{}", b"")), Err(FrameError::UnknownSerializeType(5))));
    assert!(matches!(
        decode(&frame_with_len(0, 5, b"{}", b"  ")),
        Err(FrameError::BadHeaderLength { header_len: 5, frame_len: 8 })
    ));
    assert!(matches!(decode(&json("null")), Err(FrameError::Header(_))));
}
