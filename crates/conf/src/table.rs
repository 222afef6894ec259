//! Typed key tables: one struct per server holding every key under its Java name and Java
//! default ([`config_struct!`]), the text conversions Java's `MixAll#properties2Object` applies
//! ([`Value`]), and the listings every server prints (`-p`, GET_*_CONFIG).
//!
//! Unlike Java, which silently ignores a value it cannot convert, a bad value is an error that
//! names the key and the value ([`ConfigError`]).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use remoting::SerializeType;
use thiserror::Error;

use crate::properties::{self, PropertiesError};

/// A bad configuration: unreadable or unparsable file, or a value of the wrong type or range.
#[derive(Debug, Error)]
pub enum ConfigError {
    /// The `-c` file could not be read.
    #[error("cannot read config file {}: {source}", path.display())]
    Read {
        /// The file given with `-c`.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The `-c` file is not valid properties text.
    #[error("cannot parse config file {}: {source}", path.display())]
    Parse {
        /// The file given with `-c`.
        path: PathBuf,
        /// What the properties reader rejected.
        source: PropertiesError,
    },
    /// A value cannot be converted to the key's type, or is out of range.
    #[error("invalid value for config key {key}: {value:?} ({reason})")]
    InvalidValue {
        /// The Java key name, e.g. `listenPort`.
        key: String,
        /// The value as written.
        value: String,
        /// What was expected.
        reason: String,
    },
}

/// A config value type: conversion from and to the properties text.
pub trait Value: Sized {
    /// The type as the book's key reference names it (`int`, `boolean`, `string`, …).
    const TYPE: &'static str;
    /// Converts a raw value; `Err` says what was expected.
    fn parse(raw: &str) -> Result<Self, &'static str>;
    /// The text form; `None` means unset (skipped in GET_*_CONFIG output, empty in `-p` output).
    fn render(&self) -> Option<String>;
}

/// Java `String.trim()`: strips every char <= U+0020 at both ends.
pub fn java_trim(s: &str) -> &str {
    s.trim_matches(|c: char| c <= ' ')
}

impl Value for i32 {
    const TYPE: &'static str = "int";
    fn parse(raw: &str) -> Result<Self, &'static str> {
        raw.parse().map_err(|_| "expected a 32-bit integer")
    }
    fn render(&self) -> Option<String> {
        Some(self.to_string())
    }
}

impl Value for i64 {
    const TYPE: &'static str = "long";
    fn parse(raw: &str) -> Result<Self, &'static str> {
        raw.parse().map_err(|_| "expected a 64-bit integer")
    }
    fn render(&self) -> Option<String> {
        Some(self.to_string())
    }
}

impl Value for bool {
    const TYPE: &'static str = "boolean";
    fn parse(raw: &str) -> Result<Self, &'static str> {
        if raw.eq_ignore_ascii_case("true") {
            Ok(true)
        } else if raw.eq_ignore_ascii_case("false") {
            Ok(false)
        } else {
            Err("expected true or false")
        }
    }
    fn render(&self) -> Option<String> {
        Some(self.to_string())
    }
}

impl Value for String {
    const TYPE: &'static str = "string";
    fn parse(raw: &str) -> Result<Self, &'static str> {
        Ok(java_trim(raw).to_owned())
    }
    fn render(&self) -> Option<String> {
        Some(self.clone())
    }
}

impl Value for Option<String> {
    const TYPE: &'static str = "string";
    fn parse(raw: &str) -> Result<Self, &'static str> {
        Ok(Some(java_trim(raw).to_owned()))
    }
    fn render(&self) -> Option<String> {
        self.clone()
    }
}

impl Value for Option<i64> {
    const TYPE: &'static str = "long";
    fn parse(raw: &str) -> Result<Self, &'static str> {
        <i64 as Value>::parse(raw).map(Some)
    }
    fn render(&self) -> Option<String> {
        self.map(|n| n.to_string())
    }
}

impl Value for Option<bool> {
    const TYPE: &'static str = "boolean";
    fn parse(raw: &str) -> Result<Self, &'static str> {
        <bool as Value>::parse(raw).map(Some)
    }
    fn render(&self) -> Option<String> {
        self.map(|b| b.to_string())
    }
}

impl Value for Option<SerializeType> {
    const TYPE: &'static str = "`JSON` or `ROCKETMQ`";
    fn parse(raw: &str) -> Result<Self, &'static str> {
        match raw {
            "JSON" => Ok(Some(SerializeType::Json)),
            "ROCKETMQ" => Ok(Some(SerializeType::RocketMq)),
            _ => Err("expected JSON or ROCKETMQ"),
        }
    }
    fn render(&self) -> Option<String> {
        self.map(|t| match t {
            SerializeType::Json => "JSON".to_owned(),
            SerializeType::RocketMq => "ROCKETMQ".to_owned(),
        })
    }
}

/// What `-p` and GET_*_CONFIG show instead of a secret's value.
pub const REDACTED: &str = "******";

/// Whether a key's value is a secret that `-p` and GET_*_CONFIG never show: any key whose name
/// contains `password`, `secret` or `credential` (case-insensitive), e.g.
/// `tls.server.keyPassword` or a broker's `innerClientAuthenticationCredentials` — but not a
/// switch about secrets, whose name says `allow` or `enable` (`httpAllowPlainCredentials`): its
/// value is a boolean an operator needs to see.
pub fn is_secret_key(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    let switch = key.contains("allow") || key.contains("enable");
    !switch && ["password", "secret", "credential"].iter().any(|word| key.contains(word))
}

/// `value` as `-p` and GET_*_CONFIG show it: [`REDACTED`] for a non-empty secret.
pub fn shown<'a>(key: &str, value: &'a str) -> &'a str {
    if !value.is_empty() && is_secret_key(key) {
        REDACTED
    } else {
        value
    }
}

/// The error for a bad value of `key`, with a hint when surrounding whitespace is the problem.
/// The value is kept whole up to 256 characters (it goes into remarks and log lines; an update
/// may carry megabytes).
pub fn invalid(key: &str, value: &str, reason: &str) -> ConfigError {
    let mut reason = reason.to_owned();
    if value != value.trim() {
        reason.push_str("; remove the surrounding whitespace");
    }
    let value = match value.char_indices().nth(256) {
        Some((end, _)) => format!("{}…({} bytes)", &value[..end], value.len()),
        None => value.to_owned(),
    };
    ConfigError::InvalidValue { key: key.to_owned(), value, reason }
}

/// Checks `(key, minimum, maximum)` rules against a table's current values; the error names the
/// key and its value.
pub fn check_ranges<T: Keys>(table: &T, ranges: &[(&str, i64, i64)]) -> Result<(), ConfigError> {
    for &(key, min, max) in ranges {
        let Some(text) = table.value(key) else { continue };
        let value: i64 = text.parse().map_err(|_| invalid(key, &text, "expected an integer"))?;
        if value < min || value > max {
            let reason = if max == i64::MAX || max == i64::from(i32::MAX) {
                format!("must be at least {min}")
            } else {
                format!("must be between {min} and {max}")
            };
            return Err(invalid(key, &text, &reason));
        }
    }
    Ok(())
}

/// A range of [`check_ranges`] in words: `0 to 65535`, `at least 1`, `0 or more`.
pub fn range_text(min: i64, max: i64) -> String {
    if max != i64::MAX && max != i64::from(i32::MAX) {
        format!("{min} to {max}")
    } else if min == 0 {
        "0 or more".to_owned()
    } else {
        format!("at least {min}")
    }
}

/// What a server's key reference says about its keys: the table's `key_infos()`, with the keys
/// of its default update black list marked refused and the ranges it checks in words.
pub fn documented_keys<T: Rules + Default>(
    infos: Vec<crate::KeyInfo>,
    ranges: &[(&str, i64, i64)],
) -> Vec<crate::KeyInfo> {
    let refused = T::default().update_black_list();
    infos
        .into_iter()
        .map(|info| if refused.contains(info.key) { info.refused() } else { info })
        .map(|info| match ranges.iter().find(|(key, _, _)| *key == info.key) {
            Some(&(_, min, max)) => info.valid(range_text(min, max)),
            None => info,
        })
        .collect()
}

/// What [`config_struct!`] generates, for code generic over a server's table
/// ([`crate::Live`]).
pub trait Keys: Clone + Send + Sync + 'static {
    /// The Java names of every typed key, in Java declaration order.
    fn keys() -> &'static [&'static str];
    /// The current value of a typed or extra key as text; `None` when unknown or unset.
    fn value(&self, key: &str) -> Option<String>;
    /// Sets a typed key from its text form; `Ok(false)` when `key` is not a typed key.
    fn set_value(&mut self, key: &str, raw: &str) -> Result<bool, ConfigError>;
    /// Keys no field knows, kept as written.
    fn extra(&self) -> &BTreeMap<String, String>;
    /// Keys no field knows, for an update.
    fn extra_mut(&mut self) -> &mut BTreeMap<String, String>;
    /// The `-c` file this table was loaded from, if any.
    fn loaded_from_mut(&mut self) -> &mut Option<PathBuf>;
}

/// A server's own rules over its table: ranges, the keys an update may not change, and where
/// updates are persisted.
pub trait Rules: Keys {
    /// Checks ranges and cross-key constraints; the error names the key.
    fn check(&self) -> Result<(), ConfigError>;
    /// What an update must also pass beyond [`Rules::check`], given the running table: no
    /// value that would break the running server (none by default). The error names the key.
    fn check_update(&self, running: &Self) -> Result<(), ConfigError> {
        let _ = running;
        Ok(())
    }
    /// The keys a config update may never change.
    fn update_black_list(&self) -> BTreeSet<String>;
    /// Where an accepted update is written (`configStorePath`).
    fn store_path(&self) -> PathBuf;
}

/// Every set key with its value: typed keys with a value, then extra keys, sorted by key.
pub fn sorted_entries<T: Keys>(table: &T) -> BTreeMap<String, String> {
    let mut all = table.extra().clone();
    for key in T::keys() {
        if let Some(value) = table.value(key) {
            all.insert((*key).to_owned(), value);
        }
    }
    all
}

/// Every set key (typed and extra) as `key=value\n`, sorted by key, unset values skipped, no
/// escaping: what `configStorePath` holds, secrets included.
/// Java: `Configuration#getAllConfigsFormatString` (errata D35)
pub fn properties_text<T: Keys>(table: &T) -> String {
    let all = sorted_entries(table);
    properties::to_plain_text(all.iter().map(|(k, v)| (k.as_str(), v.as_str())))
}

/// Every set key (typed and extra), sorted by key, as the servers persist it to
/// `configStorePath`: [`properties::to_store_text`], so what is read back at the next start is
/// exactly what was set, secrets included. (Java writes [`properties_text`] there.)
pub fn store_text<T: Keys>(table: &T) -> String {
    let all = sorted_entries(table);
    properties::to_store_text(all.iter().map(|(k, v)| (k.as_str(), v.as_str())))
}

/// [`sorted_entries`] as every listing shows them (GET_*_CONFIG, the HTTP API's
/// `/api/v1/config`): each [secret](is_secret_key) [`shown`] as [`REDACTED`].
pub fn public_sorted_entries<T: Keys>(table: &T) -> BTreeMap<String, String> {
    let mut all = sorted_entries(table);
    for (key, value) in &mut all {
        let redacted = shown(key, value);
        if redacted != value.as_str() {
            *value = redacted.to_owned();
        }
    }
    all
}

/// The GET_*_CONFIG body: [`properties_text`] with every [secret](is_secret_key) shown as
/// [`REDACTED`] (Java shows them).
pub fn public_properties_text<T: Keys>(table: &T) -> String {
    let all = public_sorted_entries(table);
    properties::to_plain_text(all.iter().map(|(k, v)| (k.as_str(), v.as_str())))
}

/// Every typed key as `key=value\n` in declaration order (unset values empty, as Java prints
/// null), then the extra keys sorted; secrets shown as [`REDACTED`].
/// Java: `MixAll#printObjectProperties`
pub fn print_text<T: Keys>(table: &T) -> String {
    let mut out = String::new();
    for key in T::keys() {
        let value = table.value(key).unwrap_or_default();
        out.push_str(&format!("{key}={}\n", shown(key, &value)));
    }
    for (key, value) in table.extra() {
        out.push_str(&format!("{key}={}\n", shown(key, value)));
    }
    out
}

/// Reads a `-c` file into `table`: typed keys converted (error on a bad value), every other key
/// kept in the extra map; records the file as `loaded_from`.
pub fn load_file<T: Keys>(table: &mut T, path: &Path) -> Result<(), ConfigError> {
    let bytes = std::fs::read(path)
        .map_err(|source| ConfigError::Read { path: path.to_owned(), source })?;
    let entries = properties::parse_bytes(&bytes)
        .map_err(|source| ConfigError::Parse { path: path.to_owned(), source })?;
    apply_entries(table, entries)?;
    *table.loaded_from_mut() = Some(path.to_owned());
    Ok(())
}

/// Applies properties entries as a `-c` file does: typed keys converted (error on a bad value),
/// every other key stored in the extra map.
pub fn apply_entries<T, I>(table: &mut T, entries: I) -> Result<(), ConfigError>
where
    T: Keys,
    I: IntoIterator<Item = (String, String)>,
{
    for (key, value) in entries {
        if !table.set_value(&key, &value)? {
            table.extra_mut().insert(key, value);
        }
    }
    Ok(())
}

/// Declares a server's key table: a struct with one field per key (Java name, Java default,
/// `///` docs and optional `#[key(...)]` markers — the documentation book generates its key
/// reference from these through `key_infos()`; the markers are the methods of
/// [`crate::KeyInfo`]: `java = "Class"`, `system_property`, `dynamic`, `no_effect`,
/// `refused`, `default_doc = "..."`), plus `extra`
/// (keys no field knows, kept as written, like Java's `Configuration` property bag) and
/// `loaded_from`. Generates `Default`, `KEYS`, `get`, `set_known`, the listings and
/// [`Keys`].
///
/// ```ignore
/// conf::config_struct! {
///     /// Every setting of the server.
///     pub struct Config {
///         /// The remoting port; 0 lets the OS choose.
///         #[key(java = "NettyServerConfig")]
///         listen_port: i32 = "listenPort", 9876;
///     }
/// }
/// ```
#[macro_export]
macro_rules! config_struct {
    (
        $(#[$smeta:meta])*
        pub struct $name:ident {
            $(
                $(#[doc = $doc:literal])*
                $(#[key($($marker:ident $(= $arg:expr)?),* $(,)?)])?
                $field:ident : $ty:ty = $key:literal, $default:expr;
            )*
        }
    ) => {
        $(#[$smeta])*
        #[derive(Debug, Clone, PartialEq)]
        pub struct $name {
            $(
                $(#[doc = $doc])*
                #[doc = ""]
                #[doc = concat!("Key `", $key, "`.")]
                pub $field: $ty,
            )*
            /// Keys no field knows, kept as written so that GET_*_CONFIG returns them and an
            /// update re-persists them, like Java's `Configuration` property bag.
            pub extra: ::std::collections::BTreeMap<String, String>,
            /// The `-c` file this configuration was loaded from, if any (not a property).
            pub loaded_from: Option<::std::path::PathBuf>,
        }

        impl Default for $name {
            /// Java defaults.
            fn default() -> Self {
                Self {
                    $( $field: $default, )*
                    extra: ::std::collections::BTreeMap::new(),
                    loaded_from: None,
                }
            }
        }

        impl $name {
            /// The Java names of every typed key, in Java declaration order.
            pub const KEYS: &'static [&'static str] = &[$( $key, )*];

            /// What the documentation says about every typed key, in [`Self::KEYS`] order: its
            /// type, default, `///` text and `#[key(...)]` markers ([`$crate::KeyInfo`]). The
            /// book's key reference pages are generated from it.
            pub fn key_infos() -> Vec<$crate::KeyInfo> {
                let defaults = Self::default();
                vec![$(
                    $crate::KeyInfo::new(
                        $key,
                        <$ty as $crate::Value>::TYPE,
                        $crate::Value::render(&defaults.$field),
                        &[$($doc),*],
                    ) $($( .$marker($($arg)?) )*)?
                ),*]
            }

            /// The current value of a typed or extra key as text; `None` when unknown or unset.
            pub fn get(&self, key: &str) -> Option<String> {
                match key {
                    $( $key => $crate::Value::render(&self.$field), )*
                    _ => self.extra.get(key).cloned(),
                }
            }

            /// Sets a typed key from its text form (strings trimmed like Java; numbers and
            /// booleans not, so `"9876 "` is an error). Returns `Ok(false)`, changing nothing,
            /// when `key` is not a typed key. Java: `MixAll#properties2Object` (one key)
            pub fn set_known(&mut self, key: &str, raw: &str) -> Result<bool, $crate::ConfigError> {
                match key {
                    $( $key => {
                        self.$field = $crate::Value::parse(raw)
                            .map_err(|why| $crate::table::invalid(key, raw, why))?;
                        Ok(true)
                    } )*
                    _ => Ok(false),
                }
            }

            /// Applies properties entries as a `-c` file does: typed keys converted (error on
            /// a bad value), every other key stored in [`Self::extra`].
            pub fn apply_file_entries<I>(&mut self, entries: I) -> Result<(), $crate::ConfigError>
            where
                I: IntoIterator<Item = (String, String)>,
            {
                $crate::table::apply_entries(self, entries)
            }

            /// Every set key with its value: typed keys with a value, then extra keys, sorted.
            pub fn to_sorted_entries(&self) -> ::std::collections::BTreeMap<String, String> {
                $crate::table::sorted_entries(self)
            }

            /// The GET_*_CONFIG body and the `configStorePath` file content: every set key
            /// (typed and extra) as `key=value\n`, sorted by key, unset values skipped, no
            /// escaping. Java: `Configuration#getAllConfigsFormatString` (errata D35)
            pub fn to_properties_text(&self) -> String {
                $crate::table::properties_text(self)
            }

            /// [`Self::to_sorted_entries`] with secrets redacted, as every listing shows them
            /// (GET_*_CONFIG and the HTTP API).
            pub fn to_public_sorted_entries(&self) -> ::std::collections::BTreeMap<String, String> {
                $crate::table::public_sorted_entries(self)
            }

            /// The GET_*_CONFIG body: [`Self::to_properties_text`] with secrets redacted.
            pub fn to_public_properties_text(&self) -> String {
                $crate::table::public_properties_text(self)
            }

            /// The `-p` listing: every typed key as `key=value\n` in Java declaration order
            /// (unset values empty, as Java prints null), then the extra keys sorted; secrets
            /// redacted. Java: `MixAll#printObjectProperties`
            pub fn to_print_text(&self) -> String {
                $crate::table::print_text(self)
            }

            /// `load config properties file OK, <file>` when loaded from a `-c` file (Java
            /// prints it to stdout during start-up).
            pub fn load_message(&self) -> Option<String> {
                self.loaded_from
                    .as_ref()
                    .map(|p| format!("load config properties file OK, {}", p.display()))
            }
        }

        impl $crate::Keys for $name {
            fn keys() -> &'static [&'static str] {
                Self::KEYS
            }
            fn value(&self, key: &str) -> Option<String> {
                self.get(key)
            }
            fn set_value(&mut self, key: &str, raw: &str) -> Result<bool, $crate::ConfigError> {
                self.set_known(key, raw)
            }
            fn extra(&self) -> &::std::collections::BTreeMap<String, String> {
                &self.extra
            }
            fn extra_mut(&mut self) -> &mut ::std::collections::BTreeMap<String, String> {
                &mut self.extra
            }
            fn loaded_from_mut(&mut self) -> &mut Option<::std::path::PathBuf> {
                &mut self.loaded_from
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_huge_bad_value_is_clipped_in_the_error() {
        let huge = "9".repeat(1 << 20);
        let text = invalid("port", &huge, "expected a 32-bit integer").to_string();
        assert!(text.len() < 1024, "{} bytes", text.len());
        assert!(text.contains("…(1048576 bytes)"), "{text}");
        assert!(invalid("port", "x", "r").to_string().contains("\"x\""));
    }

    crate::config_struct! {
        /// A sample table.
        pub struct Sample {
            /// `port`.
            #[key(java = "NettyServerConfig", dynamic)]
            port: i32 = "port", 9876;
            /// `name`.
            name: String = "name", "n".to_owned();
            /// `flag`.
            flag: bool = "flag", false;
            /// `home`.
            home: Option<String> = "home", None;
        }
    }

    #[test]
    fn key_infos_carry_type_default_doc_and_markers() {
        let infos = Sample::key_infos();
        assert_eq!(infos.iter().map(|i| i.key).collect::<Vec<_>>(), Sample::KEYS);
        let port = &infos[0];
        assert_eq!((port.value_type, port.doc.as_str()), ("int", "`port`."));
        assert_eq!(port.default, crate::DefaultValue::Value("9876".to_owned()));
        assert_eq!(port.java, crate::JavaOrigin::Class("NettyServerConfig"));
        assert!(port.dynamic && !port.no_effect && !port.refused);
        let home = &infos[3];
        assert_eq!(
            (home.default.clone(), home.java),
            (crate::DefaultValue::Unset, crate::JavaOrigin::None)
        );
        assert!(!home.dynamic);
    }

    #[test]
    fn secret_values_are_redacted_in_listings_but_not_in_the_persisted_text() {
        let mut s = Sample::default();
        s.extra.insert("tls.server.keyPassword".into(), "hunter2".into());
        s.extra.insert("emptySecretKey".into(), String::new());
        for shown in [s.to_public_properties_text(), s.to_print_text()] {
            assert!(shown.contains("tls.server.keyPassword=******\n"), "{shown}");
            assert!(shown.contains("emptySecretKey=\n"), "an empty secret hides nothing: {shown}");
            assert!(!shown.contains("hunter2"), "{shown}");
        }
        let listed = s.to_public_sorted_entries();
        assert_eq!(listed["tls.server.keyPassword"], REDACTED);
        assert_eq!(listed["emptySecretKey"], "");
        assert_eq!(listed["port"], "9876");
        assert!(s.to_properties_text().contains("tls.server.keyPassword=hunter2"));
        assert!(
            is_secret_key("innerClientAuthenticationCredentials") && !is_secret_key("listenPort")
        );
        assert!(!is_secret_key("httpAllowPlainCredentials"), "a switch, not a secret");
    }

    #[test]
    fn keys_round_trip_through_get_and_set() {
        let mut s = Sample { home: Some("/opt".into()), ..Sample::default() };
        let original = s.clone();
        for key in Sample::KEYS {
            if let Some(value) = original.get(key) {
                assert!(s.set_known(key, &value).expect("own value is valid"), "{key}");
            }
        }
        assert_eq!(s, original);
        assert!(!s.set_known("unknown", "1").expect("unknown is not an error"));
    }

    #[test]
    fn numbers_are_not_trimmed_but_strings_are() {
        let mut s = Sample::default();
        let err = s.set_known("port", "1 ").expect_err("trailing space");
        assert!(err.to_string().contains("whitespace"), "{err}");
        s.set_known("name", "  x \t").expect("string");
        assert_eq!(s.name, "x");
        s.set_known("flag", "TRUE").expect("bool");
        assert!(s.flag);
    }

    #[test]
    fn ranges_read_as_words() {
        assert_eq!(range_text(0, 65535), "0 to 65535");
        assert_eq!(range_text(1, i64::from(i32::MAX)), "at least 1");
        assert_eq!(range_text(0, i64::MAX), "0 or more");
    }

    #[test]
    fn ranges_name_the_key() {
        let s = Sample { port: 70000, ..Sample::default() };
        let err = check_ranges(&s, &[("port", 0, 65535)]).expect_err("out of range");
        assert_eq!(
            err.to_string(),
            "invalid value for config key port: \"70000\" (must be between 0 and 65535)"
        );
    }

    #[test]
    fn listings_sort_or_keep_declaration_order() {
        let mut s = Sample::default();
        s.extra.insert("aaa".into(), "1".into());
        assert_eq!(s.to_properties_text(), "aaa=1\nflag=false\nname=n\nport=9876\n");
        assert_eq!(s.to_print_text(), "port=9876\nname=n\nflag=false\nhome=\naaa=1\n");
    }

    #[test]
    fn a_file_sets_typed_keys_and_keeps_the_others() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("s.properties");
        std::fs::write(&path, "port=1\nother=x\n").expect("write");
        let mut s = Sample::default();
        load_file(&mut s, &path).expect("load");
        assert_eq!(s.port, 1);
        assert_eq!(s.to_sorted_entries().get("other").map(String::as_str), Some("x"));
        assert!(s.load_message().expect("loaded").ends_with("s.properties"));
        s.apply_file_entries([("port".to_owned(), "x".to_owned())]).expect_err("bad port");
    }
}
