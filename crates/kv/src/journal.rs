//! The KV journal: `<kvConfigPath>.journal`, the changes made since `kvConfigPath` was last
//! written whole, one record each. A large store appends a change there (and fsyncs) instead
//! of rewriting the whole file for every put; the file is rewritten whole ("compacted") once
//! the journal has grown as large as it, at start-up and at shutdown, and is always complete
//! after a graceful stop (what Java and an operator read).
//!
//! Record: `u32 length | u32 CRC32 of the payload | payload` (big-endian), the payload a JSON
//! array: `["put", namespace, key, value]` (value `null`: Java's null put) or
//! `["delete", namespace, key]`. A torn or damaged tail (a crash mid-append) ends the replay:
//! records are appended only after every earlier one is durable, so nothing acknowledged
//! follows it.

use super::file::Table;

/// One change of the store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Op {
    /// Sets `key` (a `None` value removes it) in `namespace`, creating the namespace.
    Put { namespace: String, key: String, value: Option<String> },
    /// Removes `key` from `namespace` if both exist (the namespace stays).
    Delete { namespace: String, key: String },
}

impl Op {
    /// Applies the change to `table`. Java: `KVConfigManager#putKVConfig` / `#deleteKVConfig`
    pub(super) fn apply(&self, table: &mut Table) {
        match self {
            Op::Put { namespace, key, value } => {
                let ns = table.entry(namespace.clone()).or_default();
                match value {
                    Some(v) => ns.insert(key.clone(), v.clone()),
                    None => ns.remove(key),
                };
            }
            Op::Delete { namespace, key } => {
                if let Some(ns) = table.get_mut(namespace) {
                    ns.remove(key);
                }
            }
        }
    }

    fn payload(&self) -> Vec<u8> {
        let value = match self {
            Op::Put { namespace, key, value } => serde_json::json!(["put", namespace, key, value]),
            Op::Delete { namespace, key } => serde_json::json!(["delete", namespace, key]),
        };
        value.to_string().into_bytes()
    }

    fn from_payload(bytes: &[u8]) -> Option<Self> {
        let parts: Vec<Option<String>> = serde_json::from_slice(bytes).ok()?;
        let text = |i: usize| parts.get(i).cloned().flatten();
        match (text(0)?.as_str(), parts.len()) {
            ("put", 4) => Some(Op::Put { namespace: text(1)?, key: text(2)?, value: text(3) }),
            ("delete", 3) => Some(Op::Delete { namespace: text(1)?, key: text(2)? }),
            _ => None,
        }
    }

    /// Appends this change's record to `out`.
    pub(super) fn encode_into(&self, out: &mut Vec<u8>) {
        let payload = self.payload();
        // A record is one change of at most a frame's size: far below 4 GiB.
        out.extend_from_slice(&(payload.len() as u32).to_be_bytes());
        out.extend_from_slice(&crc32fast::hash(&payload).to_be_bytes());
        out.extend_from_slice(&payload);
    }
}

/// The changes in journal `bytes`, in order, up to the first torn or damaged record; and the
/// length of the good prefix (shorter than `bytes` when a tail was dropped).
pub(super) fn decode(bytes: &[u8]) -> (Vec<Op>, usize) {
    let mut ops = Vec::new();
    let mut at = 0;
    while let Some(head) = bytes.get(at..at + 8) {
        let len = u32::from_be_bytes([head[0], head[1], head[2], head[3]]) as usize;
        let crc = u32::from_be_bytes([head[4], head[5], head[6], head[7]]);
        let Some(payload) = bytes.get(at + 8..at + 8 + len) else { break };
        if crc32fast::hash(payload) != crc {
            break;
        }
        let Some(op) = Op::from_payload(payload) else { break };
        ops.push(op);
        at += 8 + len;
    }
    (ops, at)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put(ns: &str, key: &str, value: Option<&str>) -> Op {
        Op::Put { namespace: ns.into(), key: key.into(), value: value.map(Into::into) }
    }

    #[test]
    fn records_round_trip_and_a_torn_or_damaged_tail_ends_the_replay() {
        let ops = vec![
            put("NS", "k", Some("v \"quoted\" é")),
            put("NS", "gone", None),
            Op::Delete { namespace: "NS".into(), key: "k".into() },
        ];
        let mut bytes = Vec::new();
        for op in &ops {
            op.encode_into(&mut bytes);
        }
        assert_eq!(decode(&bytes), (ops.clone(), bytes.len()));
        for cut in 1..8 {
            let (got, good) = decode(&bytes[..bytes.len() - cut]);
            assert_eq!(got, ops[..2], "torn by {cut} bytes");
            assert!(good < bytes.len());
        }
        let mut damaged = bytes.clone();
        let last = damaged.len() - 2;
        damaged[last] ^= 1;
        assert_eq!(decode(&damaged).0, ops[..2]);
    }

    #[test]
    fn ops_apply_as_java_puts_and_deletes() {
        let mut table = Table::new();
        put("NS", "k", Some("v")).apply(&mut table);
        put("NS", "k2", None).apply(&mut table);
        Op::Delete { namespace: "NS".into(), key: "k".into() }.apply(&mut table);
        Op::Delete { namespace: "Missing".into(), key: "k".into() }.apply(&mut table);
        assert_eq!(table.len(), 1, "a delete creates no namespace");
        assert!(table["NS"].is_empty(), "the namespace stays");
    }
}
