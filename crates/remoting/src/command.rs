//! `RemotingCommand`: the decoded frame (header fields + body), and the ext-field map.

use bytes::Bytes;

use crate::code::{version, LanguageCode, RequestCode, ResponseCode};

/// `flag` bit 0: the command is a response.
pub const FLAG_RESPONSE: i32 = 1;
/// `flag` bit 1: the request is oneway; no response is written.
pub const FLAG_ONEWAY: i32 = 1 << 1;

/// Header serialization, the high byte of the frame's header-info int (Java `SerializeType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum SerializeType {
    #[default]
    Json = 0,
    RocketMq = 1,
}

impl SerializeType {
    /// The type for a header-info high byte; `None` for anything but 0 and 1.
    pub fn from_u8(b: u8) -> Option<Self> {
        match b {
            0 => Some(Self::Json),
            1 => Some(Self::RocketMq),
            _ => None,
        }
    }
}

/// The most entries an `extFields` object of a decoded header may have (repeated keys and null
/// values counted). A nameserver request carries a dozen at most; a header with more is refused
/// as malformed (the connection is closed), so no header can make decoding or lookups costly.
pub const MAX_EXT_FIELDS: usize = 4096;

/// The `extFields` map: string keys and values, in insertion order (which is the order they are
/// written on the wire). Setting an existing key replaces its value in place.
///
/// Decoders build it with [`ExtFields::from_wire`], in time linear in the number of entries
/// (Java keeps a `HashMap`); [`ExtFields::insert`] scans, which suits the few fields a response
/// carries.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExtFields(Vec<(String, String)>);

/// A header's `extFields` had more than [`MAX_EXT_FIELDS`] entries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("extFields has more than {MAX_EXT_FIELDS} entries")]
pub struct TooManyExtFields;

impl ExtFields {
    pub fn new() -> Self {
        Self(Vec::new())
    }

    /// The map a header's entries make when applied in wire order: a value sets its key (in
    /// place when present, else at the end), a `None` (a JSON `null`, a binary null value)
    /// removes it. Linear in the number of entries; more than [`MAX_EXT_FIELDS`] is an error.
    pub fn from_wire(entries: Vec<(String, Option<String>)>) -> Result<Self, TooManyExtFields> {
        if entries.len() > MAX_EXT_FIELDS {
            return Err(TooManyExtFields);
        }
        Ok(Self(resolve_entries(entries)))
    }

    /// The value for `key`, if present.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    /// Sets `key` to `value`, replacing an existing value in place.
    pub fn insert(&mut self, key: impl Into<String>, value: impl Into<String>) {
        let (key, value) = (key.into(), value.into());
        match self.0.iter_mut().find(|(k, _)| *k == key) {
            Some(slot) => slot.1 = value,
            None => self.0.push((key, value)),
        }
    }

    /// Removes `key`, returning its value.
    pub fn remove(&mut self, key: &str) -> Option<String> {
        let i = self.0.iter().position(|(k, _)| k == key)?;
        Some(self.0.remove(i).1)
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Entries in wire order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }
}

/// Up to this many entries are resolved by scanning (no allocation of a hash table for the
/// few fields of an ordinary request).
const SCAN_ENTRIES: usize = 16;

/// Applies `entries` in order to an empty insertion-ordered map (see [`ExtFields::from_wire`]):
/// a key's position is where its last insertion after its last removal put it, its value the
/// last one set. A hash table keeps it linear beyond [`SCAN_ENTRIES`].
fn resolve_entries<K: std::hash::Hash + Eq, V>(entries: Vec<(K, Option<V>)>) -> Vec<(K, V)> {
    if entries.len() <= SCAN_ENTRIES {
        let mut out: Vec<(K, V)> = Vec::with_capacity(entries.len());
        for (key, value) in entries {
            let at = out.iter().position(|(k, _)| *k == key);
            match (value, at) {
                (Some(value), Some(i)) => out[i].1 = value,
                (Some(value), None) => out.push((key, value)),
                (None, Some(i)) => {
                    out.remove(i);
                }
                (None, None) => {}
            }
        }
        return out;
    }
    // Slot i holds the value set at the i-th insertion (None once removed); `slot_of` maps a
    // key to its current slot.
    let mut slot_of: std::collections::HashMap<K, usize> =
        std::collections::HashMap::with_capacity(entries.len());
    let mut slots: Vec<Option<V>> = Vec::with_capacity(entries.len());
    for (key, value) in entries {
        match (value, slot_of.get(&key).copied()) {
            (Some(value), Some(i)) if slots[i].is_some() => slots[i] = Some(value),
            (Some(value), _) => {
                slot_of.insert(key, slots.len());
                slots.push(Some(value));
            }
            (None, Some(i)) => slots[i] = None,
            (None, None) => {}
        }
    }
    let mut keys: Vec<Option<K>> = (0..slots.len()).map(|_| None).collect();
    for (key, i) in slot_of {
        keys[i] = Some(key);
    }
    keys.into_iter().zip(slots).filter_map(|(key, value)| Some((key?, value?))).collect()
}

impl<K: Into<String>, V: Into<String>> FromIterator<(K, V)> for ExtFields {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        Self(resolve_entries(iter.into_iter().map(|(k, v)| (k.into(), Some(v.into()))).collect()))
    }
}

/// One remoting command, request or response (Java `RemotingCommand`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemotingCommand {
    /// Request code in requests, response code in responses.
    pub code: i32,
    pub language: LanguageCode,
    /// The sender's `MQVersion` ordinal.
    pub version: i32,
    /// Request id; a response echoes its request's value.
    pub opaque: i32,
    /// Bit 0 = response, bit 1 = oneway.
    pub flag: i32,
    pub remark: Option<String>,
    /// The custom header; `None` is "no extFields key", distinct from an empty map (`{}`).
    pub ext_fields: Option<ExtFields>,
    /// The frame body; `None` when the frame had no body bytes.
    pub body: Option<Bytes>,
    /// How the header was (or will be) serialized.
    pub serialize_type: SerializeType,
}

impl Default for RemotingCommand {
    fn default() -> Self {
        Self {
            code: 0,
            language: LanguageCode::Java,
            version: 0,
            opaque: 0,
            flag: 0,
            remark: None,
            ext_fields: None,
            body: None,
            serialize_type: SerializeType::Json,
        }
    }
}

impl RemotingCommand {
    /// A new request with this server's language and version; the caller sets the opaque.
    pub fn request(code: RequestCode) -> Self {
        Self { code: code.to_i32(), version: version::CURRENT, ..Self::default() }
    }

    /// A new response (flag 1) with code and remark, and no ext fields; the opaque is set by
    /// [`RemotingCommand::respond_to`] or by the caller.
    pub fn response(code: ResponseCode, remark: Option<String>) -> Self {
        Self {
            code: code.to_i32(),
            version: version::CURRENT,
            flag: FLAG_RESPONSE,
            remark,
            ..Self::default()
        }
    }

    /// Makes this command the response to `request`: echoes its opaque and sets flag to exactly 1.
    pub fn respond_to(mut self, request: &RemotingCommand) -> Self {
        self.opaque = request.opaque;
        self.flag = FLAG_RESPONSE;
        self
    }

    pub fn with_body(mut self, body: impl Into<Bytes>) -> Self {
        self.body = Some(body.into());
        self
    }

    pub fn with_ext_fields(mut self, ext: ExtFields) -> Self {
        self.ext_fields = Some(ext);
        self
    }

    pub fn with_opaque(mut self, opaque: i32) -> Self {
        self.opaque = opaque;
        self
    }

    /// True when flag bit 0 is set.
    pub fn is_response(&self) -> bool {
        self.flag & FLAG_RESPONSE != 0
    }

    /// True when flag bit 1 is set.
    pub fn is_oneway(&self) -> bool {
        self.flag & FLAG_ONEWAY != 0
    }

    /// Sets or clears the oneway bit.
    pub fn set_oneway(&mut self, oneway: bool) {
        if oneway {
            self.flag |= FLAG_ONEWAY;
        } else {
            self.flag &= !FLAG_ONEWAY;
        }
    }

    /// The code as a request code.
    pub fn request_code(&self) -> RequestCode {
        RequestCode::from_i32(self.code)
    }

    /// The code as a response code.
    pub fn response_code(&self) -> ResponseCode {
        ResponseCode::from_i32(self.code)
    }

    /// An ext field's value, if the map and the key are present.
    pub fn ext(&self, key: &str) -> Option<&str> {
        self.ext_fields.as_ref().and_then(|m| m.get(key))
    }

    /// The body bytes, or an empty slice.
    pub fn body_bytes(&self) -> &[u8] {
        self.body.as_deref().unwrap_or(&[])
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;
    use std::hash::{Hash, Hasher};

    use proptest::prelude::*;

    use super::*;

    /// The plain reading of the wire semantics: one entry at a time, by scanning.
    fn sequential(entries: &[(String, Option<String>)]) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = Vec::new();
        for (key, value) in entries {
            let at = out.iter().position(|(k, _)| k == key);
            match (value, at) {
                (Some(v), Some(i)) => out[i].1 = v.clone(),
                (Some(v), None) => out.push((key.clone(), v.clone())),
                (None, Some(i)) => {
                    out.remove(i);
                }
                (None, None) => {}
            }
        }
        out
    }

    proptest! {
        #[test]
        fn from_wire_applies_entries_in_order(
            entries in prop::collection::vec(("[a-e]{1,2}", prop::option::of("[x-z]")), 0..80)
        ) {
            let expected = sequential(&entries);
            let got = ExtFields::from_wire(entries).expect("under the cap");
            prop_assert_eq!(got.0, expected);
        }
    }

    thread_local! {
        static COMPARISONS: Cell<u64> = const { Cell::new(0) };
    }

    /// A key that counts how often it is compared.
    #[derive(Debug)]
    struct Counted(u64);

    impl PartialEq for Counted {
        fn eq(&self, other: &Self) -> bool {
            COMPARISONS.with(|c| c.set(c.get() + 1));
            self.0 == other.0
        }
    }

    impl Eq for Counted {}

    impl Hash for Counted {
        fn hash<H: Hasher>(&self, state: &mut H) {
            self.0.hash(state);
        }
    }

    fn comparisons_for(n: u64) -> u64 {
        COMPARISONS.with(|c| c.set(0));
        // Distinct keys, then every key again: the pattern that made each insert scan them all.
        let entries: Vec<_> = (0..n).chain(0..n).map(|i| (Counted(i), Some(i))).collect();
        assert_eq!(resolve_entries(entries).len(), n as usize);
        COMPARISONS.with(Cell::get)
    }

    // Counting comparisons, not time: a scan per entry costs n²/2 of them (50 million here),
    // a hash table about one per entry.
    #[test]
    fn resolving_many_entries_compares_each_key_a_bounded_number_of_times() {
        let n = 10_000;
        let comparisons = comparisons_for(n);
        assert!(comparisons <= 4 * n, "{comparisons} comparisons for {n} keys");
        assert!(comparisons_for(2 * n) <= 2 * comparisons + 4 * n, "grows linearly");
    }

    #[test]
    fn more_than_the_cap_of_entries_is_refused() {
        let entries: Vec<_> =
            (0..=MAX_EXT_FIELDS).map(|i| (format!("k{i}"), Some(String::new()))).collect();
        assert_eq!(ExtFields::from_wire(entries.clone()), Err(TooManyExtFields));
        let fields = ExtFields::from_wire(entries[1..].to_vec()).expect("at the cap");
        assert_eq!(fields.len(), MAX_EXT_FIELDS);
    }
}
