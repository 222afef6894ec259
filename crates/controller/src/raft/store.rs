//! The durable half of a node: the Raft log, the vote, the committed index and the latest
//! state-machine snapshot, in one redb file (`<controllerStorePath>/controller.redb`). Every
//! write is a redb transaction committed with fsync before it is acknowledged; redb's
//! copy-on-write commits leave the file either before or after a write, never torn.
//! Blocking redb calls run on tokio's blocking pool.

use std::fmt::Debug;
use std::ops::RangeBounds;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use openraft::storage::{LogFlushed, LogState, RaftLogStorage};
use openraft::{
    AnyError, Entry, LogId, OptionalSend, RaftLogReader, StorageError, StorageIOError, Vote,
};
use redb::{Database, ReadableTable, TableDefinition};
use serde::de::DeserializeOwned;
use serde::Serialize;

use super::TypeConfig;

const LOGS: TableDefinition<u64, &[u8]> = TableDefinition::new("logs");
const META: TableDefinition<&str, &[u8]> = TableDefinition::new("meta");

const VOTE: &str = "vote";
const COMMITTED: &str = "committed";
const PURGED: &str = "purged";
pub(crate) const SNAPSHOT: &str = "snapshot";

/// The store file's name inside `controllerStorePath`.
pub const FILE_NAME: &str = "controller.redb";

/// A store failure.
#[derive(Debug, thiserror::Error)]
pub enum DbError {
    /// Boxed: redb's error is large and this travels through every store call.
    #[error("store: {0}")]
    Redb(Box<redb::Error>),
    #[error("store record: {0}")]
    Json(#[from] serde_json::Error),
    #[error("store task: {0}")]
    Join(#[from] tokio::task::JoinError),
    #[error("cannot create the store directory {path}: {source}")]
    Dir { path: String, source: std::io::Error },
}

macro_rules! from_redb {
    ($($t:ty),*) => { $(impl From<$t> for DbError { fn from(e: $t) -> Self { DbError::Redb(Box::new(e.into())) } })* };
}
from_redb!(
    redb::Error,
    redb::DatabaseError,
    redb::TransactionError,
    redb::TableError,
    redb::StorageError,
    redb::CommitError
);

/// The node's database; cheap to clone.
#[derive(Clone)]
pub struct Db {
    db: Arc<Database>,
}

impl Db {
    /// Opens (creating if needed) `<dir>/controller.redb` and its tables. Blocking.
    pub fn open(dir: &Path) -> Result<Self, DbError> {
        std::fs::create_dir_all(dir)
            .map_err(|source| DbError::Dir { path: dir.display().to_string(), source })?;
        let db = Database::create(dir.join(FILE_NAME))?;
        let txn = db.begin_write()?;
        txn.open_table(LOGS)?;
        txn.open_table(META)?;
        txn.commit()?;
        Ok(Self { db: Arc::new(db) })
    }

    /// How many handles share the database (this one included).
    pub fn handles(&self) -> usize {
        Arc::strong_count(&self.db)
    }

    /// Runs `f` on the blocking pool.
    async fn run<T, F>(&self, f: F) -> Result<T, DbError>
    where
        T: Send + 'static,
        F: FnOnce(&Database) -> Result<T, DbError> + Send + 'static,
    {
        let db = self.db.clone();
        tokio::task::spawn_blocking(move || f(&db)).await?
    }

    /// Reads a JSON record of the meta table.
    pub(crate) async fn get_meta<T: DeserializeOwned + Send + 'static>(
        &self,
        key: &'static str,
    ) -> Result<Option<T>, DbError> {
        self.run(move |db| {
            let txn = db.begin_read()?;
            let table = txn.open_table(META)?;
            let value = table.get(key)?;
            Ok(match value {
                Some(v) => Some(serde_json::from_slice(v.value())?),
                None => None,
            })
        })
        .await
    }

    /// Writes a JSON record of the meta table, durably.
    pub(crate) async fn put_meta<T: Serialize>(
        &self,
        key: &'static str,
        value: &T,
    ) -> Result<(), DbError> {
        let bytes = serde_json::to_vec(value)?;
        self.run(move |db| {
            let txn = db.begin_write()?;
            txn.open_table(META)?.insert(key, bytes.as_slice())?;
            txn.commit()?;
            Ok(())
        })
        .await
    }
}

fn io_write(e: DbError) -> StorageError<u64> {
    StorageIOError::write_logs(AnyError::new(&e)).into()
}

fn io_read(e: DbError) -> StorageError<u64> {
    StorageIOError::read_logs(AnyError::new(&e)).into()
}

/// The Raft log, vote and committed index over [`Db`].
#[derive(Clone)]
pub struct LogStore {
    db: Db,
    /// The last committed index saved or read, for the node's status.
    committed: CommittedIndex,
}

impl LogStore {
    /// The log of `db`.
    pub fn new(db: Db) -> Self {
        Self { db, committed: CommittedIndex::default() }
    }

    /// The last committed log index this store saved, shared with every clone (read by the
    /// node's status while openraft owns the store).
    pub fn committed_index(&self) -> CommittedIndex {
        self.committed.clone()
    }
}

/// The last committed log index a [`LogStore`] saved.
#[derive(Debug, Clone, Default)]
pub struct CommittedIndex(Arc<AtomicU64>);

impl CommittedIndex {
    /// The index, `None` before the first commit was saved.
    pub fn get(&self) -> Option<u64> {
        self.0.load(Ordering::Relaxed).checked_sub(1)
    }

    fn set(&self, committed: Option<&LogId<u64>>) {
        self.0.store(committed.map_or(0, |c| c.index.saturating_add(1)), Ordering::Relaxed);
    }
}

impl RaftLogReader<TypeConfig> for LogStore {
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug + OptionalSend>(
        &mut self,
        range: RB,
    ) -> Result<Vec<Entry<TypeConfig>>, StorageError<u64>> {
        let start = range.start_bound().cloned();
        let end = range.end_bound().cloned();
        self.db
            .run(move |db| {
                let txn = db.begin_read()?;
                let table = txn.open_table(LOGS)?;
                let mut out = Vec::new();
                for item in table.range::<u64>((start, end))? {
                    let (_, v) = item?;
                    out.push(serde_json::from_slice(v.value())?);
                }
                Ok(out)
            })
            .await
            .map_err(io_read)
    }
}

impl RaftLogStorage<TypeConfig> for LogStore {
    type LogReader = Self;

    async fn get_log_state(&mut self) -> Result<LogState<TypeConfig>, StorageError<u64>> {
        let purged: Option<LogId<u64>> = self.db.get_meta(PURGED).await.map_err(io_read)?;
        let last: Option<Entry<TypeConfig>> = self
            .db
            .run(|db| {
                let txn = db.begin_read()?;
                let table = txn.open_table(LOGS)?;
                let last = table.last()?;
                Ok(match last {
                    Some((_, v)) => Some(serde_json::from_slice(v.value())?),
                    None => None,
                })
            })
            .await
            .map_err(io_read)?;
        let last_log_id = last.map(|e| e.log_id).or(purged);
        Ok(LogState { last_purged_log_id: purged, last_log_id })
    }

    async fn get_log_reader(&mut self) -> Self::LogReader {
        self.clone()
    }

    async fn save_vote(&mut self, vote: &Vote<u64>) -> Result<(), StorageError<u64>> {
        self.db
            .put_meta(VOTE, vote)
            .await
            .map_err(|e| StorageIOError::write_vote(AnyError::new(&e)).into())
    }

    async fn read_vote(&mut self) -> Result<Option<Vote<u64>>, StorageError<u64>> {
        self.db
            .get_meta(VOTE)
            .await
            .map_err(|e| StorageIOError::read_vote(AnyError::new(&e)).into())
    }

    async fn save_committed(
        &mut self,
        committed: Option<LogId<u64>>,
    ) -> Result<(), StorageError<u64>> {
        self.db.put_meta(COMMITTED, &committed).await.map_err(io_write)?;
        self.committed.set(committed.as_ref());
        Ok(())
    }

    async fn read_committed(&mut self) -> Result<Option<LogId<u64>>, StorageError<u64>> {
        let committed =
            self.db.get_meta::<Option<LogId<u64>>>(COMMITTED).await.map_err(io_read)?.flatten();
        self.committed.set(committed.as_ref());
        Ok(committed)
    }

    async fn append<I>(
        &mut self,
        entries: I,
        callback: LogFlushed<TypeConfig>,
    ) -> Result<(), StorageError<u64>>
    where
        I: IntoIterator<Item = Entry<TypeConfig>> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        let mut records = Vec::new();
        for entry in entries {
            let bytes = serde_json::to_vec(&entry).map_err(|e| io_write(e.into()))?;
            records.push((entry.log_id.index, bytes));
        }
        let result = self
            .db
            .run(move |db| {
                let txn = db.begin_write()?;
                {
                    let mut table = txn.open_table(LOGS)?;
                    for (index, bytes) in &records {
                        table.insert(*index, bytes.as_slice())?;
                    }
                }
                txn.commit()?;
                Ok(())
            })
            .await;
        match result {
            Ok(()) => {
                callback.log_io_completed(Ok(()));
                Ok(())
            }
            Err(e) => {
                callback.log_io_completed(Err(std::io::Error::other(e.to_string())));
                Err(io_write(e))
            }
        }
    }

    async fn truncate(&mut self, log_id: LogId<u64>) -> Result<(), StorageError<u64>> {
        tracing::debug!(%log_id, "truncating the log");
        self.db
            .run(move |db| {
                let txn = db.begin_write()?;
                txn.open_table(LOGS)?.retain_in(log_id.index.., |_, _| false)?;
                txn.commit()?;
                Ok(())
            })
            .await
            .map_err(io_write)
    }

    async fn purge(&mut self, log_id: LogId<u64>) -> Result<(), StorageError<u64>> {
        tracing::debug!(%log_id, "purging the log");
        let purged = serde_json::to_vec(&log_id).map_err(|e| io_write(e.into()))?;
        self.db
            .run(move |db| {
                let txn = db.begin_write()?;
                txn.open_table(META)?.insert(PURGED, purged.as_slice())?;
                txn.open_table(LOGS)?.retain_in(..=log_id.index, |_, _| false)?;
                txn.commit()?;
                Ok(())
            })
            .await
            .map_err(io_write)
    }
}

#[cfg(test)]
mod tests {
    use openraft::testing::{StoreBuilder, Suite};

    use super::*;
    use crate::raft::state_machine::StateMachine;

    struct Builder;

    impl StoreBuilder<TypeConfig, LogStore, StateMachine, tempfile::TempDir> for Builder {
        async fn build(
            &self,
        ) -> Result<(tempfile::TempDir, LogStore, StateMachine), StorageError<u64>> {
            let dir = tempfile::tempdir().expect("tempdir");
            let db = Db::open(dir.path()).expect("open");
            let sm = StateMachine::open(db.clone()).await.expect("state machine");
            Ok((dir, LogStore::new(db), sm))
        }
    }

    /// openraft's own conformance suite for log stores and state machines.
    #[test]
    fn passes_the_openraft_storage_suite() {
        Suite::test_all(Builder).expect("suite");
    }
}
