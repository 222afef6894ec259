//! The fast path of JSON header decoding: the plain form every client writes (an object of known
//! keys, integer numbers, strings without escapes or control characters, an `extFields` object of
//! strings) is read in one pass without serde. Anything else — escapes, numbers as strings,
//! floats, nested values, repeated keys, `null` ext values, fastjson-only syntax — returns `None`,
//! and the general decoder (`super::json::decode`) gives the answer. On the input it accepts, the
//! result equals the general decoder's (checked by a property test).

use crate::code::LanguageCode;
use crate::command::{ExtFields, RemotingCommand, SerializeType, MAX_EXT_FIELDS};

/// Decodes a plain JSON header, or `None` to leave it to the general decoder.
pub(super) fn decode_plain(bytes: &[u8]) -> Option<RemotingCommand> {
    // Validated once: every string below is cut at ASCII quotes, so at char boundaries.
    let text = std::str::from_utf8(bytes).ok()?;
    let mut p = Parser { text, bytes, at: 0 };
    let mut cmd = RemotingCommand { serialize_type: SerializeType::Json, ..Default::default() };
    let mut seen = 0u8;
    p.ws();
    p.eat(b'{')?;
    p.ws();
    if !p.eat_if(b'}') {
        loop {
            let key = p.string()?;
            p.ws();
            p.eat(b':')?;
            p.ws();
            let bit = match key {
                "code" => {
                    cmd.code = p.int()?;
                    1
                }
                "flag" => {
                    cmd.flag = p.int()?;
                    2
                }
                "opaque" => {
                    cmd.opaque = p.int()?;
                    4
                }
                "version" => {
                    cmd.version = p.int()?;
                    8
                }
                "language" => {
                    let name = p.string()?;
                    cmd.language = LanguageCode::from_name(name).unwrap_or(LanguageCode::Other);
                    16
                }
                "remark" => {
                    cmd.remark = p.opt_string()?.map(str::to_owned);
                    32
                }
                "extFields" => {
                    cmd.ext_fields = p.ext()?;
                    64
                }
                "serializeTypeCurrentRPC" => {
                    p.opt_string()?;
                    128
                }
                _ => return None,
            };
            if seen & bit != 0 {
                return None;
            }
            seen |= bit;
            p.ws();
            if p.eat_if(b',') {
                p.ws();
                continue;
            }
            p.eat(b'}')?;
            break;
        }
    }
    p.ws();
    (p.at == bytes.len()).then_some(cmd)
}

struct Parser<'a> {
    text: &'a str,
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Parser<'a> {
    fn ws(&mut self) {
        while matches!(self.bytes.get(self.at), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    fn eat_if(&mut self, b: u8) -> bool {
        let hit = self.bytes.get(self.at) == Some(&b);
        if hit {
            self.at += 1;
        }
        hit
    }

    fn eat(&mut self, b: u8) -> Option<()> {
        self.eat_if(b).then_some(())
    }

    /// A string without escapes or control characters.
    fn string(&mut self) -> Option<&'a str> {
        self.eat(b'"')?;
        let start = self.at;
        let rest = &self.bytes[start..];
        let len = memchr::memchr2(b'"', b'\\', rest)?;
        // No early exit, so it vectorises.
        let control = rest[..len].iter().fold(false, |seen, &b| seen | (b < 0x20));
        if rest[len] != b'"' || control {
            return None;
        }
        self.at = start + len + 1;
        self.text.get(start..start + len)
    }

    fn opt_string(&mut self) -> Option<Option<&'a str>> {
        if self.bytes[self.at..].starts_with(b"null") {
            self.at += 4;
            return Some(None);
        }
        self.string().map(Some)
    }

    /// An integer in `i32` range: `-`? digits, no leading zero, no fraction or exponent.
    fn int(&mut self) -> Option<i32> {
        let start = self.at;
        self.eat_if(b'-');
        let digits = self.bytes[self.at..].iter().take_while(|b| b.is_ascii_digit()).count();
        if digits == 0 || digits > 10 || (digits > 1 && self.bytes[self.at] == b'0') {
            return None;
        }
        self.at += digits;
        if matches!(self.bytes.get(self.at), Some(b'.' | b'e' | b'E')) {
            return None;
        }
        self.text.get(start..self.at)?.parse().ok()
    }

    /// `null` or an object of string values (no `null` values).
    fn ext(&mut self) -> Option<Option<ExtFields>> {
        if self.bytes[self.at..].starts_with(b"null") {
            self.at += 4;
            return Some(None);
        }
        self.eat(b'{')?;
        let mut entries = Vec::new();
        self.ws();
        if self.eat_if(b'}') {
            return Some(Some(ExtFields::new()));
        }
        loop {
            let key = self.string()?;
            self.ws();
            self.eat(b':')?;
            self.ws();
            let value = self.string()?;
            if entries.len() == MAX_EXT_FIELDS {
                return None; // the general decoder refuses it
            }
            entries.push((key.to_owned(), Some(value.to_owned())));
            self.ws();
            if self.eat_if(b',') {
                self.ws();
                continue;
            }
            self.eat(b'}')?;
            return ExtFields::from_wire(entries).ok().map(Some);
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::header::json;

    /// The general decoder, without the fast path.
    fn general(bytes: &[u8]) -> Option<RemotingCommand> {
        json::decode_general(bytes).ok()
    }

    #[test]
    fn client_headers_take_the_fast_path_with_the_general_result() {
        let inputs = [
            r#"{"code":105,"extFields":{"topic":"TopicTest"},"flag":0,"language":"JAVA","opaque":7,"serializeTypeCurrentRPC":"JSON","version":479}"#,
            r#"{"code":105,"language":"GO","version":317,"opaque":-12,"flag":0,"extFields":{"topic":"T","acceptStandardJsonOnly":"true"}}"#,
            r#" { "code" : 0 , "remark" : null , "extFields" : { } , "language" : "rust" } "#,
            r#"{"code":1,"remark":"héllo wörld","extFields":null,"language":"nope"}"#,
            r#"{}"#,
            r#"{"code":-2147483648,"opaque":2147483647,"extFields":{"k":"a","k":"b","j":""}}"#,
        ];
        for input in inputs {
            let fast = decode_plain(input.as_bytes()).unwrap_or_else(|| panic!("fast: {input}"));
            assert_eq!(Some(fast), general(input.as_bytes()), "{input}");
        }
    }

    #[test]
    fn unusual_headers_are_left_to_the_general_decoder() {
        let inputs = [
            r#"{"code":"105"}"#,
            r#"{"code":1.0}"#,
            r#"{"code":2147483648}"#,
            r#"{"code":01}"#,
            r#"{"code":1,"code":2}"#,
            r#"{"remark":"a\"b"}"#,
            r#"{"extFields":{"a":1}}"#,
            r#"{"extFields":{"a":null}}"#,
            r#"{"language":12}"#,
            r#"{"other":1}"#,
            r#"{code:1}"#,
            r#"{"code":1,}"#,
            r#"{"code":1} x"#,
            "{\"remark\":\"tab\there\"}",
            r#"[]"#,
            "",
        ];
        for input in inputs {
            assert_eq!(decode_plain(input.as_bytes()), None, "{input}");
        }
    }

    fn arb_text() -> impl Strategy<Value = String> {
        prop_oneof!["[a-zA-Z0-9_%|-]{0,12}", any::<String>(), Just("null".to_owned()),]
    }

    proptest! {
        /// Whatever the fast path accepts, it reads exactly like the general decoder.
        #[test]
        fn fast_path_agrees_with_the_general_decoder(
            code in any::<i32>(), opaque in any::<i32>(), flag in 0..4i32, version in any::<i32>(),
            remark in proptest::option::of(arb_text()),
            ext in proptest::option::of(proptest::collection::vec((arb_text(), arb_text()), 0..4)),
            cut in any::<prop::sample::Index>(), flip in any::<u8>(),
        ) {
            let cmd = RemotingCommand {
                code, opaque, flag, version, remark,
                ext_fields: ext.map(|e| e.into_iter().collect()),
                ..Default::default()
            };
            let bytes = json::encode_to_vec(&cmd);
            if let Some(fast) = decode_plain(&bytes) {
                prop_assert_eq!(Some(fast), general(&bytes));
            }
            // Damaged copies: the fast path either declines or agrees.
            let mut damaged = bytes.clone();
            let i = cut.index(damaged.len());
            damaged[i] = flip;
            if let Some(fast) = decode_plain(&damaged) {
                prop_assert_eq!(Some(fast), general(&damaged));
            }
            let truncated = &bytes[..i];
            if let Some(fast) = decode_plain(truncated) {
                prop_assert_eq!(Some(fast), general(truncated));
            }
        }
    }
}
