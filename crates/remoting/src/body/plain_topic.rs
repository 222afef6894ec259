//! Reading a `topicConfigTable` entry of the plain shape every broker sends without serde (#25):
//! at a fleet's cold start of 1,000,000 topics the registration lane's prepare thread spent
//! ~40 % of its time in serde's decode of the bodies (string scans, field matching, the
//! lenient visitors), ~1 µs a topic. An entry is read here only when it is standard JSON of the
//! expected fields, each once, with plain values: `true`/`false`, integers that fit an `int`,
//! strings without escapes or control characters, `SINGLE_TAG`/`MULTI_TAG`, an attributes
//! object of such strings. Anything else gives `None`, and the caller decodes that entry with
//! the lenient decoder, whose result this one equals wherever it answers (tested against it).

use std::collections::BTreeMap;

use super::{TopicConfig, TopicFilterType};

/// A `TopicConfig` read from `bytes` (exactly one object, blanks around it allowed); `None`
/// when it is not of the plain shape (see the module docs).
pub fn read_topic_config(bytes: &[u8]) -> Option<TopicConfig> {
    let mut r = Reader { bytes, at: 0 };
    let mut tc = TopicConfig::default();
    let mut seen = 0u8;
    r.blank();
    r.eat(b'{')?;
    r.blank();
    if r.peek() == Some(b'}') {
        r.at += 1;
    } else {
        loop {
            r.blank();
            let key = r.plain_str()?;
            r.blank();
            r.eat(b':')?;
            r.blank();
            let field = match key {
                b"attributes" => {
                    tc.attributes = Some(r.string_map()?);
                    0
                }
                b"order" => {
                    tc.order = r.boolean()?;
                    1
                }
                b"perm" => {
                    tc.perm = r.int()?;
                    2
                }
                b"readQueueNums" => {
                    tc.read_queue_nums = r.int()?;
                    3
                }
                b"topicFilterType" => {
                    tc.topic_filter_type = match r.plain_str()? {
                        b"SINGLE_TAG" => TopicFilterType::SingleTag,
                        b"MULTI_TAG" => TopicFilterType::MultiTag,
                        _ => return None,
                    };
                    4
                }
                b"topicName" => {
                    tc.topic_name = Some(r.text()?);
                    5
                }
                b"topicSysFlag" => {
                    tc.topic_sys_flag = r.int()?;
                    6
                }
                b"writeQueueNums" => {
                    tc.write_queue_nums = r.int()?;
                    7
                }
                _ => return None,
            };
            if seen & (1 << field) != 0 {
                return None; // serde refuses a repeated field
            }
            seen |= 1 << field;
            r.blank();
            match r.next()? {
                b',' => continue,
                b'}' => break,
                _ => return None,
            }
        }
    }
    r.blank();
    (r.at == bytes.len()).then_some(tc)
}

/// The bytes of a string without escapes (between its quotes) as text, as the lenient decoder
/// reads them; `None` for a control character (strict JSON refuses it: the lenient decoder
/// decides) or bytes that are not UTF-8.
pub(crate) fn plain_text(bytes: &[u8]) -> Option<&str> {
    if bytes.iter().any(|&b| b < 0x20) {
        return None;
    }
    std::str::from_utf8(bytes).ok()
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn next(&mut self) -> Option<u8> {
        let b = self.peek()?;
        self.at += 1;
        Some(b)
    }

    fn eat(&mut self, want: u8) -> Option<()> {
        (self.next()? == want).then_some(())
    }

    /// JSON's four blanks.
    fn blank(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    fn literal(&mut self, word: &[u8]) -> bool {
        let found = self.bytes[self.at..].starts_with(word);
        if found {
            self.at += word.len();
        }
        found
    }

    /// A string's bytes between its quotes, without an escape (compared with a field's name or
    /// a filter type, or taken as [`plain_text`]).
    fn plain_str(&mut self) -> Option<&'a [u8]> {
        self.eat(b'"')?;
        let start = self.at;
        let len = memchr::memchr2(b'"', b'\\', &self.bytes[start..])?;
        if self.bytes[start + len] != b'"' {
            return None;
        }
        self.at = start + len + 1;
        Some(&self.bytes[start..start + len])
    }

    fn text(&mut self) -> Option<String> {
        plain_text(self.plain_str()?).map(str::to_owned)
    }

    fn boolean(&mut self) -> Option<bool> {
        if self.literal(b"true") {
            Some(true)
        } else if self.literal(b"false") {
            Some(false)
        } else {
            None
        }
    }

    /// `-?(0|[1-9][0-9]*)` within an `int`, not followed by a fraction or an exponent.
    fn int(&mut self) -> Option<i32> {
        let negative = self.peek() == Some(b'-');
        let start = self.at + usize::from(negative);
        let digits = self.bytes[start..].iter().take_while(|b| b.is_ascii_digit()).count();
        let end = start + digits;
        if digits == 0 || digits > 10 || (digits > 1 && self.bytes[start] == b'0') {
            return None;
        }
        if matches!(self.bytes.get(end), Some(b'.' | b'e' | b'E')) {
            return None;
        }
        let magnitude =
            self.bytes[start..end].iter().fold(0i64, |n, &d| n * 10 + i64::from(d - b'0'));
        self.at = end;
        i32::try_from(if negative { -magnitude } else { magnitude }).ok()
    }

    /// An object of plain strings; a repeated key keeps its last value (as a map's decode).
    fn string_map(&mut self) -> Option<BTreeMap<String, String>> {
        let mut map = BTreeMap::new();
        self.eat(b'{')?;
        self.blank();
        if self.peek() == Some(b'}') {
            self.at += 1;
            return Some(map);
        }
        loop {
            self.blank();
            let key = self.text()?;
            self.blank();
            self.eat(b':')?;
            self.blank();
            map.insert(key, self.text()?);
            self.blank();
            match self.next()? {
                b',' => continue,
                b'}' => return Some(map),
                _ => return None,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::body::from_json;
    use proptest::prelude::*;

    const JAVA_5: &str = r#"{"attributes":{},"order":false,"perm":6,"readQueueNums":8,"topicFilterType":"SINGLE_TAG","topicName":"TopicTest","topicSysFlag":0,"writeQueueNums":8}"#;
    const JAVA_4: &str = r#"{"order":true,"perm":4,"readQueueNums":16,"topicFilterType":"MULTI_TAG","topicName":"%RETRY%g","topicSysFlag":1,"writeQueueNums":4}"#;

    fn serde(bytes: &[u8]) -> Option<TopicConfig> {
        from_json(bytes).ok()
    }

    /// What brokers send is read here, and as the lenient decoder reads it.
    #[test]
    fn reads_what_brokers_send_as_serde_does() {
        for json in [
            JAVA_5,
            JAVA_4,
            "{}",
            " { \"topicName\" : \"t\" ,\n\t\"attributes\" : { \"+a\" : \"1\" , \"b\":\"\" } } ",
            r#"{"perm":-2147483648,"readQueueNums":2147483647,"writeQueueNums":-0}"#,
        ] {
            let fast = read_topic_config(json.as_bytes());
            assert!(fast.is_some(), "{json}");
            assert_eq!(fast, serde(json.as_bytes()), "{json}");
        }
    }

    /// Every shape outside the plain one is left to the lenient decoder, which reads these
    /// differently or refuses them.
    #[test]
    fn leaves_every_other_shape_to_the_lenient_decoder() {
        for json in [
            r#"{"perm":"6"}"#,
            r#"{"perm":6.0}"#,
            r#"{"perm":6e0}"#,
            r#"{"perm":06}"#,
            r#"{"perm":2147483648}"#,
            r#"{"perm":null}"#,
            r#"{"order":"true"}"#,
            r#"{"order":1}"#,
            r#"{"topicName":null}"#,
            r#"{"topicName":7}"#,
            r#"{"topicName":"a\"b"}"#,
            r#"{"topicName":"a\u0041"}"#,
            "{\"topicName\":\"a\tb\"}",
            r#"{"topicFilterType":"OTHER"}"#,
            r#"{"attributes":null}"#,
            r#"{"attributes":{"a":1}}"#,
            r#"{"perm":6,"perm":4}"#,
            r#"{"unknown":1}"#,
            r#"{'perm':6}"#,
            r#"{perm:6}"#,
            r#"{"perm":6,}"#,
            r#"{"perm":6} x"#,
            r#"{"perm":6"#,
            "",
        ] {
            assert_eq!(read_topic_config(json.as_bytes()), None, "{json}");
        }
    }

    /// A plain entry of any field order, blanks and values, possibly damaged by a byte.
    fn entry() -> impl Strategy<Value = Vec<u8>> {
        let blank = prop::sample::select(vec!["", " ", "\n", "\t ", "\r"]);
        let value = prop_oneof![
            Just("true".to_owned()),
            Just("false".to_owned()),
            any::<i32>().prop_map(|n| n.to_string()),
            any::<i64>().prop_map(|n| n.to_string()),
            "\"[a-zA-Z0-9%_\\-é]{0,12}\"",
            Just("\"SINGLE_TAG\"".to_owned()),
            Just("\"MULTI_TAG\"".to_owned()),
            Just("{}".to_owned()),
            Just(r#"{"k":"v","k":"w"}"#.to_owned()),
            Just("null".to_owned()),
        ];
        let key = prop::sample::select(vec![
            "attributes",
            "order",
            "perm",
            "readQueueNums",
            "topicFilterType",
            "topicName",
            "topicSysFlag",
            "writeQueueNums",
            "other",
        ]);
        let fields = prop::collection::vec((key, value, blank.clone()), 0..10);
        (fields, blank, any::<Option<(prop::sample::Index, u8)>>()).prop_map(
            |(fields, around, damage)| {
                let body: Vec<String> =
                    fields.iter().map(|(k, v, b)| format!("{b}\"{k}\"{b}:{b}{v}{b}")).collect();
                let mut bytes = format!("{around}{{{}}}{around}", body.join(",")).into_bytes();
                if let Some((at, byte)) = damage {
                    let i = at.index(bytes.len());
                    bytes[i] = byte;
                }
                bytes
            },
        )
    }

    proptest! {
        /// Wherever this reader answers, the lenient decoder gives the same `TopicConfig`.
        #[test]
        fn answers_only_as_the_lenient_decoder_does(bytes in entry()) {
            if let Some(fast) = read_topic_config(&bytes) {
                prop_assert_eq!(Some(fast), serde(&bytes));
            }
        }

        /// Any bytes at all: an answer or `None`, never a panic.
        #[test]
        fn any_bytes_never_panic_the_reader(bytes in prop::collection::vec(any::<u8>(), 0..64)) {
            if let Some(fast) = read_topic_config(&bytes) {
                prop_assert_eq!(Some(fast), serde(&bytes));
            }
        }
    }
}
