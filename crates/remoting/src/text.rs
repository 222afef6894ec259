//! Strings that came from the wire, made safe to log or keep: [`clip`] gives a value that
//! prints quoted, with every control character escaped (no forged line, no terminal escape)
//! and at most [`LOG_CHARS`] characters (no 10 MB line); [`truncate`] bounds what is kept.
//! Every log field and kept string taken from a request goes through one of them.

use std::fmt::{self, Write};

/// Characters of a wire string a log line shows at most.
pub const LOG_CHARS: usize = 256;

/// Bytes of a wire string kept at most where it is only shown again (the event ring).
pub const KEEP_BYTES: usize = 512;

/// `text` cut to [`KEEP_BYTES`], owned: what a record kept for display holds of a wire string.
pub fn kept(text: &str) -> String {
    truncate(text, KEEP_BYTES).to_owned()
}

/// `text` cut to at most `max_bytes` bytes, at a character boundary.
pub fn truncate(text: &str, max_bytes: usize) -> &str {
    if text.len() <= max_bytes {
        return text;
    }
    let mut end = max_bytes;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// A wire string for a log line: `Display` and `Debug` both write it quoted, `"` `\` and
/// control characters escaped (`\n`, `\u{1b}`, …), cut after [`LOG_CHARS`] characters with the
/// full length appended (`…(10485760 bytes)`).
#[derive(Clone, Copy)]
pub struct Clipped<'a>(&'a str);

/// See [`Clipped`].
pub fn clip(text: &str) -> Clipped<'_> {
    Clipped(text)
}

impl fmt::Display for Clipped<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_char('"')?;
        for (shown, c) in self.0.chars().enumerate() {
            if shown == LOG_CHARS {
                write!(f, "…({} bytes)", self.0.len())?;
                break;
            }
            match c {
                '"' => f.write_str("\\\"")?,
                '\\' => f.write_str("\\\\")?,
                '\n' => f.write_str("\\n")?,
                '\r' => f.write_str("\\r")?,
                '\t' => f.write_str("\\t")?,
                c if c.is_control() || is_invisible(c) => write!(f, "\\u{{{:x}}}", c as u32)?,
                c => f.write_char(c)?,
            }
        }
        f.write_char('"')
    }
}

impl fmt::Debug for Clipped<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// Line and paragraph separators and bidirectional overrides: not control characters, but they
/// break or reorder what a terminal shows.
fn is_invisible(c: char) -> bool {
    matches!(c, '\u{2028}' | '\u{2029}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_quotes_and_separators_are_escaped() {
        let forged = "1.2.3.4:10911\nINFO audit: accepted who=account:ops\x1b[2J\"\\\u{2028}";
        let shown = clip(forged).to_string();
        assert_eq!(
            shown,
            r#""1.2.3.4:10911\nINFO audit: accepted who=account:ops\u{1b}[2J\"\\\u{2028}""#
        );
        assert!(!shown.chars().any(|c| c.is_control()));
        assert_eq!(format!("{:?}", clip("a b")), "\"a b\"");
    }

    #[test]
    fn long_values_are_cut_and_say_their_length() {
        let key = "k".repeat(10 << 20);
        let shown = clip(&key).to_string();
        assert!(shown.len() < LOG_CHARS + 32, "{}", shown.len());
        assert!(shown.ends_with("…(10485760 bytes)\""), "{shown}");
        assert_eq!(clip(&"é".repeat(LOG_CHARS)).to_string().chars().count(), LOG_CHARS + 2);
    }

    #[test]
    fn truncation_keeps_whole_characters() {
        assert_eq!(truncate("héllo", 2), "h");
        assert_eq!(truncate("héllo", 3), "hé");
        assert_eq!(truncate("short", 64), "short");
    }
}
