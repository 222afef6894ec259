//! fastjson 1.2.83 text quirks: string escaping in its two modes (default, and BrowserCompatible
//! used for "standard" route JSON). The lenient reader lives here too.

const HEX: &[u8; 16] = b"0123456789ABCDEF";

fn push_u_escape(out: &mut Vec<u8>, unit: u16) {
    out.extend_from_slice(b"\\u");
    for shift in [12, 8, 4, 0] {
        out.push(HEX[((unit >> shift) & 0xF) as usize]);
    }
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
pub fn escape_legacy_into(out: &mut Vec<u8>, s: &str) {
    let bytes = s.as_bytes();
    let mut start = 0;
    for (i, c) in s.char_indices() {
        let needs = c < '\u{20}'
            || c == '"'
            || c == '\\'
            || ('\u{7f}'..='\u{9f}').contains(&c)
            || c == '\u{2028}'
            || c == '\u{2029}';
        if !needs {
            continue;
        }
        out.extend_from_slice(&bytes[start..i]);
        match short_escape(c) {
            Some(e) => out.extend_from_slice(e),
            None => push_u_escape(out, c as u16),
        }
        start = i + c.len_utf8();
    }
    out.extend_from_slice(&bytes[start..]);
}

/// Appends the contents of a JSON string (without quotes) as fastjson's BrowserCompatible writer
/// does: short escapes for `" \ / \b \f \n \r \t`, and `\uXXXX` (uppercase, UTF-16 code units) for
/// every other char outside 0x20–0x7E.
pub fn escape_standard_into(out: &mut Vec<u8>, s: &str) {
    for c in s.chars() {
        if c == '/' {
            out.extend_from_slice(b"\\/");
        } else if let Some(e) = short_escape(c) {
            out.extend_from_slice(e);
        } else if ('\u{20}'..='\u{7e}').contains(&c) {
            out.push(c as u8);
        } else {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                push_u_escape(out, *unit);
            }
        }
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
