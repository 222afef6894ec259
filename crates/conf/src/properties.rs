//! Java `.properties` text: a reader with `java.util.Properties#load` semantics and two writers,
//! the plain `key=value` form RocketMQ uses for its config files and the escaped form of
//! `Properties#store`.
//!
//! Hand-written: the `java-properties` crate decodes as windows-1252 rather than ISO-8859-1,
//! trims continuation lines with Unicode (not Java) whitespace and panics on some inputs.

use std::borrow::Cow;

use thiserror::Error;

/// Why a properties text could not be read. Java fails only on a bad `\uXXXX` escape.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum PropertiesError {
    /// `\u` not followed by four hex digits (Java: `Malformed \uxxxx encoding.`).
    #[error("Malformed \\uxxxx encoding. (line {line})")]
    MalformedUnicodeEscape {
        /// 1-based line where the logical line holding the escape starts.
        line: usize,
    },
}

/// Decodes raw properties bytes: valid UTF-8 is taken as UTF-8, anything else byte-per-char as
/// ISO-8859-1 (Java's `Properties#load(InputStream)` always uses ISO-8859-1, which garbles
/// non-ASCII UTF-8; ASCII text, the norm for config files, reads the same either way).
/// A leading UTF-8 byte-order mark is dropped (Java would glue it to the first key).
pub fn decode(bytes: &[u8]) -> Cow<'_, str> {
    match std::str::from_utf8(bytes) {
        Ok(s) => Cow::Borrowed(s.strip_prefix('\u{feff}').unwrap_or(s)),
        Err(_) => Cow::Owned(bytes.iter().map(|&b| char::from(b)).collect()),
    }
}

/// Parses raw properties bytes (see [`decode`] for the charset). Entries come in file order;
/// a repeated key appears several times and the last one wins when applied.
/// Java: `Properties#load(InputStream)`
pub fn parse_bytes(bytes: &[u8]) -> Result<Vec<(String, String)>, PropertiesError> {
    parse(&decode(bytes))
}

/// Parses properties text: `key=value`, `key: value`, `key value`; `#`/`!` comment lines;
/// backslash escapes (`\t \n \r \f \uXXXX`, any other `\c` is `c`); a line ending in an odd
/// number of backslashes continues on the next one with its leading whitespace dropped.
/// Entries come in file order, duplicates included. An unpaired UTF-16 surrogate from a
/// `\uXXXX` escape becomes U+FFFD (a Rust string cannot hold it).
/// Java: `Properties#load(Reader)`
pub fn parse(text: &str) -> Result<Vec<(String, String)>, PropertiesError> {
    let mut reader = LineReader::new(text);
    let mut out = Vec::new();
    while let Some((line_no, line)) = reader.next_line() {
        let (key, value) = split_key_value(&line);
        let key = unescape(key, line_no)?;
        let value = unescape(value, line_no)?;
        out.push((key, value));
    }
    Ok(out)
}

/// Writes `key=value\n` lines with no escaping at all, in the order given.
/// Java: `MixAll#properties2String` (the config file and GET_NAMESRV_CONFIG body format)
pub fn to_plain_text<'a, I>(entries: I) -> String
where
    I: IntoIterator<Item = (&'a str, &'a str)>,
{
    let mut out = String::new();
    for (key, value) in entries {
        out.push_str(key);
        out.push('=');
        out.push_str(value);
        out.push('\n');
    }
    out
}

/// Writes `key=value\n` lines escaped so that [`parse`] (and Java) read back exactly the same
/// entries: `\ = : # !`, tab, newline, return and form feed are backslash-escaped, spaces in keys
/// and a leading space in values too, and every char outside 0x20–0x7E becomes `\uXXXX`. No
/// date comment is written. Java: `Properties#store(OutputStream, null)` minus the header
pub fn to_escaped_text<'a, I>(entries: I) -> String
where
    I: IntoIterator<Item = (&'a str, &'a str)>,
{
    write_escaped(entries, Part::StoredValue)
}

/// Writes `key=value\n` lines that [`parse`] and Java's `Properties#load` read back as exactly
/// the entries given, whatever they hold: [`to_escaped_text`], except that `= : # !` inside a
/// value are left as they are (a value never starts a line, and only the first separator
/// splits one), so `namesrvAddr=a:9876;b:9876` stays readable. A value can never start a new
/// line or a new key: line breaks and every other control character are escaped. What the
/// servers persist their configuration as (Java writes `MixAll#properties2String`'s unescaped
/// text there, which lets a value with an escaped newline smuggle a key into the file).
pub fn to_store_text<'a, I>(entries: I) -> String
where
    I: IntoIterator<Item = (&'a str, &'a str)>,
{
    write_escaped(entries, Part::ReadableValue)
}

/// How a value is escaped by [`write_escaped`] (keys always escape everything Java's do).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Part {
    Key,
    /// Java's `Properties#store`: separators and comment marks escaped too.
    StoredValue,
    /// Separators and comment marks left as they are.
    ReadableValue,
}

fn write_escaped<'a, I>(entries: I, value_part: Part) -> String
where
    I: IntoIterator<Item = (&'a str, &'a str)>,
{
    let mut out = String::new();
    for (key, value) in entries {
        escape_into(&mut out, key, Part::Key);
        out.push('=');
        escape_into(&mut out, value, value_part);
        out.push('\n');
    }
    out
}

/// Java: `Properties#saveConvert(theString, escapeSpace, escUnicode=true)`
fn escape_into(out: &mut String, s: &str, part: Part) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    for (i, c) in s.chars().enumerate() {
        match c {
            '\\' => out.push_str("\\\\"),
            ' ' if i == 0 || part == Part::Key => out.push_str("\\ "),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\u{c}' => out.push_str("\\f"),
            '=' | ':' | '#' | '!' if part != Part::ReadableValue => {
                out.push('\\');
                out.push(c);
            }
            '\u{20}'..='\u{7e}' => out.push(c),
            _ => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    out.push_str("\\u");
                    for shift in [12, 8, 4, 0] {
                        out.push(char::from(HEX[usize::from((*unit >> shift) & 0xF)]));
                    }
                }
            }
        }
    }
}

fn is_blank(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\u{c}')
}

/// Splits a logical line into raw (still escaped) key and value.
/// Java: the key/value scan in `Properties#load0`
fn split_key_value(line: &[char]) -> (&[char], &[char]) {
    let mut key_len = 0;
    let mut value_start = line.len();
    let mut has_sep = false;
    let mut preceding_backslash = false;
    while key_len < line.len() {
        let c = line[key_len];
        if (c == '=' || c == ':') && !preceding_backslash {
            value_start = key_len + 1;
            has_sep = true;
            break;
        } else if is_blank(c) && !preceding_backslash {
            value_start = key_len + 1;
            break;
        }
        preceding_backslash = c == '\\' && !preceding_backslash;
        key_len += 1;
    }
    while value_start < line.len() {
        let c = line[value_start];
        if !is_blank(c) {
            if !has_sep && (c == '=' || c == ':') {
                has_sep = true;
            } else {
                break;
            }
        }
        value_start += 1;
    }
    (&line[..key_len], &line[value_start..])
}

/// Resolves backslash escapes. Java: `Properties#loadConvert`
fn unescape(raw: &[char], line: usize) -> Result<String, PropertiesError> {
    let mut units: Vec<u16> = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        let c = raw[i];
        i += 1;
        if c != '\\' {
            let mut buf = [0u16; 2];
            units.extend_from_slice(c.encode_utf16(&mut buf));
            continue;
        }
        let Some(&e) = raw.get(i) else {
            // A lone trailing backslash cannot survive the line reader; keep nothing, like Java.
            break;
        };
        i += 1;
        let mapped = match e {
            'u' => {
                let digits =
                    raw.get(i..i + 4).ok_or(PropertiesError::MalformedUnicodeEscape { line })?;
                let mut unit: u16 = 0;
                for d in digits {
                    let v =
                        d.to_digit(16).ok_or(PropertiesError::MalformedUnicodeEscape { line })?;
                    // `v` < 16, so the cast is lossless.
                    unit = (unit << 4) | v as u16;
                }
                i += 4;
                units.push(unit);
                continue;
            }
            't' => '\t',
            'r' => '\r',
            'n' => '\n',
            'f' => '\u{c}',
            other => other,
        };
        let mut buf = [0u16; 2];
        units.extend_from_slice(mapped.encode_utf16(&mut buf));
    }
    Ok(String::from_utf16_lossy(&units))
}

/// Yields logical lines: comments and blank lines skipped, continuations joined.
/// Java: `Properties.LineReader#readLine`
struct LineReader<'a> {
    chars: std::iter::Peekable<std::str::Chars<'a>>,
    /// 1-based number of the physical line the next char belongs to.
    line: usize,
}

impl<'a> LineReader<'a> {
    fn new(text: &'a str) -> Self {
        Self { chars: text.chars().peekable(), line: 1 }
    }

    /// Consumes a line terminator whose first char `c` was just read (`\r\n` counts once).
    fn end_of_physical_line(&mut self, c: char) {
        if c == '\r' && self.chars.peek() == Some(&'\n') {
            self.chars.next();
        }
        self.line += 1;
    }

    fn next_line(&mut self) -> Option<(usize, Vec<char>)> {
        let mut buf: Vec<char> = Vec::new();
        let mut skip_white_space = true;
        let mut is_comment = false;
        let mut is_new_line = true;
        let mut appended_line_begin = false;
        let mut preceding_backslash = false;
        let mut start_line = self.line;
        loop {
            let Some(c) = self.chars.next() else {
                if is_comment || buf.is_empty() {
                    return None;
                }
                if preceding_backslash {
                    buf.pop();
                }
                return Some((start_line, buf));
            };
            if skip_white_space {
                if is_blank(c) {
                    continue;
                }
                if !appended_line_begin && (c == '\r' || c == '\n') {
                    self.end_of_physical_line(c);
                    continue;
                }
                skip_white_space = false;
                appended_line_begin = false;
            }
            if is_new_line {
                is_new_line = false;
                start_line = self.line;
                if c == '#' || c == '!' {
                    is_comment = true;
                    continue;
                }
            }
            if c != '\n' && c != '\r' {
                if !is_comment {
                    buf.push(c);
                    preceding_backslash = c == '\\' && !preceding_backslash;
                }
                continue;
            }
            self.end_of_physical_line(c);
            if is_comment || buf.is_empty() {
                is_comment = false;
                is_new_line = true;
                skip_white_space = true;
                preceding_backslash = false;
                buf.clear();
                continue;
            }
            if preceding_backslash {
                buf.pop();
                skip_white_space = true;
                appended_line_begin = true;
                preceding_backslash = false;
            } else {
                return Some((start_line, buf));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(text: &str) -> Vec<(String, String)> {
        parse(text).expect("valid properties")
    }

    fn kv(k: &str, v: &str) -> (String, String) {
        (k.to_owned(), v.to_owned())
    }

    #[test]
    fn three_separator_forms_are_accepted() {
        assert_eq!(
            pairs("a=1\nb: 2\nc 3\nd\t=\t4\ne :5\nf   6\n"),
            vec![
                kv("a", "1"),
                kv("b", "2"),
                kv("c", "3"),
                kv("d", "4"),
                kv("e", "5"),
                kv("f", "6")
            ]
        );
    }

    #[test]
    fn comments_and_blank_lines_are_skipped() {
        assert_eq!(pairs("# c1\n   ! c2\n\n  \t\na=1\n#b=2\n"), vec![kv("a", "1")]);
    }

    #[test]
    fn value_keeps_trailing_whitespace_and_inner_separators() {
        assert_eq!(pairs("a = x = y: z  \n"), vec![kv("a", "x = y: z  ")]);
    }

    #[test]
    fn key_without_value_has_empty_value() {
        assert_eq!(pairs("lonely\nempty=\n"), vec![kv("lonely", ""), kv("empty", "")]);
    }

    #[test]
    fn continuation_joins_lines_and_drops_leading_whitespace() {
        assert_eq!(
            pairs("a=one, \\\n      two\\\r\n\tthree\nb=2"),
            vec![kv("a", "one, twothree"), kv("b", "2")]
        );
    }

    #[test]
    fn even_backslashes_do_not_continue() {
        assert_eq!(pairs("a=x\\\\\nb=y\n"), vec![kv("a", "x\\"), kv("b", "y")]);
    }

    #[test]
    fn comment_marker_after_continuation_is_data() {
        assert_eq!(pairs("a=x\\\n#y\n"), vec![kv("a", "x#y")]);
    }

    #[test]
    fn backslash_at_end_of_comment_does_not_continue() {
        assert_eq!(pairs("# note \\\na=1\n"), vec![kv("a", "1")]);
    }

    #[test]
    fn trailing_backslash_at_eof_is_dropped() {
        assert_eq!(pairs("a=x\\"), vec![kv("a", "x")]);
    }

    #[test]
    fn escapes_are_resolved_in_keys_and_values() {
        assert_eq!(
            pairs("my\\ key\\=x=a\\tb\\nc\\\\d\\q\\u00e9\\uD83D\\uDE00\n"),
            vec![kv("my key=x", "a\tb\nc\\dq\u{e9}\u{1F600}")]
        );
    }

    #[test]
    fn malformed_unicode_escape_is_an_error_with_line() {
        assert_eq!(
            parse("a=1\nb=\\u12g4\n"),
            Err(PropertiesError::MalformedUnicodeEscape { line: 2 })
        );
        assert_eq!(parse("b=\\u12"), Err(PropertiesError::MalformedUnicodeEscape { line: 1 }));
    }

    #[test]
    fn lone_surrogate_becomes_replacement_char() {
        assert_eq!(pairs("a=\\uD800\n"), vec![kv("a", "\u{FFFD}")]);
    }

    #[test]
    fn cr_and_crlf_end_lines() {
        assert_eq!(pairs("a=1\rb=2\r\nc=3"), vec![kv("a", "1"), kv("b", "2"), kv("c", "3")]);
    }

    #[test]
    fn invalid_utf8_bytes_are_read_as_latin1() {
        assert_eq!(parse_bytes(b"a=caf\xe9\n").expect("parses"), vec![kv("a", "caf\u{e9}")]);
        assert_eq!(parse_bytes("a=café\n".as_bytes()).expect("parses"), vec![kv("a", "café")]);
    }

    #[test]
    fn utf8_byte_order_mark_is_dropped() {
        assert_eq!(
            parse_bytes(b"\xef\xbb\xbflistenPort=1\n").expect("parses"),
            vec![kv("listenPort", "1")]
        );
    }

    #[test]
    fn plain_text_is_unescaped_key_equals_value_lines() {
        assert_eq!(to_plain_text([("a", "x=y"), ("b c", "\\")]), "a=x=y\nb c=\\\n");
    }

    #[test]
    fn escaped_text_round_trips_through_parse() {
        let entries = [
            (" key:with=odd#chars!", " leading space, tab\t, newline\n, é, 😀, back\\slash"),
            ("k", "#not a comment"),
            ("", "empty key"),
        ];
        let text = to_escaped_text(entries.iter().map(|(k, v)| (*k, *v)));
        assert!(text.is_ascii(), "escaped text is ASCII: {text}");
        let back = pairs(&text);
        let expected: Vec<_> = entries.iter().map(|(k, v)| kv(k, v)).collect();
        assert_eq!(back, expected);
    }

    #[test]
    fn store_text_keeps_separators_in_values_but_escapes_line_breaks() {
        assert_eq!(
            to_store_text([("namesrvAddr", "a:9876;b=1 #!x"), ("k", "x\ny=z\\n")]),
            "namesrvAddr=a:9876;b=1 #!x\nk=x\\ny=z\\\\n\n"
        );
    }

    proptest::proptest! {
        /// Whatever the keys and values hold, what is stored reads back as exactly them, one
        /// entry per pair: no value can start a line or a key of its own.
        #[test]
        fn store_text_reads_back_as_written(
            entries in proptest::collection::vec((".*", ".*"), 0..8)
        ) {
            // A Rust string never holds a lone surrogate, so every char survives the trip.
            let text = to_store_text(entries.iter().map(|(k, v)| (k.as_str(), v.as_str())));
            proptest::prop_assert_eq!(pairs(&text), entries.clone());
            proptest::prop_assert_eq!(text.lines().count(), entries.len());
            let escaped = to_escaped_text(entries.iter().map(|(k, v)| (k.as_str(), v.as_str())));
            proptest::prop_assert_eq!(pairs(&escaped), entries);
        }
    }

    #[test]
    fn escaped_text_matches_java_store_format() {
        assert_eq!(to_escaped_text([("a b", " x y"), ("é", "=")]), "a\\ b=\\ x y\n\\u00E9=\\=\n");
    }
}
