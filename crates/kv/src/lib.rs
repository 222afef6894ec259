//! The namespaced KV store (PUT/GET/DELETE_KV_CONFIG, GET_KVLIST_BY_NAMESPACE) and its
//! persistence to `kvConfigPath` in Java's exact JSON shape (`file.rs`), so the file moves
//! freely between Java and us.
//!
//! The API is synchronous; `put`/`delete` do blocking file I/O, so async code calls them from
//! `spawn_blocking`. A `put`/`delete` that returns `Ok` is durable, and only then applied
//! (visible to reads); one that fails changes nothing. Concurrent changes are written as one
//! batch (group commit: one fsync for all). A small store (≤ 256 KiB) is rewritten whole for
//! every batch (fsynced, atomically renamed), as Java writes it; a larger one appends the batch
//! to its journal (`journal.rs`), so a put into a store holding a 10 MB value costs the change,
//! not 20 MB of writing, and the file is rewritten whole once the journal is as large as it,
//! at load and at shutdown ([`KvStore::compact`]). Reads never wait for disk I/O.
//!
//! Java: `KVConfigManager`

mod file;
mod journal;

use remoting::text::clip;
use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, OnceLock, PoisonError, RwLock};

use thiserror::Error;

use conf::persist;
use file::{parse_file, to_json, Table};
use journal::Op;

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
    /// The change could not be written to disk; it was not applied either.
    #[error("cannot persist KV config file {}: {source}", path.display())]
    Persist {
        /// `kvConfigPath`.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
}

/// A store whose file is at most this large is rewritten whole for every change (one write,
/// like Java); a larger one appends its changes to the journal instead, so a put costs the
/// change, not the store.
const REWRITE_LIMIT: u64 = 256 * 1024;

/// The journal's first bytes: a magic, then the length and CRC32 of the `kvConfigPath` content
/// it extends. A journal whose base is not the file on disk is stale (the file was rewritten
/// after it, or replaced) and is dropped at load.
const JOURNAL_MAGIC: &[u8; 8] = b"RMQKVJ1\n";
const JOURNAL_HEADER: u64 = 8 + 8 + 4;

/// A failed write, as each waiting put or delete of its batch reports it.
type WriteFailure = (std::io::ErrorKind, String);

/// Namespaces → keys → values, persisted before every change is applied. Namespaces are never
/// removed.
#[derive(Debug)]
pub struct KvStore {
    path: PathBuf,
    table: RwLock<Table>,
    /// Changes waiting to be written, and whether a writer is at work (group commit).
    queue: Mutex<Queue>,
    /// Signalled when a batch has been written.
    batch_done: Condvar,
    /// The files; held by the writer of a batch.
    files: Mutex<Files>,
}

#[derive(Debug, Default)]
struct Queue {
    pending: Vec<Pending>,
    writing: bool,
}

#[derive(Debug)]
struct Pending {
    op: Op,
    outcome: Arc<OnceLock<Result<(), WriteFailure>>>,
}

/// What is on disk.
#[derive(Debug, Default)]
struct Files {
    /// Length and CRC32 of `kvConfigPath` as last written whole (or loaded).
    base: (u64, u32),
    /// The journal, open for appending, when it has records; and its length.
    journal: Option<File>,
    journal_len: u64,
    /// An append failed and could not be undone: the journal must not be appended to again
    /// before the next whole rewrite replaces it.
    journal_broken: bool,
}

impl KvStore {
    /// An empty store that will persist to `path` (nothing is written until the first change).
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            table: RwLock::new(Table::new()),
            queue: Mutex::new(Queue::default()),
            batch_done: Condvar::new(),
            files: Mutex::new(Files { base: (0, crc32fast::hash(b"")), ..Files::default() }),
        }
    }

    /// Loads `path`: a missing file (or an empty one, or `null`, as fastjson) gives an empty
    /// store; an unreadable or malformed file is an error naming the file. Accepts what
    /// fastjson accepts (single quotes, unquoted keys, trailing commas); null values are
    /// skipped, numbers and booleans kept as their text. Then the journal's changes, if it
    /// extends this file, are replayed and the file rewritten whole (a journal left by a crash).
    /// Java: `KVConfigManager#load`
    pub fn load(path: impl Into<PathBuf>) -> Result<Self, KvError> {
        let store = Self::new(path);
        let bytes = match std::fs::read(&store.path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(source) => return Err(KvError::Read { path: store.path.clone(), source }),
        };
        let mut table = parse_file(&bytes)
            .map_err(|reason| KvError::Malformed { path: store.path.clone(), reason })?;
        let replayed = {
            let mut files = lock(&store.files);
            files.base = (bytes.len() as u64, crc32fast::hash(&bytes));
            store.replay_journal(&mut table, &mut files)?
        };
        let namespaces = table.len();
        *write(&store.table) = table;
        if replayed > 0 {
            // The journal stays valid (and open for appending) if this fails.
            if let Err(e) = store.compact() {
                tracing::warn!(error = %e, "KV journal not compacted at load; kept");
            }
        }
        if !bytes.is_empty() || replayed > 0 {
            tracing::info!(path = %store.path.display(), namespaces, replayed, "load KV config table OK");
        }
        Ok(store)
    }

    /// Applies the journal's changes to `table` when the journal extends the file whose length
    /// and CRC are `files.base` (the journal is then kept open for appending, a torn tail cut
    /// off); drops a stale or empty one. The number of changes replayed.
    fn replay_journal(&self, table: &mut Table, files: &mut Files) -> Result<usize, KvError> {
        let path = self.journal_path();
        let read_error = |source| KvError::Read { path: path.clone(), source };
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
            Err(e) => return Err(read_error(e)),
        };
        let base = files.base;
        let records = bytes
            .strip_prefix(JOURNAL_MAGIC.as_slice())
            .filter(|rest| rest.len() >= 12)
            .filter(|rest| {
                let len = u64::from_be_bytes(rest[..8].try_into().unwrap_or_default());
                let crc = u32::from_be_bytes(rest[8..12].try_into().unwrap_or_default());
                (len, crc) == base
            })
            .map(|rest| &rest[12..]);
        let ops = match records {
            None => {
                tracing::warn!(path = %path.display(), "KV journal does not extend the KV file (stale); dropped");
                Vec::new()
            }
            Some(records) => {
                let (ops, good) = journal::decode(records);
                if good < records.len() {
                    tracing::warn!(path = %path.display(), dropped_bytes = records.len() - good, "KV journal ends in a torn record (a change never acknowledged); dropped");
                }
                if !ops.is_empty() {
                    let len = JOURNAL_HEADER + good as u64;
                    let file = OpenOptions::new().append(true).open(&path).map_err(read_error)?;
                    file.set_len(len).and_then(|()| file.sync_data()).map_err(read_error)?;
                    files.journal = Some(file);
                    files.journal_len = len;
                }
                ops
            }
        };
        if ops.is_empty() {
            std::fs::remove_file(&path).map_err(read_error)?;
        }
        for op in &ops {
            op.apply(table);
        }
        Ok(ops.len())
    }

    /// The file this store persists to.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn journal_path(&self) -> PathBuf {
        persist::with_suffix(&self.path, ".journal")
    }

    /// Sets `key` in `namespace` (creating the namespace) once that is durable. A `None` value
    /// (a request without `value`) is Java's null: the namespace is created and the key
    /// removed, since Java never returns, lists or writes a null value. Blocking.
    /// Java: `KVConfigManager#putKVConfig`
    pub fn put(&self, namespace: &str, key: &str, value: Option<&str>) -> Result<(), KvError> {
        tracing::info!(
            namespace = %clip(namespace),
            key = %clip(key),
            value = %clip(value.unwrap_or("null")),
            "putKVConfig"
        );
        self.commit(Op::Put {
            namespace: namespace.to_owned(),
            key: key.to_owned(),
            value: value.map(str::to_owned),
        })
    }

    /// Removes `key` from `namespace` if both exist (the namespace stays, even empty), once
    /// that is durable; always writes. Blocking. Java: `KVConfigManager#deleteKVConfig`
    pub fn delete(&self, namespace: &str, key: &str) -> Result<(), KvError> {
        tracing::info!(namespace = %clip(namespace), key = %clip(key), "deleteKVConfig");
        self.commit(Op::Delete { namespace: namespace.to_owned(), key: key.to_owned() })
    }

    /// The value of `key` in `namespace`. Java: `KVConfigManager#getKVConfig`
    pub fn get(&self, namespace: &str, key: &str) -> Option<String> {
        read(&self.table).get(namespace)?.get(key).cloned()
    }

    /// Every key of `namespace`, or `None` if the namespace does not exist (an emptied one
    /// exists: `Some` of an empty map). The 219 body is `KvTable { table }` of it.
    /// Java: `KVConfigManager#getKVListByNamespace`
    pub fn list(&self, namespace: &str) -> Option<BTreeMap<String, String>> {
        read(&self.table).get(namespace).cloned()
    }

    /// The order config of `topic` (`ORDER_TOPIC_CONFIG` namespace), e.g. `broker-a:4;broker-b:4`.
    pub fn order_topic_conf(&self, topic: &str) -> Option<String> {
        self.get(ORDER_TOPIC_CONFIG, topic)
    }

    /// A copy of the whole table (for the periodic log dump).
    pub fn snapshot(&self) -> BTreeMap<String, BTreeMap<String, String>> {
        read(&self.table).clone()
    }

    /// The file content for the current table: compact, fastjson escaping, sorted keys.
    /// Java: `KVConfigSerializeWrapper#toJson`
    pub fn to_json(&self) -> String {
        to_json(&read(&self.table))
    }

    /// Writes `kvConfigPath` whole and drops the journal, if there is one (at shutdown, so the
    /// file is complete for Java or an operator). Blocking.
    pub fn compact(&self) -> Result<(), KvError> {
        let mut files = lock(&self.files);
        if files.journal.is_none() && !files.journal_broken {
            return Ok(());
        }
        let json = to_json(&read(&self.table));
        self.rewrite(&mut files, &json)
            .map_err(|source| KvError::Persist { path: self.path.clone(), source })
    }

    /// Group commit: queues `op`; the first caller to find no writer at work writes every
    /// queued change as one batch (one fsync), applies them in order and wakes the others.
    /// Returns once `op` is durable and applied, or with the batch's write error (nothing of
    /// the batch applied).
    fn commit(&self, op: Op) -> Result<(), KvError> {
        let outcome = Arc::new(OnceLock::new());
        let mut queue = lock(&self.queue);
        queue.pending.push(Pending { op, outcome: Arc::clone(&outcome) });
        loop {
            if let Some(result) = outcome.get() {
                return result.clone().map_err(|(kind, message)| KvError::Persist {
                    path: self.path.clone(),
                    source: std::io::Error::new(kind, message),
                });
            }
            if queue.writing {
                queue = self.batch_done.wait(queue).unwrap_or_else(PoisonError::into_inner);
                continue;
            }
            queue.writing = true;
            let batch = std::mem::take(&mut queue.pending);
            drop(queue);
            let result = self.write_batch(&batch).map_err(|e| (e.kind(), e.to_string()));
            for pending in &batch {
                let _ = pending.outcome.set(result.clone());
            }
            queue = lock(&self.queue);
            queue.writing = false;
            self.batch_done.notify_all();
        }
    }

    /// Makes `batch` durable, then applies it: a small store is rewritten whole, a large one
    /// gets the batch appended to its journal (compacted once as large as the file).
    fn write_batch(&self, batch: &[Pending]) -> std::io::Result<()> {
        let mut files = lock(&self.files);
        if (files.base.0 <= REWRITE_LIMIT && files.journal.is_none()) || files.journal_broken {
            let mut next = read(&self.table).clone();
            for pending in batch {
                pending.op.apply(&mut next);
            }
            let json = to_json(&next);
            self.rewrite(&mut files, &json)?;
            *write(&self.table) = next;
            return Ok(());
        }
        let mut records = Vec::new();
        for pending in batch {
            pending.op.encode_into(&mut records);
        }
        self.append(&mut files, &records)?;
        {
            let mut table = write(&self.table);
            for pending in batch {
                pending.op.apply(&mut table);
            }
        }
        if files.journal_len > files.base.0.max(REWRITE_LIMIT) {
            let json = to_json(&read(&self.table));
            if let Err(e) = self.rewrite(&mut files, &json) {
                // The batch is durable in the journal; compaction is retried with the next.
                tracing::warn!(path = %self.path.display(), error = %e, "KV journal compaction failed");
            }
        }
        Ok(())
    }

    /// Replaces `kvConfigPath` by `json` (atomically, durably), then drops the journal, which
    /// it covers (a journal left behind by a crash in between no longer matches the file).
    fn rewrite(&self, files: &mut Files, json: &str) -> std::io::Result<()> {
        persist::write_atomically(&self.path, json.as_bytes())?;
        files.base = (json.len() as u64, crc32fast::hash(json.as_bytes()));
        if files.journal.take().is_some() || files.journal_broken {
            match std::fs::remove_file(self.journal_path()) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => {
                    tracing::warn!(error = %e, "stale KV journal not removed; it is ignored at load")
                }
            }
            files.journal_len = 0;
            files.journal_broken = false;
        }
        Ok(())
    }

    /// Appends `records` to the journal (created with its header first) and syncs them; on
    /// failure, cuts the journal back to its last durable record.
    fn append(&self, files: &mut Files, records: &[u8]) -> std::io::Result<()> {
        if files.journal.is_none() {
            let mut file = OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .open(self.journal_path())?;
            let mut header = JOURNAL_MAGIC.to_vec();
            header.extend_from_slice(&files.base.0.to_be_bytes());
            header.extend_from_slice(&files.base.1.to_be_bytes());
            file.write_all(&header)?;
            // The new file's name must survive a crash too.
            if let Some(dir) = self.path.parent().filter(|d| !d.as_os_str().is_empty()) {
                File::open(dir)?.sync_all()?;
            }
            files.journal = Some(file);
            files.journal_len = JOURNAL_HEADER;
        }
        let good = files.journal_len;
        let Some(file) = files.journal.as_mut() else { return Ok(()) };
        match file.write_all(records).and_then(|()| file.sync_data()) {
            Ok(()) => {
                files.journal_len += records.len() as u64;
                Ok(())
            }
            Err(e) => {
                if file.set_len(good).and_then(|()| file.sync_data()).is_err() {
                    files.journal_broken = true;
                }
                Err(e)
            }
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

fn read<T>(lock: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(PoisonError::into_inner)
}

fn write<T>(lock: &RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    lock.write().unwrap_or_else(PoisonError::into_inner)
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

    /// A store holding one value over the rewrite limit: its changes go to the journal.
    fn large_store(dir: &tempfile::TempDir) -> KvStore {
        let kv = store_in(dir);
        kv.put("BIG", "value", Some(&"x".repeat(300_000))).expect("big put");
        kv
    }

    fn journal_of(kv: &KvStore) -> PathBuf {
        kv.journal_path()
    }

    #[test]
    fn a_small_store_is_rewritten_whole_and_keeps_no_journal() {
        let dir = tempfile::tempdir().expect("tempdir");
        let kv = store_in(&dir);
        kv.put("NS", "k", Some("v")).expect("put");
        assert!(file_text(&kv).contains("\"k\":\"v\""));
        assert!(!journal_of(&kv).exists());
    }

    #[test]
    fn a_large_store_appends_changes_to_its_journal_and_a_reload_replays_them() {
        let dir = tempfile::tempdir().expect("tempdir");
        let kv = large_store(&dir);
        let file_before = file_text(&kv);
        for i in 0..10 {
            kv.put("NS", &format!("k{i}"), Some("v")).expect("put");
        }
        kv.delete("NS", "k3").expect("delete");
        assert_eq!(file_text(&kv), file_before, "the 300 KB file is not rewritten per put");
        assert!(journal_of(&kv).exists());
        // A crash now: a new store loads the file and replays the journal, then compacts.
        let reloaded = KvStore::load(kv.path()).expect("reload");
        assert_eq!(reloaded.snapshot(), kv.snapshot());
        assert_eq!(reloaded.list("NS").expect("ns").len(), 9);
        assert!(!journal_of(&kv).exists(), "compacted at load");
        assert_eq!(parse_file(file_text(&kv).as_bytes()).expect("parse"), kv.snapshot());
    }

    #[test]
    fn the_journal_is_compacted_once_it_is_as_large_as_the_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let kv = large_store(&dir);
        let value = "y".repeat(10_000);
        for i in 0..40 {
            kv.put("NS", &format!("k{i}"), Some(&value)).expect("put");
        }
        let journal_len = std::fs::metadata(journal_of(&kv)).map_or(0, |m| m.len());
        assert!(journal_len < 310_000, "compacted on the way: {journal_len} bytes");
        assert!(
            file_text(&kv).contains("\"k20\""),
            "the file was rewritten with the journal's changes"
        );
        assert_eq!(KvStore::load(kv.path()).expect("reload").snapshot(), kv.snapshot());
    }

    #[test]
    fn compacting_at_shutdown_leaves_the_whole_store_in_the_java_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let kv = large_store(&dir);
        kv.put("NS", "k", Some("v")).expect("put");
        kv.compact().expect("compact");
        assert!(!journal_of(&kv).exists());
        assert_eq!(parse_file(file_text(&kv).as_bytes()).expect("parse"), kv.snapshot());
    }

    #[test]
    fn a_torn_journal_tail_loses_only_the_unfinished_change() {
        let dir = tempfile::tempdir().expect("tempdir");
        let kv = large_store(&dir);
        kv.put("NS", "a", Some("1")).expect("put");
        kv.put("NS", "b", Some("2")).expect("put");
        let journal = journal_of(&kv);
        let len = std::fs::metadata(&journal).expect("journal").len();
        let file = OpenOptions::new().write(true).open(&journal).expect("open");
        file.set_len(len - 3).expect("tear");
        let reloaded = KvStore::load(kv.path()).expect("reload");
        assert_eq!(reloaded.get("NS", "a").as_deref(), Some("1"));
        assert_eq!(reloaded.get("NS", "b"), None, "the torn record");
        reloaded.put("NS", "c", Some("3")).expect("put after");
        let again = KvStore::load(kv.path()).expect("reload again");
        assert_eq!(again.get("NS", "c").as_deref(), Some("3"));
    }

    #[test]
    fn a_journal_that_does_not_extend_the_file_is_dropped() {
        let dir = tempfile::tempdir().expect("tempdir");
        let kv = large_store(&dir);
        kv.put("NS", "k", Some("v")).expect("put");
        // An operator puts another file in place (the journal extends the old one).
        std::fs::write(kv.path(), r#"{"configTable":{"OTHER":{"x":"y"}}}"#).expect("replace");
        let reloaded = KvStore::load(kv.path()).expect("reload");
        assert_eq!(reloaded.get("NS", "k"), None);
        assert_eq!(reloaded.get("OTHER", "x").as_deref(), Some("y"));
        assert!(!journal_of(&kv).exists());
    }

    #[test]
    fn a_change_that_cannot_be_written_is_not_applied() {
        let dir = tempfile::tempdir().expect("tempdir");
        let blocker = dir.path().join("not-a-dir");
        std::fs::write(&blocker, b"").expect("file");
        let kv = KvStore::new(blocker.join("kvConfig.json"));
        assert!(matches!(kv.put("NS", "k", Some("v")), Err(KvError::Persist { .. })));
        assert_eq!(kv.get("NS", "k"), None);
        assert_eq!(kv.list("NS"), None);
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
