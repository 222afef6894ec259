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

/// The `extFields` map: string keys and values, in insertion order (which is the order they are
/// written on the wire). Setting an existing key replaces its value in place.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExtFields(Vec<(String, String)>);

impl ExtFields {
    pub fn new() -> Self {
        Self(Vec::new())
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

impl<K: Into<String>, V: Into<String>> FromIterator<(K, V)> for ExtFields {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        let mut m = Self::new();
        for (k, v) in iter {
            m.insert(k, v);
        }
        m
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
