//! The JSON body writer: fastjson 1.2.83's default ("legacy") output and its
//! BrowserCompatible + QuoteFieldNames + MapSortField ("standard") output, produced from the serde
//! types of [`crate::body`] through a custom `serde_json` formatter.
//!
//! Architecture Invariant: the only hand-written text rules here are the ones serde_json cannot
//! express: unquoted integer map keys, the two escaping modes, long-as-string in standard mode, and
//! (through [`current_mode`]) the map order of [`IntKeyMap`](super::IntKeyMap).

use std::cell::Cell;
use std::io;

use serde::Serialize;
use serde_json::ser::{CharEscape, CompactFormatter, Formatter};

use crate::fastjson::{escape_legacy_into, escape_standard_into};

/// Which of fastjson's two output forms to write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum JsonMode {
    /// fastjson defaults (every `encode()` / `toJson()`): integer map keys unquoted, `HashMap`
    /// iteration order for integer-keyed maps, only control characters and C1 escaped.
    #[default]
    Legacy,
    /// `BrowserCompatible + QuoteFieldNames + SkipTransientField + MapSortField` (route replies to
    /// clients with version >= 401): keys quoted and sorted, non-ASCII escaped as UTF-16 `\uXXXX`,
    /// `/` escaped, longs beyond ±(2^53 − 1) written as strings.
    Standard,
}

thread_local! {
    /// The mode of the innermost running `write_json` call on this thread (standard order outside).
    static MODE: Cell<JsonMode> = const { Cell::new(JsonMode::Standard) };
}

/// The mode the current thread is writing in. [`IntKeyMap`](super::IntKeyMap)'s `Serialize` reads it
/// to pick JDK `HashMap` order (legacy) or numeric order (standard, and plain `serde_json` use).
pub fn current_mode() -> JsonMode {
    MODE.with(Cell::get)
}

/// Restores the previous mode on drop, so nested and panicking writes leave no trace.
struct ModeGuard(JsonMode);

impl ModeGuard {
    fn set(mode: JsonMode) -> Self {
        Self(MODE.with(|m| m.replace(mode)))
    }
}

impl Drop for ModeGuard {
    fn drop(&mut self) {
        MODE.with(|m| m.set(self.0));
    }
}

/// Encodes `value` as fastjson's default output (§8.1): what every Java `encode()` writes.
///
/// # Panics
/// Only if `T`'s `Serialize` impl fails (e.g. a map with non-scalar keys), which none of the
/// types in [`crate::body`] does.
/// Java: `RemotingSerializable#encode`
pub fn to_legacy_json<T: ?Sized + Serialize>(value: &T) -> Vec<u8> {
    to_json(value, JsonMode::Legacy)
}

/// Encodes `value` as fastjson's standard (BrowserCompatible) output (§8.2), used for
/// GET_ROUTEINFO_BY_TOPIC when the client version is >= 401 or `acceptStandardJsonOnly`.
///
/// # Panics
/// As [`to_legacy_json`].
/// Java: `TopicRouteData#encode(SerializerFeature...)`
pub fn to_standard_json<T: ?Sized + Serialize>(value: &T) -> Vec<u8> {
    to_json(value, JsonMode::Standard)
}

/// Encodes `value` in `mode` into a new buffer.
///
/// # Panics
/// As [`to_legacy_json`].
pub fn to_json<T: ?Sized + Serialize>(value: &T, mode: JsonMode) -> Vec<u8> {
    let mut out = Vec::with_capacity(512);
    write_json(&mut out, value, mode);
    out
}

/// Appends `value` encoded in `mode` to `out` (lets a caller reuse one buffer).
///
/// # Panics
/// As [`to_legacy_json`].
pub fn write_json<T: ?Sized + Serialize>(out: &mut Vec<u8>, value: &T, mode: JsonMode) {
    let _guard = ModeGuard::set(mode);
    let mut ser = serde_json::Serializer::with_formatter(out, FastjsonFormatter::new(mode));
    // Writing into a Vec cannot fail; only a Serialize impl can, and ours do not.
    value.serialize(&mut ser).expect("body types serialize infallibly");
}

/// Largest magnitude a JavaScript number holds exactly; fastjson's BrowserCompatible writes
/// longs beyond it as strings.
const MAX_SAFE_INTEGER: i64 = 9_007_199_254_740_991;

/// Where the formatter is inside an object key.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Key {
    /// Not writing a key.
    None,
    /// Inside a key whose opening quote is not written yet (it depends on what comes next).
    QuotePending,
    /// Inside a key that turned out to be a string (quote written).
    Text,
    /// Inside a key that turned out to be an integer.
    Int,
}

/// Compact JSON with fastjson's text rules. Keys arrive from serde_json as `begin_string`,
/// content, `end_string`; integer keys come as `write_i64` & co. in between, which is how the
/// deferred opening quote tells them apart from string keys such as `"0"`.
struct FastjsonFormatter {
    mode: JsonMode,
    key: Key,
    /// Reused buffer for escaped text that cannot be written through unchanged.
    scratch: Vec<u8>,
}

impl FastjsonFormatter {
    fn new(mode: JsonMode) -> Self {
        Self { mode, key: Key::None, scratch: Vec::new() }
    }

    /// Called before any scalar is written: resolves a pending key quote as "a text key".
    fn text_key<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        if self.key == Key::QuotePending {
            self.key = Key::Text;
            w.write_all(b"\"")?;
        }
        Ok(())
    }

    /// Called before an integer is written. Returns whether the integer is a map key.
    fn int_key<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<bool> {
        if self.key != Key::QuotePending {
            return Ok(false);
        }
        self.key = Key::Int;
        if self.mode == JsonMode::Standard {
            w.write_all(b"\"")?;
        }
        Ok(true)
    }

    fn write_text<W: ?Sized + io::Write>(&mut self, w: &mut W, s: &str) -> io::Result<()> {
        let plain = match self.mode {
            // serde_json already split off `"`, `\` and controls. Left to escape: DEL, and the
            // chars whose UTF-8 starts with C2 (C1 controls) or E2 (U+2028/U+2029).
            JsonMode::Legacy => !s.bytes().any(|b| b == 0x7f || b == 0xc2 || b == 0xe2),
            JsonMode::Standard => s.bytes().all(|b| (0x20..0x7f).contains(&b) && b != b'/'),
        };
        if plain {
            return w.write_all(s.as_bytes());
        }
        self.scratch.clear();
        match self.mode {
            JsonMode::Legacy => escape_legacy_into(&mut self.scratch, s),
            JsonMode::Standard => escape_standard_into(&mut self.scratch, s),
        }
        w.write_all(&self.scratch)
    }

    /// Writes a long: standard mode quotes values a JavaScript number cannot hold.
    fn write_long<W: ?Sized + io::Write>(&mut self, w: &mut W, v: i64) -> io::Result<()> {
        let is_key = self.int_key(w)?;
        if !is_key
            && self.mode == JsonMode::Standard
            && !(-MAX_SAFE_INTEGER..=MAX_SAFE_INTEGER).contains(&v)
        {
            w.write_all(b"\"")?;
            CompactFormatter.write_i64(w, v)?;
            return w.write_all(b"\"");
        }
        CompactFormatter.write_i64(w, v)
    }
}

impl Formatter for FastjsonFormatter {
    fn write_null<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.text_key(w)?;
        w.write_all(b"null")
    }

    fn write_bool<W: ?Sized + io::Write>(&mut self, w: &mut W, v: bool) -> io::Result<()> {
        self.text_key(w)?;
        CompactFormatter.write_bool(w, v)
    }

    fn write_i8<W: ?Sized + io::Write>(&mut self, w: &mut W, v: i8) -> io::Result<()> {
        self.write_long(w, v.into())
    }

    fn write_i16<W: ?Sized + io::Write>(&mut self, w: &mut W, v: i16) -> io::Result<()> {
        self.write_long(w, v.into())
    }

    fn write_i32<W: ?Sized + io::Write>(&mut self, w: &mut W, v: i32) -> io::Result<()> {
        self.write_long(w, v.into())
    }

    fn write_i64<W: ?Sized + io::Write>(&mut self, w: &mut W, v: i64) -> io::Result<()> {
        self.write_long(w, v)
    }

    fn write_i128<W: ?Sized + io::Write>(&mut self, w: &mut W, v: i128) -> io::Result<()> {
        match i64::try_from(v) {
            Ok(v) => self.write_long(w, v),
            Err(_) => {
                self.int_key(w)?;
                CompactFormatter.write_i128(w, v)
            }
        }
    }

    fn write_u8<W: ?Sized + io::Write>(&mut self, w: &mut W, v: u8) -> io::Result<()> {
        self.write_long(w, v.into())
    }

    fn write_u16<W: ?Sized + io::Write>(&mut self, w: &mut W, v: u16) -> io::Result<()> {
        self.write_long(w, v.into())
    }

    fn write_u32<W: ?Sized + io::Write>(&mut self, w: &mut W, v: u32) -> io::Result<()> {
        self.write_long(w, v.into())
    }

    fn write_u64<W: ?Sized + io::Write>(&mut self, w: &mut W, v: u64) -> io::Result<()> {
        match i64::try_from(v) {
            Ok(v) => self.write_long(w, v),
            Err(_) => {
                let is_key = self.int_key(w)?;
                let quote = !is_key && self.mode == JsonMode::Standard;
                if quote {
                    w.write_all(b"\"")?;
                }
                CompactFormatter.write_u64(w, v)?;
                if quote {
                    w.write_all(b"\"")?;
                }
                Ok(())
            }
        }
    }

    fn write_u128<W: ?Sized + io::Write>(&mut self, w: &mut W, v: u128) -> io::Result<()> {
        match u64::try_from(v) {
            Ok(v) => self.write_u64(w, v),
            Err(_) => {
                self.int_key(w)?;
                CompactFormatter.write_u128(w, v)
            }
        }
    }

    fn write_f32<W: ?Sized + io::Write>(&mut self, w: &mut W, v: f32) -> io::Result<()> {
        self.text_key(w)?;
        CompactFormatter.write_f32(w, v)
    }

    fn write_f64<W: ?Sized + io::Write>(&mut self, w: &mut W, v: f64) -> io::Result<()> {
        self.text_key(w)?;
        CompactFormatter.write_f64(w, v)
    }

    fn write_number_str<W: ?Sized + io::Write>(&mut self, w: &mut W, v: &str) -> io::Result<()> {
        self.text_key(w)?;
        w.write_all(v.as_bytes())
    }

    fn begin_string<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        if self.key == Key::None {
            w.write_all(b"\"")
        } else {
            self.key = Key::QuotePending;
            Ok(())
        }
    }

    fn end_string<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        match self.key {
            Key::None | Key::Text => w.write_all(b"\""),
            // An empty string key: nothing came between the quotes.
            Key::QuotePending => w.write_all(b"\"\""),
            Key::Int if self.mode == JsonMode::Standard => w.write_all(b"\""),
            Key::Int => Ok(()),
        }
    }

    fn write_string_fragment<W: ?Sized + io::Write>(
        &mut self,
        w: &mut W,
        fragment: &str,
    ) -> io::Result<()> {
        self.text_key(w)?;
        self.write_text(w, fragment)
    }

    fn write_char_escape<W: ?Sized + io::Write>(
        &mut self,
        w: &mut W,
        esc: CharEscape,
    ) -> io::Result<()> {
        self.text_key(w)?;
        let c = match esc {
            CharEscape::Quote => '"',
            CharEscape::ReverseSolidus => '\\',
            CharEscape::Solidus => '/',
            CharEscape::Backspace => '\u{8}',
            CharEscape::FormFeed => '\u{c}',
            CharEscape::LineFeed => '\n',
            CharEscape::CarriageReturn => '\r',
            CharEscape::Tab => '\t',
            CharEscape::AsciiControl(b) => char::from(b),
        };
        let mut buf = [0u8; 4];
        let s: &str = c.encode_utf8(&mut buf);
        self.scratch.clear();
        match self.mode {
            JsonMode::Legacy => escape_legacy_into(&mut self.scratch, s),
            JsonMode::Standard => escape_standard_into(&mut self.scratch, s),
        }
        w.write_all(&self.scratch)
    }

    fn begin_object_key<W: ?Sized + io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> io::Result<()> {
        self.key = Key::QuotePending;
        if first {
            Ok(())
        } else {
            w.write_all(b",")
        }
    }

    fn end_object_key<W: ?Sized + io::Write>(&mut self, _w: &mut W) -> io::Result<()> {
        self.key = Key::None;
        Ok(())
    }
}
