//! The namespaced KV store (PUT/GET/DELETE_KV_CONFIG, GET_KVLIST_BY_NAMESPACE) and its
//! persistence to `kvConfigPath` in Java's exact JSON shape,
//! `{"configTable":{"NS":{"key":"value"}}}`, so the file moves freely between Java and us.
//!
//! The API is synchronous; `put`/`delete` do blocking file I/O, so async code calls them from
//! `spawn_blocking`. Reads never wait for disk I/O: the map has its own lock, held only for
//! in-memory work, and a separate mutex serializes writers of the file. A `put`/`delete` that
//! returns `Ok` is on disk (fsynced, atomically renamed).
//!
//! Java: `KVConfigManager`

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError, RwLock};

use remoting::fastjson;
use serde_json::Value;
use thiserror::Error;

use crate::persist;

/// The namespace of per-topic order configs (`brokerName:queueNum;…`).
/// Java: `NamesrvUtil.NAMESPACE_ORDER_TOPIC_CONFIG`
pub const ORDER_TOPIC_CONFIG: &str = "ORDER_TOPIC_CONFIG";

/// A KV store failure.
#[derive(Debug, Error)]
pub enum KvError {
    /// The KV file exists but cannot be read (start-up stops rather than later overwriting it;
    /// Java only warns).
    #[error("cannot read KV config file {}: {source}", path.display())]
    Read {
        /// `kvConfigPath`.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The KV file is not `{"configTable":{ns:{key:value}}}` JSON (start-up stops, as Java).
    #[error("malformed KV config file {}: {reason}", path.display())]
    Malformed {
        /// `kvConfigPath`.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// The change is in memory but could not be written to disk.
    #[error("cannot persist KV config file {}: {source}", path.display())]
    Persist {
        /// `kvConfigPath`.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
}

type Table = BTreeMap<String, BTreeMap<String, String>>;

#[derive(Debug, Default)]
struct State {
    table: Table,
    /// Bumped on every change; lets a writer skip a file write a later writer already covered.
    generation: u64,
}

/// Namespaces → keys → values, persisted after every change. Namespaces are never removed.
#[derive(Debug)]
pub struct KvStore {
    path: PathBuf,
    state: RwLock<State>,
    /// The generation last written to disk; held while writing so writers never interleave.
    persisted: Mutex<u64>,
}

impl KvStore {
    /// An empty store that will persist to `path` (nothing is written until the first change).
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self { path: path.into(), state: RwLock::new(State::default()), persisted: Mutex::new(0) }
    }

    /// Loads `path`: a missing file (or an empty one, or `null`, as fastjson) gives an empty
    /// store; an unreadable or malformed file is an error naming the file. Accepts what
    /// fastjson accepts (single quotes, unquoted keys, trailing commas); null values are
    /// skipped, numbers and booleans kept as their text. Java: `KVConfigManager#load`
    pub fn load(path: impl Into<PathBuf>) -> Result<Self, KvError> {
        let store = Self::new(path);
        let bytes = match std::fs::read(&store.path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(store),
            Err(source) => return Err(KvError::Read { path: store.path.clone(), source }),
        };
        let table = parse_file(&bytes)
            .map_err(|reason| KvError::Malformed { path: store.path.clone(), reason })?;
        let namespaces = table.len();
        store.write_state().table = table;
        tracing::info!(path = %store.path.display(), namespaces, "load KV config table OK");
        Ok(store)
    }

    /// The file this store persists to.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn read_state(&self) -> std::sync::RwLockReadGuard<'_, State> {
        self.state.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn write_state(&self) -> std::sync::RwLockWriteGuard<'_, State> {
        self.state.write().unwrap_or_else(PoisonError::into_inner)
    }

    /// Sets `key` in `namespace` (creating the namespace), then persists. A `None` value (a
    /// request without `value`) is Java's null: the namespace is created and the key removed,
    /// since Java never returns, lists or writes a null value. Blocking.
    /// Java: `KVConfigManager#putKVConfig`
    pub fn put(&self, namespace: &str, key: &str, value: Option<&str>) -> Result<(), KvError> {
        let generation = {
            let mut state = self.write_state();
            let ns = state.table.entry(namespace.to_owned()).or_default();
            match value {
                Some(v) => ns.insert(key.to_owned(), v.to_owned()),
                None => ns.remove(key),
            };
            state.generation += 1;
            state.generation
        };
        tracing::info!(
            namespace = %clip(namespace),
            key = %clip(key),
            value = %value.map_or(Clipped("null"), clip),
            "putKVConfig"
        );
        self.persist(generation)
    }

    /// Removes `key` from `namespace` if both exist (the namespace stays, even empty), then
    /// always persists. Blocking. Java: `KVConfigManager#deleteKVConfig`
    pub fn delete(&self, namespace: &str, key: &str) -> Result<(), KvError> {
        let generation = {
            let mut state = self.write_state();
            if let Some(ns) = state.table.get_mut(namespace) {
                ns.remove(key);
            }
            state.generation += 1;
            state.generation
        };
        tracing::info!(namespace = %clip(namespace), key = %clip(key), "deleteKVConfig");
        self.persist(generation)
    }

    /// The value of `key` in `namespace`. Java: `KVConfigManager#getKVConfig`
    pub fn get(&self, namespace: &str, key: &str) -> Option<String> {
        self.read_state().table.get(namespace)?.get(key).cloned()
    }

    /// Every key of `namespace`, or `None` if the namespace does not exist (an emptied one
    /// exists: `Some` of an empty map). The 219 body is `KvTable { table }` of it.
    /// Java: `KVConfigManager#getKVListByNamespace`
    pub fn list(&self, namespace: &str) -> Option<BTreeMap<String, String>> {
        self.read_state().table.get(namespace).cloned()
    }

    /// The order config of `topic` (`ORDER_TOPIC_CONFIG` namespace), e.g. `broker-a:4;broker-b:4`.
    pub fn order_topic_conf(&self, topic: &str) -> Option<String> {
        self.get(ORDER_TOPIC_CONFIG, topic)
    }

    /// A copy of the whole table (for the periodic log dump).
    pub fn snapshot(&self) -> BTreeMap<String, BTreeMap<String, String>> {
        self.read_state().table.clone()
    }

    /// The file content for the current table: compact, fastjson escaping, sorted keys.
    /// Java: `KVConfigSerializeWrapper#toJson`
    pub fn to_json(&self) -> String {
        to_json(&self.read_state().table)
    }

    /// Writes the table if no writer has yet covered `generation`.
    fn persist(&self, generation: u64) -> Result<(), KvError> {
        let mut persisted = self.persisted.lock().unwrap_or_else(PoisonError::into_inner);
        if *persisted >= generation {
            return Ok(());
        }
        let (json, snapshot_generation) = {
            let state = self.read_state();
            (to_json(&state.table), state.generation)
        };
        persist::write_atomically(&self.path, json.as_bytes())
            .map_err(|source| KvError::Persist { path: self.path.clone(), source })?;
        *persisted = snapshot_generation;
        Ok(())
    }
}

/// How much of a namespace, key or value a log line shows.
const LOG_CHARS: usize = 256;

/// A string for a log line: whole up to [`LOG_CHARS`] characters, else its start and its
/// length (a 10 MB value is not logged whole).
pub fn clip(s: &str) -> Clipped<'_> {
    Clipped(s)
}

/// See [`clip`].
pub struct Clipped<'a>(&'a str);

impl std::fmt::Display for Clipped<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0.char_indices().nth(LOG_CHARS) {
            None => f.write_str(self.0),
            Some((end, _)) => write!(f, "{}…({} bytes)", &self.0[..end], self.0.len()),
        }
    }
}

fn push_json_string(out: &mut Vec<u8>, s: &str) {
    out.push(b'"');
    fastjson::escape_legacy_into(out, s);
    out.push(b'"');
}

fn to_json(table: &Table) -> String {
    let mut out = Vec::with_capacity(64);
    out.extend_from_slice(b"{\"configTable\":{");
    for (i, (namespace, entries)) in table.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        push_json_string(&mut out, namespace);
        out.extend_from_slice(b":{");
        for (j, (key, value)) in entries.iter().enumerate() {
            if j > 0 {
                out.push(b',');
            }
            push_json_string(&mut out, key);
            out.push(b':');
            push_json_string(&mut out, value);
        }
        out.push(b'}');
    }
    out.extend_from_slice(b"}}");
    // Only whole UTF-8 strings and ASCII were pushed.
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// A JSON scalar as Java's `HashMap<String,String>` value would hold it.
fn scalar_text(v: &Value) -> Option<Result<String, String>> {
    match v {
        Value::Null => None,
        Value::String(s) => Some(Ok(s.clone())),
        Value::Number(n) => Some(Ok(n.to_string())),
        Value::Bool(b) => Some(Ok(b.to_string())),
        Value::Array(_) | Value::Object(_) => {
            Some(Err("a value is an array or object, expected a string".to_owned()))
        }
    }
}

fn parse_file(bytes: &[u8]) -> Result<Table, String> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(Table::new());
    }
    let root = fastjson::parse_lenient(bytes).map_err(|e| e.to_string())?;
    let root = match root {
        Value::Null => return Ok(Table::new()),
        Value::Object(map) => map,
        _ => return Err("top level is not a JSON object".to_owned()),
    };
    let config_table = match root.get("configTable") {
        None | Some(Value::Null) => return Ok(Table::new()),
        Some(Value::Object(map)) => map,
        Some(_) => return Err("\"configTable\" is not an object".to_owned()),
    };
    let mut table = Table::new();
    for (namespace, entries) in config_table {
        let entries = match entries {
            Value::Null => continue,
            Value::Object(map) => map,
            _ => return Err(format!("namespace {namespace:?} is not an object")),
        };
        let ns = table.entry(namespace.clone()).or_default();
        for (key, value) in entries {
            if let Some(text) = scalar_text(value) {
                ns.insert(key.clone(), text.map_err(|e| format!("{namespace:?}/{key:?}: {e}"))?);
            }
        }
    }
    Ok(table)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store_in(dir: &tempfile::TempDir) -> KvStore {
        KvStore::load(dir.path().join("namesrv/kvConfig.json")).expect("load")
    }

    fn file_text(store: &KvStore) -> String {
        std::fs::read_to_string(store.path()).expect("kv file")
    }

    #[test]
    fn put_get_delete_list() {
        let dir = tempfile::tempdir().expect("tempdir");
        let kv = store_in(&dir);
        assert_eq!(kv.get("NS", "k"), None);
        assert_eq!(kv.list("NS"), None);
        kv.put("NS", "k", Some("v1")).expect("put");
        kv.put("NS", "k", Some("v2")).expect("overwrite");
        kv.put("NS", "k2", Some("x")).expect("put");
        assert_eq!(kv.get("NS", "k").as_deref(), Some("v2"));
        assert_eq!(kv.list("NS").expect("ns").len(), 2);
        kv.delete("NS", "k").expect("delete");
        assert_eq!(kv.get("NS", "k"), None);
        assert_eq!(kv.list("NS"), Some(BTreeMap::from([("k2".to_owned(), "x".to_owned())])));
    }

    #[test]
    fn namespace_is_kept_after_last_delete_and_persisted_empty() {
        let dir = tempfile::tempdir().expect("tempdir");
        let kv = store_in(&dir);
        kv.put("NS", "k", Some("v")).expect("put");
        kv.delete("NS", "k").expect("delete");
        assert_eq!(kv.list("NS"), Some(BTreeMap::new()));
        assert_eq!(file_text(&kv), r#"{"configTable":{"NS":{}}}"#);
    }

    #[test]
    fn noop_delete_still_persists() {
        let dir = tempfile::tempdir().expect("tempdir");
        let kv = store_in(&dir);
        kv.delete("missing", "k").expect("delete");
        assert_eq!(file_text(&kv), r#"{"configTable":{}}"#);
        assert_eq!(kv.list("missing"), None);
    }

    #[test]
    fn put_without_value_creates_namespace_but_no_key() {
        let dir = tempfile::tempdir().expect("tempdir");
        let kv = store_in(&dir);
        kv.put("NS", "k", None).expect("put null");
        assert_eq!(kv.get("NS", "k"), None);
        assert_eq!(kv.list("NS"), Some(BTreeMap::new()));
    }

    #[test]
    fn file_shape_is_java_compact_json_with_bak_of_previous() {
        let dir = tempfile::tempdir().expect("tempdir");
        let kv = store_in(&dir);
        kv.put(ORDER_TOPIC_CONFIG, "TopicTest", Some("broker-a:4;broker-b:4")).expect("put");
        let first = file_text(&kv);
        assert_eq!(
            first,
            r#"{"configTable":{"ORDER_TOPIC_CONFIG":{"TopicTest":"broker-a:4;broker-b:4"}}}"#
        );
        kv.put("b", "q\"\\\u{1}\u{2028}é", Some("x")).expect("put");
        assert_eq!(
            file_text(&kv),
            "{\"configTable\":{\"ORDER_TOPIC_CONFIG\":{\"TopicTest\":\"broker-a:4;broker-b:4\"},\
             \"b\":{\"q\\\"\\\\\\u0001\\u2028é\":\"x\"}}}"
        );
        let bak = std::fs::read_to_string(persist::with_suffix(kv.path(), ".bak")).expect("bak");
        assert_eq!(bak, first);
        let reloaded = KvStore::load(kv.path()).expect("reload");
        assert_eq!(reloaded.snapshot(), kv.snapshot());
    }

    #[test]
    fn loads_file_written_by_java() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("kvConfig.json");
        std::fs::write(
            &path,
            r#"{"configTable":{"ORDER_TOPIC_CONFIG":{"TopicTest":"broker-a:4;broker-b:4"}}}"#,
        )
        .expect("write");
        let kv = KvStore::load(&path).expect("load");
        assert_eq!(kv.order_topic_conf("TopicTest").as_deref(), Some("broker-a:4;broker-b:4"));
        assert_eq!(kv.order_topic_conf("Other"), None);
    }

    #[test]
    fn missing_empty_and_null_files_give_empty_store() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("kvConfig.json");
        assert!(KvStore::load(&path).expect("missing").snapshot().is_empty());
        std::fs::write(&path, " \n").expect("write");
        assert!(KvStore::load(&path).expect("empty").snapshot().is_empty());
        std::fs::write(&path, "null").expect("write");
        assert!(KvStore::load(&path).expect("null").snapshot().is_empty());
    }

    #[test]
    fn lenient_json_and_null_values_are_accepted() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("kvConfig.json");
        std::fs::write(&path, "{configTable:{'NS':{'a':'1','b':null,'c':2,},'N2':null}}")
            .expect("write");
        let kv = KvStore::load(&path).expect("load");
        assert_eq!(
            kv.snapshot(),
            BTreeMap::from([(
                "NS".to_owned(),
                BTreeMap::from([
                    ("a".to_owned(), "1".to_owned()),
                    ("c".to_owned(), "2".to_owned()),
                ])
            )])
        );
    }

    #[test]
    fn corrupt_file_is_an_error_naming_the_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("kvConfig.json");
        for bad in [r#"{"configTable":{"NS":{"k":"v"}"#, "[1,2]", r#"{"configTable":{"NS":["x"]}}"#]
        {
            std::fs::write(&path, bad).expect("write");
            let err = KvStore::load(&path).expect_err(bad);
            assert!(matches!(err, KvError::Malformed { .. }), "{bad}: {err:?}");
            assert!(err.to_string().contains("kvConfig.json"), "{err}");
        }
    }

    #[test]
    fn log_lines_show_at_most_256_characters_of_a_value() {
        assert_eq!(clip("short").to_string(), "short");
        let long = "é".repeat(10_000);
        let shown = clip(&long).to_string();
        assert_eq!(shown, format!("{}…(20000 bytes)", "é".repeat(256)));
    }

    #[test]
    fn concurrent_puts_all_reach_the_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let kv = std::sync::Arc::new(store_in(&dir));
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let kv = kv.clone();
                std::thread::spawn(move || {
                    for i in 0..10 {
                        kv.put("NS", &format!("{t}-{i}"), Some("v")).expect("put");
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().expect("thread");
        }
        let reloaded = KvStore::load(kv.path()).expect("reload");
        assert_eq!(reloaded.list("NS").expect("ns").len(), 40);
    }
}
