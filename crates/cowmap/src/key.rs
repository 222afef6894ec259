//! `InlineKey`: a key a value carries ([`super::Keyed`]), inline when it fits in 40 bytes.

/// A string key, inline when it fits (most topic names do; RocketMQ allows 127 characters): a
/// look-up compares it where it reads the value, with no pointer of its own to follow (#25: a
/// topic name in an allocation of its own cost S1's reads 6 % in paired rounds).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InlineKey {
    Inline(arrayvec::ArrayString<40>),
    Heap(Box<str>),
}

impl InlineKey {
    pub fn new(key: &str) -> Self {
        arrayvec::ArrayString::from(key).map_or_else(|_| Self::Heap(key.into()), Self::Inline)
    }

    pub fn as_str(&self) -> &str {
        match self {
            Self::Inline(key) => key,
            Self::Heap(key) => key,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_is_inline_up_to_40_bytes() {
        for (key, inline) in
            [("", true), ("t", true), (&*"é".repeat(20), true), (&*"x".repeat(41), false)]
        {
            let k = InlineKey::new(key);
            assert_eq!((k.as_str(), matches!(k, InlineKey::Inline(_))), (key, inline));
        }
    }
}
