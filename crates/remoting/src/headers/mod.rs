//! Typed request/response headers of every command the nameserver handles or sends, mapped to and
//! from `extFields` with Java's leniency (Java `CommandCustomHeader` +
//! `RemotingCommand#decodeCommandCustomHeaderDirectly` / `#makeCustomHeaderToNet`).
//!
//! Reading: every field is an `Option`. A missing key, or a value that does not parse, is `None`
//! (Java logs and ignores it; `@CFNotNull` is never enforced). Ints and longs parse like
//! `Integer.parseInt`/`Long.parseLong` (optional sign, ASCII digits, no whitespace, no overflow);
//! booleans like `Boolean.parseBoolean` (true only for a case-insensitive `"true"`).
//!
//! Writing: only `Some` fields, as `String.valueOf` would print them, in the order a JDK
//! `HashMap` iterates them (so headers are byte-identical with Java's).
//!
//! Requests without a header: 106, 206, 304, 311, 312, 313, 318, 319 (and 217's body). The
//! inherited `lo`/`ns`/`nsd`/`bname`/`oway` fields of 105/216/217 are not modelled: the
//! nameserver ignores them, and they stay readable through `RemotingCommand::ext`.

use crate::command::{ExtFields, RemotingCommand};

/// Ext key that carries the sender's zone (set by `DynamicalExtFieldRPCHook`, not a header field).
pub const ZONE_NAME: &str = "__ZONE_NAME";
/// Ext key that enables zone-filtered routes (`"true"`, case-insensitive).
pub const ZONE_MODE: &str = "__ZONE_MODE";

/// A typed custom header that travels in `extFields`.
pub trait CommandHeader: Sized {
    /// Reads the header; `None` (no `extFields` map at all) gives every field `None`.
    /// Java: `RemotingCommand#decodeCommandCustomHeaderDirectly`
    fn from_ext(ext: Option<&ExtFields>) -> Self;

    /// The `Some` fields as ext entries in JDK `HashMap` order.
    /// Java: `RemotingCommand#makeCustomHeaderToNet`
    fn to_ext(&self) -> ExtFields;
}

/// A header field type: how Java parses it from, and prints it into, an ext string.
pub trait HeaderValue: Sized {
    /// `None` when Java's parser would throw (the field then stays null).
    fn parse(s: &str) -> Option<Self>;
    /// Java `String.valueOf(value)`.
    fn render(&self) -> String;
}

impl HeaderValue for String {
    fn parse(s: &str) -> Option<Self> {
        Some(s.to_owned())
    }
    fn render(&self) -> String {
        self.clone()
    }
}

/// Java `Integer.parseInt`: optional `+`/`-`, ASCII digits, in range; Rust's `i32::from_str`
/// accepts exactly that.
impl HeaderValue for i32 {
    fn parse(s: &str) -> Option<Self> {
        s.parse().ok()
    }
    fn render(&self) -> String {
        itoa::Buffer::new().format(*self).to_owned()
    }
}

/// Java `Long.parseLong` (see the `i32` impl).
impl HeaderValue for i64 {
    fn parse(s: &str) -> Option<Self> {
        s.parse().ok()
    }
    fn render(&self) -> String {
        itoa::Buffer::new().format(*self).to_owned()
    }
}

/// Java `Boolean.parseBoolean`: never fails; true only for `"true"` in any case.
impl HeaderValue for bool {
    fn parse(s: &str) -> Option<Self> {
        Some(s.eq_ignore_ascii_case("true"))
    }
    fn render(&self) -> String {
        if *self { "true" } else { "false" }.to_owned()
    }
}

/// Java `Double.parseDouble` / `Double.toString` (no nameserver header uses doubles).
impl HeaderValue for f64 {
    fn parse(s: &str) -> Option<Self> {
        let t = s.trim_matches(|c: char| c <= ' ');
        let t = t.strip_suffix(['d', 'D', 'f', 'F']).unwrap_or(t);
        match t.trim_start_matches(['+', '-']) {
            "NaN" => return Some(f64::NAN),
            "Infinity" => {
                return Some(if t.starts_with('-') { f64::NEG_INFINITY } else { f64::INFINITY })
            }
            _ => {}
        }
        if t.bytes().any(|b| b.is_ascii_alphabetic() && b != b'e' && b != b'E') {
            return None;
        }
        t.parse().ok()
    }
    fn render(&self) -> String {
        let v = *self;
        if v.is_nan() {
            return "NaN".into();
        }
        if v.is_infinite() {
            return if v > 0.0 { "Infinity" } else { "-Infinity" }.into();
        }
        let a = v.abs();
        if a == 0.0 || (1e-3..1e7).contains(&a) {
            // Debug prints the shortest round-trip digits, always with a '.'.
            return format!("{v:?}");
        }
        let s = format!("{v:e}");
        let (mantissa, exp) = s.split_once('e').unwrap_or((&s, "0"));
        if mantissa.contains('.') {
            format!("{mantissa}E{exp}")
        } else {
            format!("{mantissa}.0E{exp}")
        }
    }
}

/// Java `String#hashCode` (over UTF-16 code units, wrapping).
pub fn java_string_hash(s: &str) -> i32 {
    s.encode_utf16().fold(0i32, |h, u| h.wrapping_mul(31).wrapping_add(i32::from(u)))
}

/// Reorders entries, given in insertion order, into the iteration order of a JDK `HashMap`
/// created with the default capacity (16, load factor 0.75) and filled in that order: by bucket
/// `(h ^ h >>> 16) & (capacity - 1)`, insertion order within a bucket.
pub fn java_hash_map_order<V>(entries: &mut [(&str, V)]) {
    let mut capacity = 16usize;
    while entries.len() > capacity / 4 * 3 {
        capacity *= 2;
    }
    let mask = (capacity - 1) as u32;
    entries.sort_by_key(|(k, _)| {
        let h = java_string_hash(k) as u32;
        (h ^ (h >> 16)) & mask
    });
}

/// Builds an `ExtFields` from `(key, value)` pairs in insertion order, reordered like a JDK
/// `HashMap`.
pub fn ext_in_java_order(mut entries: Vec<(&str, String)>) -> ExtFields {
    java_hash_map_order(&mut entries);
    entries.into_iter().collect()
}

/// Declares a header struct (every field `Option<T>`, `T: HeaderValue`) with its wire names, in
/// Java declaration order (the `HashMap` insertion order).
macro_rules! command_header {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $( $(#[$fmeta:meta])* $field:ident : $ty:ty = $wire:literal, )*
        }
    ) => {
        $(#[$meta])*
        pub struct $name {
            $( $(#[$fmeta])* pub $field: Option<$ty>, )*
        }

        impl CommandHeader for $name {
            fn from_ext(ext: Option<&ExtFields>) -> Self {
                let Some(ext) = ext else { return Self::default() };
                Self { $( $field: ext.get($wire).and_then(<$ty as HeaderValue>::parse), )* }
            }

            fn to_ext(&self) -> ExtFields {
                let mut entries: Vec<(&str, String)> = Vec::new();
                $( if let Some(v) = &self.$field {
                    entries.push(($wire, HeaderValue::render(v)));
                } )*
                ext_in_java_order(entries)
            }
        }
    };
}

mod controller;
mod namesrv;

pub use controller::*;
pub use namesrv::*;

impl RemotingCommand {
    /// Reads a typed header from this command's `extFields`.
    /// Java: `RemotingCommand#decodeCommandCustomHeader`
    pub fn decode_header<H: CommandHeader>(&self) -> H {
        H::from_ext(self.ext_fields.as_ref())
    }

    /// Puts a typed header's `Some` fields into `extFields`, creating the map even when no field
    /// is set (so a response with a header class always carries `"extFields":{}`). Entries already
    /// present are kept (a header field replaces one with the same key), and the merged map is
    /// put in JDK `HashMap` order, existing entries counting as inserted first, as Java's would be.
    /// Java: `RemotingCommand#makeCustomHeaderToNet`
    pub fn with_header<H: CommandHeader>(mut self, header: &H) -> Self {
        let fields = header.to_ext();
        self.ext_fields = Some(match self.ext_fields.take() {
            None => fields,
            Some(ext) if ext.is_empty() => fields,
            Some(mut ext) => {
                for (k, v) in fields.iter() {
                    ext.insert(k, v);
                }
                let mut entries: Vec<(&str, &str)> = ext.iter().collect();
                java_hash_map_order(&mut entries);
                entries.into_iter().collect()
            }
        });
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ext(pairs: &[(&str, &str)]) -> ExtFields {
        pairs.iter().copied().collect()
    }

    command_header! {
        /// The header of Java test `RemotingCommandTest.testEncodeAndDecode_FilledBodyWithExtFields`.
        #[derive(Debug, Clone, Default, PartialEq)]
        pub struct SampleHeader {
            string_value: String = "stringValue",
            int_value: i32 = "intValue",
            long_value: i64 = "longValue",
            boolean_value: bool = "booleanValue",
            double_value: f64 = "doubleValue",
        }
    }

    /// TV-16: typed values go on the wire as Java strings and come back typed, next to a manual ext.
    #[test]
    fn tv16_typed_fields_round_trip_through_ext_strings() {
        let h = SampleHeader {
            string_value: Some("bilibili".into()),
            int_value: Some(2333),
            long_value: Some(23_333_333),
            boolean_value: Some(true),
            double_value: Some(0.618),
        };
        let cmd =
            RemotingCommand::default().with_ext_fields(ext(&[("key", "value")])).with_header(&h);
        assert_eq!(cmd.ext("stringValue"), Some("bilibili"));
        assert_eq!(cmd.ext("intValue"), Some("2333"));
        assert_eq!(cmd.ext("longValue"), Some("23333333"));
        assert_eq!(cmd.ext("booleanValue"), Some("true"));
        assert_eq!(cmd.ext("doubleValue"), Some("0.618"));
        assert_eq!(cmd.ext("key"), Some("value"));
        assert_eq!(cmd.decode_header::<SampleHeader>(), h);
    }

    /// TV-19: a Java broker's REGISTER_BROKER ext, in JDK HashMap order.
    /// TV-07's `{str, num}` map iterates `str, num` in a JDK HashMap.
    #[test]
    fn jdk_hash_map_order_matches_tv07() {
        let mut entries = [("num", ()), ("str", ())];
        java_hash_map_order(&mut entries);
        assert_eq!(entries.map(|e| e.0), ["str", "num"]);
        assert_eq!(
            java_string_hash("brokerName"),
            "brokerName".chars().fold(0i32, |h, c| { h.wrapping_mul(31).wrapping_add(c as i32) })
        );
        assert_eq!(java_string_hash("Aa"), java_string_hash("BB"));
    }

    #[test]
    fn doubles_render_like_java_double_to_string() {
        for (v, s) in [
            (0.618, "0.618"),
            (1.0, "1.0"),
            (0.0, "0.0"),
            (1e7, "1.0E7"),
            (1.5e-5, "1.5E-5"),
            (-2.5, "-2.5"),
        ] {
            assert_eq!(v.render(), s);
        }
        assert_eq!(f64::parse(" 2.5d "), Some(2.5));
        assert_eq!(f64::parse("inf"), None);
        assert_eq!(f64::parse("-Infinity"), Some(f64::NEG_INFINITY));
    }
}
