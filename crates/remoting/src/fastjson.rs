//! fastjson 1.2.83 text quirks: string escaping in its two modes (default, and BrowserCompatible
//! used for "standard" route JSON), and the lenient reader that accepts what fastjson accepts
//! (unquoted keys, single quotes, trailing commas) by rewriting it to strict JSON for serde_json.

use std::borrow::Cow;

use bytes::BufMut;
use serde::de::DeserializeOwned;

const HEX: &[u8; 16] = b"0123456789ABCDEF";

fn push_u_escape<B: BufMut + ?Sized>(out: &mut B, unit: u16) {
    let mut esc = *b"\\u0000";
    for (i, shift) in [12, 8, 4, 0].into_iter().enumerate() {
        esc[2 + i] = HEX[((unit >> shift) & 0xF) as usize];
    }
    out.put_slice(&esc);
}

fn short_escape(c: char) -> Option<&'static [u8]> {
    Some(match c {
        '"' => b"\\\"",
        '\\' => b"\\\\",
        '\u{8}' => b"\\b",
        '\u{c}' => b"\\f",
        '\n' => b"\\n",
        '\r' => b"\\r",
        '\t' => b"\\t",
        _ => return None,
    })
}

/// Appends the contents of a JSON string (without quotes) as fastjson's default writer does:
/// short escapes for `" \ \b \f \n \r \t`, `\uXXXX` (uppercase) for other chars below 0x20, for
/// 0x7F–0x9F and for U+2028/U+2029; `/` and other non-ASCII text are written raw (UTF-8).
/// Writes into any `BufMut` (`Vec<u8>`, `BytesMut`).
pub fn escape_legacy_into<B: BufMut + ?Sized>(out: &mut B, s: &str) {
    // A byte scan: every char that needs escaping has a unique UTF-8 prefix (ASCII, C2 80–9F for
    // the C1 controls, E2 80 A8/A9 for U+2028/U+2029).
    let bytes = s.as_bytes();
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        let (unit, width) = match b {
            0x00..=0x1f | b'"' | b'\\' | 0x7f => (u16::from(b), 1),
            0xc2 if matches!(bytes.get(i + 1), Some(0x80..=0x9f)) => (u16::from(bytes[i + 1]), 2),
            0xe2 if bytes.get(i + 1) == Some(&0x80)
                && matches!(bytes.get(i + 2), Some(0xa8 | 0xa9)) =>
            {
                (0x2000 | u16::from(bytes[i + 2] - 0x80), 3)
            }
            _ => {
                i += 1;
                continue;
            }
        };
        out.put_slice(&bytes[start..i]);
        match char::from_u32(u32::from(unit)).and_then(short_escape) {
            Some(e) => out.put_slice(e),
            None => push_u_escape(out, unit),
        }
        i += width;
        start = i;
    }
    out.put_slice(&bytes[start..]);
}

/// Appends the contents of a JSON string (without quotes) as fastjson's BrowserCompatible writer
/// does: short escapes for `" \ / \b \f \n \r \t`, and `\uXXXX` (uppercase, UTF-16 code units) for
/// every other char outside 0x20–0x7E.
/// Writes into any `BufMut` (`Vec<u8>`, `BytesMut`).
pub fn escape_standard_into<B: BufMut + ?Sized>(out: &mut B, s: &str) {
    for c in s.chars() {
        if c == '/' {
            out.put_slice(b"\\/");
        } else if let Some(e) = short_escape(c) {
            out.put_slice(e);
        } else if ('\u{20}'..='\u{7e}').contains(&c) {
            out.put_u8(c as u8);
        } else {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                push_u_escape(out, *unit);
            }
        }
    }
}

/// Why lenient JSON input was rejected.
#[derive(Debug, thiserror::Error)]
pub enum LenientJsonError {
    /// The input is empty or only whitespace.
    #[error("empty JSON input")]
    Empty,
    /// A string literal has no closing quote.
    #[error("unterminated string starting at byte {0}")]
    UnterminatedString(usize),
    /// The top-level value is not an object where one is required.
    #[error("top-level JSON value is not an object")]
    NotAnObject,
    /// Strict JSON parsing of the normalized text failed (syntax, trailing garbage, type mismatch).
    #[error("invalid JSON: {0}")]
    Json(#[from] serde_json::Error),
}

#[derive(Clone, Copy)]
enum Ctx {
    Object { expect_key: bool },
    Array,
}

/// Lazily built rewrite of the input: untouched spans are copied only once an edit happens.
struct Rewrite<'a> {
    input: &'a [u8],
    out: Option<Vec<u8>>,
    copied: usize,
}

impl<'a> Rewrite<'a> {
    /// Replaces `input[start..end]` by `with`. Edits must come in increasing, non-overlapping order.
    fn replace(&mut self, start: usize, end: usize, with: &[u8]) {
        let out = self.out.get_or_insert_with(|| Vec::with_capacity(self.input.len() + 16));
        out.extend_from_slice(&self.input[self.copied..start]);
        out.extend_from_slice(with);
        self.copied = end;
    }

    fn finish(self) -> Cow<'a, [u8]> {
        match self.out {
            None => Cow::Borrowed(self.input),
            Some(mut out) => {
                out.extend_from_slice(&self.input[self.copied..]);
                Cow::Owned(out)
            }
        }
    }
}

fn is_delimiter(b: u8) -> bool {
    matches!(
        b,
        b' ' | b'\t'
            | b'\n'
            | b'\r'
            | 0x0c
            | 0x08
            | b':'
            | b','
            | b'{'
            | b'}'
            | b'['
            | b']'
            | b'"'
            | b'\''
    )
}

fn hex_val(b: u8) -> Option<u8> {
    (b as char).to_digit(16).map(|d| d as u8)
}

/// Scans a string literal opening at `start` with `quote`; returns the index just past the closing
/// quote and, when the literal is not already strict JSON, its strict double-quoted rewrite.
fn scan_string(
    input: &[u8],
    start: usize,
    quote: u8,
) -> Result<(usize, Option<Vec<u8>>), LenientJsonError> {
    let mut fixed: Option<Vec<u8>> = (quote == b'\'').then(|| vec![b'"']);
    let mut seg = start + 1; // start of the span not yet copied into `fixed`
    let mut i = start + 1;
    // Ensures `fixed` exists and holds everything before `i`.
    fn flush(
        fixed: &mut Option<Vec<u8>>,
        input: &[u8],
        start: usize,
        seg: usize,
        i: usize,
    ) -> Vec<u8> {
        let mut f = fixed.take().unwrap_or_else(|| {
            let mut v = Vec::with_capacity(i - start + 8);
            v.push(b'"');
            v.extend_from_slice(&input[start + 1..seg]);
            v
        });
        f.extend_from_slice(&input[seg..i]);
        f
    }
    while i < input.len() {
        let b = input[i];
        if b == quote {
            if let Some(mut f) = fixed.take() {
                f.extend_from_slice(&input[seg..i]);
                f.push(b'"');
                return Ok((i + 1, Some(f)));
            }
            return Ok((i + 1, None));
        }
        match b {
            b'\\' => {
                let next =
                    input.get(i + 1).copied().ok_or(LenientJsonError::UnterminatedString(start))?;
                let x = (next == b'x')
                    .then(|| Some((hex_val(*input.get(i + 2)?)?, hex_val(*input.get(i + 3)?)?)))
                    .flatten();
                if next == b'\'' {
                    let mut f = flush(&mut fixed, input, start, seg, i);
                    f.push(b'\'');
                    fixed = Some(f);
                    i += 2;
                    seg = i;
                } else if let Some((hi, lo)) = x {
                    // fastjson's `\xHH` escape.
                    let mut f = flush(&mut fixed, input, start, seg, i);
                    f.extend_from_slice(b"\\u00");
                    f.push(HEX[hi as usize]);
                    f.push(HEX[lo as usize]);
                    fixed = Some(f);
                    i += 4;
                    seg = i;
                } else {
                    i += 2;
                }
            }
            b'"' => {
                // Only reachable inside a single-quoted string.
                let mut f = flush(&mut fixed, input, start, seg, i);
                f.extend_from_slice(b"\\\"");
                fixed = Some(f);
                i += 1;
                seg = i;
            }
            0x00..=0x1f => {
                let mut f = flush(&mut fixed, input, start, seg, i);
                push_u_escape(&mut f, u16::from(b));
                fixed = Some(f);
                i += 1;
                seg = i;
            }
            _ => i += 1,
        }
    }
    Err(LenientJsonError::UnterminatedString(start))
}

/// Rewrites fastjson-accepted JSON into strict JSON: unquoted keys (`{0:"a"}`, `{key:1}`) are
/// quoted, single-quoted strings become double-quoted, trailing commas before `}`/`]` are
/// dropped, `\'` and `\xHH` escapes and raw control characters inside strings are made strict.
/// Returns the input unchanged (borrowed) when it needs no rewrite. Anything else that is not
/// JSON is passed through for serde_json to reject.
pub fn normalize(input: &[u8]) -> Result<Cow<'_, [u8]>, LenientJsonError> {
    let mut rw = Rewrite { input, out: None, copied: 0 };
    let mut stack: Vec<Ctx> = Vec::new();
    let mut pending_comma: Option<usize> = None;
    let mut i = 0;
    while i < input.len() {
        let b = input[i];
        match b {
            b' ' | b'\t' | b'\n' | b'\r' => {
                i += 1;
                continue;
            }
            0x0c | 0x08 => {
                // fastjson skips form feed and backspace as whitespace; serde_json does not.
                rw.replace(i, i + 1, b" ");
                i += 1;
                continue;
            }
            b'}' | b']' => {
                if let Some(p) = pending_comma.take() {
                    rw.replace(p, p + 1, b"");
                }
                stack.pop();
                i += 1;
                continue;
            }
            _ => {}
        }
        pending_comma = None;
        match b {
            b'{' => {
                stack.push(Ctx::Object { expect_key: true });
                i += 1;
            }
            b'[' => {
                stack.push(Ctx::Array);
                i += 1;
            }
            b',' => {
                pending_comma = Some(i);
                if let Some(Ctx::Object { expect_key }) = stack.last_mut() {
                    *expect_key = true;
                }
                i += 1;
            }
            b':' => {
                if let Some(Ctx::Object { expect_key }) = stack.last_mut() {
                    *expect_key = false;
                }
                i += 1;
            }
            b'"' | b'\'' => {
                let (end, fixed) = scan_string(input, i, b)?;
                if let Some(f) = fixed {
                    rw.replace(i, end, &f);
                }
                if let Some(Ctx::Object { expect_key }) = stack.last_mut() {
                    *expect_key = false;
                }
                i = end;
            }
            _ => {
                let start = i;
                while i < input.len() && !is_delimiter(input[i]) {
                    i += 1;
                }
                if let Some(Ctx::Object { expect_key }) = stack.last_mut() {
                    if *expect_key {
                        // An unquoted key: delimiters exclude quotes, so it needs no escaping
                        // except for a backslash.
                        let mut quoted = Vec::with_capacity(i - start + 2);
                        quoted.push(b'"');
                        for &c in &input[start..i] {
                            if c == b'\\' {
                                quoted.push(b'\\');
                            }
                            quoted.push(c);
                        }
                        quoted.push(b'"');
                        rw.replace(start, i, &quoted);
                        *expect_key = false;
                    }
                }
                if i == start {
                    // A lone byte that starts no token (e.g. a stray control byte): let serde reject it.
                    i += 1;
                }
            }
        }
    }
    Ok(rw.finish())
}

fn non_empty(input: &[u8]) -> Result<(), LenientJsonError> {
    if input.iter().all(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0c | 0x08)) {
        return Err(LenientJsonError::Empty);
    }
    Ok(())
}

/// Parses fastjson-lenient JSON (see [`normalize`]) into a `serde_json::Value`. Integers keep full
/// `i64`/`u64` precision. Errors on empty input, syntax errors and trailing non-whitespace.
/// Java: `JSON.parse` (fastjson 1.2.83)
pub fn parse_lenient(input: &[u8]) -> Result<serde_json::Value, LenientJsonError> {
    from_slice_lenient(input)
}

/// Like [`parse_lenient`] but requires a top-level object.
pub fn parse_lenient_object(
    input: &[u8],
) -> Result<serde_json::Map<String, serde_json::Value>, LenientJsonError> {
    match parse_lenient(input)? {
        serde_json::Value::Object(map) => Ok(map),
        _ => Err(LenientJsonError::NotAnObject),
    }
}

/// Deserializes fastjson-lenient JSON (see [`normalize`]) into `T`. Errors on empty input, syntax
/// errors, trailing non-whitespace and whatever `T`'s `Deserialize` rejects (a struct rejects a
/// top-level non-object). Java: `RemotingSerializable.decode` (fastjson `JSON.parseObject`)
pub fn from_slice_lenient<T: DeserializeOwned>(input: &[u8]) -> Result<T, LenientJsonError> {
    non_empty(input)?;
    // Strict JSON (what Java and every client send) parses in one pass. `normalize` never
    // rewrites strict JSON, so only input that fails strictly needs the rewriting pass.
    let strict_err = match serde_json::from_slice(input) {
        Ok(value) => return Ok(value),
        Err(e) => e,
    };
    match normalize(input)? {
        Cow::Borrowed(_) => Err(strict_err.into()),
        Cow::Owned(rewritten) => Ok(serde_json::from_slice(&rewritten)?),
    }
}

#[cfg(test)]
mod lenient_tests {
    use super::*;
    use serde_json::json;

    fn norm(s: &str) -> String {
        String::from_utf8(normalize(s.as_bytes()).unwrap().into_owned()).unwrap()
    }

    #[test]
    fn strict_input_is_borrowed_unchanged() {
        let s = br#"{"a":[1,2,{"b":"c\"d"}],"e":null}"#;
        assert!(matches!(normalize(s).unwrap(), Cow::Borrowed(_)));
    }

    #[test]
    fn unquoted_numeric_and_identifier_keys_are_quoted() {
        assert_eq!(norm(r#"{0:"a",1:"b"}"#), r#"{"0":"a","1":"b"}"#);
        assert_eq!(norm(r#"{ key : 1, $ref2:{-1:0}}"#), r#"{ "key" : 1, "$ref2":{"-1":0}}"#);
        assert_eq!(
            parse_lenient(br#"{"brokerAddrs":{0:"192.168.0.47:10911",1:"x"}}"#).unwrap(),
            json!({"brokerAddrs": {"0": "192.168.0.47:10911", "1": "x"}})
        );
    }

    #[test]
    fn single_quotes_become_double_quotes() {
        assert_eq!(norm(r#"{'a':'it\'s "q"'}"#), r#"{"a":"it's \"q\""}"#);
        assert_eq!(parse_lenient(br#"['x\\y']"#).unwrap(), json!(["x\\y"]));
    }

    #[test]
    fn trailing_commas_are_dropped() {
        assert_eq!(parse_lenient(b"{\"code\":105,}").unwrap(), json!({"code": 105}));
        assert_eq!(parse_lenient(b"[1,2 , \n]").unwrap(), json!([1, 2]));
    }

    #[test]
    fn raw_control_chars_and_hex_escapes_in_strings_are_accepted() {
        assert_eq!(parse_lenient(b"{\"a\":\"x\ny\\x41\"}").unwrap(), json!({"a": "x\nyA"}));
    }

    #[test]
    fn integers_keep_full_precision() {
        let v = parse_lenient(
            br#"{"t":9223372036854775807,"n":-9223372036854775808,"u":18446744073709551615}"#,
        )
        .unwrap();
        assert_eq!(v["t"].as_i64(), Some(i64::MAX));
        assert_eq!(v["n"].as_i64(), Some(i64::MIN));
        assert_eq!(v["u"].as_u64(), Some(u64::MAX));
    }

    #[test]
    fn trailing_garbage_empty_and_unterminated_input_are_rejected() {
        assert!(parse_lenient(b"{\"code\":105} x").is_err());
        assert!(parse_lenient(b"{\"code\":105}{}").is_err());
        assert!(parse_lenient(b"{\"code\":105} \n").is_ok());
        assert!(matches!(parse_lenient(b""), Err(LenientJsonError::Empty)));
        assert!(matches!(parse_lenient(b"  \n"), Err(LenientJsonError::Empty)));
        assert!(matches!(
            parse_lenient(b"{\"a\":\"x"),
            Err(LenientJsonError::UnterminatedString(5))
        ));
        assert!(parse_lenient(b"{\"a\":1").is_err());
    }

    #[test]
    fn object_is_required_where_asked() {
        assert!(matches!(parse_lenient_object(b"[1]"), Err(LenientJsonError::NotAnObject)));
        assert!(matches!(parse_lenient_object(b"null"), Err(LenientJsonError::NotAnObject)));
        assert_eq!(parse_lenient_object(b"{a:1}").unwrap().get("a"), Some(&json!(1)));
    }

    #[test]
    fn typed_deserialization_is_lenient() {
        #[derive(serde::Deserialize, Debug, PartialEq)]
        struct T {
            a: i64,
            m: std::collections::BTreeMap<i64, String>,
        }
        let t: T = from_slice_lenient(b"{m:{0:'x',10:\"y\",},'a':12345678901,}").unwrap();
        assert_eq!(t.a, 12_345_678_901);
        assert_eq!(t.m.get(&10).map(String::as_str), Some("y"));
        assert!(from_slice_lenient::<T>(b"[]").is_err());
    }
}

#[cfg(test)]
mod escape_tests {
    use super::*;

    fn legacy(s: &str) -> String {
        let mut v = Vec::new();
        escape_legacy_into(&mut v, s);
        String::from_utf8(v).unwrap()
    }

    fn standard(s: &str) -> String {
        let mut v = Vec::new();
        escape_standard_into(&mut v, s);
        String::from_utf8(v).unwrap()
    }

    #[test]
    fn legacy_escapes_controls_quotes_and_c1_but_not_slash_or_text() {
        assert_eq!(legacy("a\"b\\c/d\n\t\u{1}"), "a\\\"b\\\\c/d\\n\\t\\u0001");
        assert_eq!(legacy("\u{7f}\u{9f}\u{a0}é\u{2028}"), "\\u007F\\u009F\u{a0}é\\u2028");
        assert_eq!(legacy("No topic\nSee"), "No topic\\nSee");
    }

    #[test]
    fn standard_escapes_non_ascii_as_utf16_units_and_slash() {
        assert_eq!(standard("a/b\"é\u{1F600}\u{1f}"), "a\\/b\\\"\\u00E9\\uD83D\\uDE00\\u001F");
        assert_eq!(standard("192.168.0.47:10911"), "192.168.0.47:10911");
    }
}
