//! Lenient reading of JSON bodies the way fastjson's parser reads them: both output forms,
//! unknown and missing properties, `null` for a defaulted property, numbers as strings and the
//! other way round for scalar properties, and `{"$ref":…}` back-references (resolved when they
//! point at an earlier value, dropped otherwise).
//!
//! The field helpers (`int`, `flag`, `text`, `opt_text`, `or_default`) are used through
//! `#[serde(deserialize_with = …)]` on the types of [`crate::body`].

use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, DeserializeOwned, Deserializer, Unexpected, Visitor};
use serde::Deserialize;
use serde_json::Value;

use super::BodyError;
use crate::fastjson::{from_slice_lenient, LenientJsonError};

/// Decodes a JSON body sent by a Java (or Go, Node, Rust) peer into `T`.
///
/// Accepts everything fastjson writes (unquoted integer keys, either output form), anything
/// [`crate::fastjson::from_slice_lenient`] accepts, unknown properties, missing properties (Java
/// defaults), `null` for properties with a default, numbers given as strings and the other way
/// round for scalar properties, and `{"$ref":"$.path"}` objects (replaced by the value they
/// point at; unresolvable or cyclic ones are dropped, so the property takes its default).
///
/// Errors: empty input, malformed JSON, trailing garbage, or a value of the wrong shape.
/// Java: `RemotingSerializable#decode` (fastjson `JSON.parseObject`)
pub fn from_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, BodyError> {
    if !contains(bytes, b"$ref") {
        return Ok(from_slice_lenient(bytes)?);
    }
    let mut root: Value = from_slice_lenient(bytes)?;
    resolve_refs(&mut root);
    T::deserialize(root).map_err(|e| BodyError::Json(LenientJsonError::Json(e)))
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    memchr::memmem::find(haystack, needle).is_some()
}

/// One step of a path into a `Value`.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Seg {
    Key(String),
    Index(usize),
}

/// Replaces every `{"$ref":"$.a.b[0]"}` object by a copy of the value it points at, in document
/// order. References to the root, to an ancestor (`"@"`, `".."`, or a path prefix: cycles a tree
/// cannot hold) or to nothing are removed from their object (or become `null` in an array).
/// Java: fastjson `DefaultJSONParser#handleResovleTask`
fn resolve_refs(root: &mut Value) {
    let mut refs = Vec::new();
    collect_refs(root, &mut Vec::new(), &mut refs);
    for (at, reference) in refs {
        let target = parse_ref(&reference)
            .filter(|target| !at.starts_with(target))
            .and_then(|target| lookup(root, &target).cloned());
        match target {
            Some(value) => {
                if let Some(slot) = lookup_mut(root, &at) {
                    *slot = value;
                }
            }
            None => drop_at(root, &at),
        }
    }
}

fn ref_of(value: &Value) -> Option<&str> {
    match value {
        Value::Object(map) if map.len() == 1 => map.get("$ref").and_then(Value::as_str),
        _ => None,
    }
}

fn collect_refs(value: &Value, path: &mut Vec<Seg>, out: &mut Vec<(Vec<Seg>, String)>) {
    if let Some(reference) = ref_of(value) {
        out.push((path.clone(), reference.to_owned()));
        return;
    }
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                path.push(Seg::Key(k.clone()));
                collect_refs(v, path, out);
                path.pop();
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                path.push(Seg::Index(i));
                collect_refs(v, path, out);
                path.pop();
            }
        }
        _ => {}
    }
}

/// Parses `$.name.other[3]` (a backslash escapes the next char of a name). `None` for relative
/// references (`@`, `..`) and malformed paths.
fn parse_ref(reference: &str) -> Option<Vec<Seg>> {
    let mut chars = reference.strip_prefix('$')?.chars().peekable();
    let mut path = Vec::new();
    while let Some(c) = chars.next() {
        match c {
            '.' => {
                let mut name = String::new();
                while let Some(&c) = chars.peek() {
                    if c == '.' || c == '[' {
                        break;
                    }
                    chars.next();
                    if c == '\\' {
                        name.push(chars.next()?);
                    } else {
                        name.push(c);
                    }
                }
                path.push(Seg::Key(name));
            }
            '[' => {
                let mut digits = String::new();
                loop {
                    match chars.next()? {
                        ']' => break,
                        d => digits.push(d),
                    }
                }
                path.push(Seg::Index(digits.parse().ok()?));
            }
            _ => return None,
        }
    }
    Some(path)
}

fn lookup<'v>(mut value: &'v Value, path: &[Seg]) -> Option<&'v Value> {
    for seg in path {
        value = match (value, seg) {
            (Value::Object(map), Seg::Key(k)) => map.get(k)?,
            (Value::Array(items), Seg::Index(i)) => items.get(*i)?,
            _ => return None,
        };
    }
    Some(value)
}

fn lookup_mut<'v>(mut value: &'v mut Value, path: &[Seg]) -> Option<&'v mut Value> {
    for seg in path {
        value = match (value, seg) {
            (Value::Object(map), Seg::Key(k)) => map.get_mut(k)?,
            (Value::Array(items), Seg::Index(i)) => items.get_mut(*i)?,
            _ => return None,
        };
    }
    Some(value)
}

fn drop_at(root: &mut Value, at: &[Seg]) {
    let Some((last, parent)) = at.split_last() else {
        *root = Value::Null;
        return;
    };
    match (lookup_mut(root, parent), last) {
        (Some(Value::Object(map)), Seg::Key(k)) => {
            map.remove(k);
        }
        (Some(Value::Array(items)), Seg::Index(i)) => {
            if let Some(slot) = items.get_mut(*i) {
                *slot = Value::Null;
            }
        }
        _ => {}
    }
}

/// `null` → `T::default()`; otherwise `T` as usual.
pub(crate) fn or_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

/// An `int`/`long` property: a number, a numeric string (`"8"`, `""` = 0), a boolean (1/0), a
/// float with no fraction, or `null` (0). Java: fastjson `TypeUtils#castToInt`/`castToLong`
pub(crate) fn int<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: TryFrom<i64> + Default,
{
    d.deserialize_any(IntVisitor(PhantomData))
}

/// An optional `Integer`/`Long` property: like [`int`], but `null` is `None`.
pub(crate) fn opt_int<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: TryFrom<i64> + Default,
{
    match Value::deserialize(d)? {
        Value::Null => Ok(None),
        v => int(v).map(Some).map_err(de::Error::custom),
    }
}

struct IntVisitor<T>(PhantomData<T>);

impl<T: TryFrom<i64> + Default> IntVisitor<T> {
    fn fit<E: de::Error>(&self, v: i64) -> Result<T, E> {
        T::try_from(v).map_err(|_| E::invalid_value(Unexpected::Signed(v), self))
    }
}

impl<T: TryFrom<i64> + Default> Visitor<'_> for IntVisitor<T> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an integer or a numeric string")
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<T, E> {
        self.fit(v)
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<T, E> {
        let v = i64::try_from(v).map_err(|_| E::invalid_value(Unexpected::Unsigned(v), &self))?;
        self.fit(v)
    }

    #[allow(clippy::cast_possible_truncation)]
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<T, E> {
        if v.fract() == 0.0 && v.abs() < 9.3e18 {
            self.fit(v as i64)
        } else {
            Err(E::invalid_value(Unexpected::Float(v), &self))
        }
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<T, E> {
        self.fit(i64::from(v))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<T, E> {
        let t = v.trim();
        if t.is_empty() || t == "null" {
            return Ok(T::default());
        }
        match t.parse::<i64>() {
            Ok(n) => self.fit(n),
            Err(_) => Err(E::invalid_value(Unexpected::Str(v), &self)),
        }
    }

    fn visit_unit<E: de::Error>(self) -> Result<T, E> {
        Ok(T::default())
    }
}

/// A `boolean` property: `true`/`false`, a string of either (any case), a number (non-zero =
/// true), or `null` (false). Java: fastjson `TypeUtils#castToBoolean`
pub(crate) fn flag<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    d.deserialize_any(FlagVisitor)
}

struct FlagVisitor;

impl Visitor<'_> for FlagVisitor {
    type Value = bool;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a boolean")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<bool, E> {
        Ok(v)
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<bool, E> {
        Ok(v != 0)
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<bool, E> {
        Ok(v != 0)
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<bool, E> {
        let t = v.trim();
        if t.eq_ignore_ascii_case("true") || t == "1" || t.eq_ignore_ascii_case("y") {
            Ok(true)
        } else if t.eq_ignore_ascii_case("false")
            || t == "0"
            || t.is_empty()
            || t == "null"
            || t.eq_ignore_ascii_case("n")
        {
            Ok(false)
        } else {
            Err(E::invalid_value(Unexpected::Str(v), &self))
        }
    }

    fn visit_unit<E: de::Error>(self) -> Result<bool, E> {
        Ok(false)
    }
}

/// A `String` property: a string, or a number/boolean as its text; `null` → `""`.
pub(crate) fn text<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    Ok(opt_text(d)?.unwrap_or_default())
}

/// An optional `String` property: a string, or a number/boolean as its text; `null` → `None`.
pub(crate) fn opt_text<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    d.deserialize_any(TextVisitor)
}

struct TextVisitor;

impl Visitor<'_> for TextVisitor {
    type Value = Option<String>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a string")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Some(v.to_owned()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
        Ok(Some(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        Ok(Some(v.to_string()))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        Ok(Some(v.to_string()))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
        Ok(Some(v.to_string()))
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
        Ok(Some(v.to_string()))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn ref_paths_parse_names_indexes_and_escapes() {
        assert_eq!(
            parse_ref("$.a.b\\.c[2].d"),
            Some(vec![
                Seg::Key("a".into()),
                Seg::Key("b.c".into()),
                Seg::Index(2),
                Seg::Key("d".into())
            ])
        );
        assert_eq!(parse_ref("$"), Some(vec![]));
        assert_eq!(parse_ref("@"), None);
        assert_eq!(parse_ref(".."), None);
        assert_eq!(parse_ref("$[x]"), None);
    }

    #[test]
    fn refs_to_earlier_values_are_copied_and_cycles_dropped() {
        let mut v = json!({
            "a": {"attributes": {"k": "v"}},
            "b": {"attributes": {"$ref": "$.a.attributes"}, "self": {"$ref": "@"}, "up": {"$ref": "$.b"}},
            "list": [{"$ref": ".."}, {"$ref": "$.missing"}],
        });
        resolve_refs(&mut v);
        assert_eq!(
            v,
            json!({
                "a": {"attributes": {"k": "v"}},
                "b": {"attributes": {"k": "v"}},
                "list": [null, null],
            })
        );
    }
}
