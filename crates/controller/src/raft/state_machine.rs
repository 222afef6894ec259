//! The Raft state machine: applies committed events to the shared [`Replicas`] tables (which
//! handlers read under a short lock), builds snapshots of them and installs received ones.
//! Snapshots are kept in the node's [`Db`]; on restart the tables start from the last
//! snapshot and openraft re-applies the committed entries after it.

use std::io::Cursor;
use std::sync::{Arc, PoisonError, RwLock};

use openraft::storage::RaftStateMachine;
use openraft::{
    AnyError, Entry, EntryPayload, LogId, OptionalSend, RaftSnapshotBuilder, Snapshot,
    SnapshotMeta, StorageError, StorageIOError, StoredMembership,
};
use serde::{Deserialize, Serialize};

use super::store::{Db, DbError, SNAPSHOT};
use super::{PeerNode, TypeConfig};
use crate::replicas::{Applied, Replicas};

/// The tables every handler reads; only the state machine writes them.
pub type SharedReplicas = Arc<RwLock<Replicas>>;

/// A snapshot as stored: openraft's metadata and the tables as JSON.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct StoredSnapshot {
    meta: SnapshotMeta<u64, PeerNode>,
    data: Vec<u8>,
}

/// The state machine of one node.
pub struct StateMachine {
    db: Db,
    replicas: SharedReplicas,
    last_applied: Option<LogId<u64>>,
    last_membership: StoredMembership<u64, PeerNode>,
    snapshot_idx: u64,
}

fn sm_read(e: DbError) -> StorageError<u64> {
    StorageIOError::read_state_machine(AnyError::new(&e)).into()
}

fn snapshot_write(e: impl std::error::Error + 'static) -> StorageError<u64> {
    StorageIOError::write_snapshot(None, AnyError::new(&e)).into()
}

impl StateMachine {
    /// Opens the state machine of `db`: the tables of its last snapshot, or empty ones.
    pub async fn open(db: Db) -> Result<Self, DbError> {
        let stored: Option<StoredSnapshot> = db.get_meta(SNAPSHOT).await?;
        let mut sm = Self {
            db,
            replicas: SharedReplicas::default(),
            last_applied: None,
            last_membership: StoredMembership::default(),
            snapshot_idx: 0,
        };
        if let Some(s) = stored {
            let tables: Replicas = serde_json::from_slice(&s.data)?;
            *sm.replicas.write().unwrap_or_else(PoisonError::into_inner) = tables;
            sm.last_applied = s.meta.last_log_id;
            sm.last_membership = s.meta.last_membership;
            tracing::info!(last_log_id = ?sm.last_applied, "controller state loaded from its snapshot");
        }
        Ok(sm)
    }

    /// The tables, shared with the request handlers.
    pub fn replicas(&self) -> SharedReplicas {
        self.replicas.clone()
    }
}

/// Builds a snapshot of the tables as they were when the builder was made.
pub struct SnapshotBuilder {
    db: Db,
    tables: Replicas,
    last_applied: Option<LogId<u64>>,
    last_membership: StoredMembership<u64, PeerNode>,
    snapshot_id: String,
}

impl RaftSnapshotBuilder<TypeConfig> for SnapshotBuilder {
    async fn build_snapshot(&mut self) -> Result<Snapshot<TypeConfig>, StorageError<u64>> {
        let data = serde_json::to_vec(&self.tables).map_err(snapshot_write)?;
        let meta = SnapshotMeta {
            last_log_id: self.last_applied,
            last_membership: self.last_membership.clone(),
            snapshot_id: self.snapshot_id.clone(),
        };
        let stored = StoredSnapshot { meta: meta.clone(), data: data.clone() };
        self.db.put_meta(SNAPSHOT, &stored).await.map_err(snapshot_write)?;
        tracing::info!(last_log_id = ?self.last_applied, bytes = data.len(), "controller snapshot saved");
        Ok(Snapshot { meta, snapshot: Box::new(Cursor::new(data)) })
    }
}

impl RaftStateMachine<TypeConfig> for StateMachine {
    type SnapshotBuilder = SnapshotBuilder;

    async fn applied_state(
        &mut self,
    ) -> Result<(Option<LogId<u64>>, StoredMembership<u64, PeerNode>), StorageError<u64>> {
        Ok((self.last_applied, self.last_membership.clone()))
    }

    async fn apply<I>(&mut self, entries: I) -> Result<Vec<Applied>, StorageError<u64>>
    where
        I: IntoIterator<Item = Entry<TypeConfig>> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        let mut out = Vec::new();
        let mut tables = self.replicas.write().unwrap_or_else(PoisonError::into_inner);
        for entry in entries {
            self.last_applied = Some(entry.log_id);
            out.push(match entry.payload {
                EntryPayload::Blank => Applied::Done,
                EntryPayload::Normal(event) => {
                    let applied = tables.apply(&event);
                    tracing::info!(log_id = %entry.log_id, broker = %event.broker_name(), ?applied, ?event, "event applied");
                    applied
                }
                EntryPayload::Membership(m) => {
                    self.last_membership = StoredMembership::new(Some(entry.log_id), m);
                    Applied::Done
                }
            });
        }
        Ok(out)
    }

    async fn get_snapshot_builder(&mut self) -> Self::SnapshotBuilder {
        self.snapshot_idx += 1;
        let last = self.last_applied.map_or_else(|| "none".to_owned(), |l| l.to_string());
        SnapshotBuilder {
            db: self.db.clone(),
            tables: self.replicas.read().unwrap_or_else(PoisonError::into_inner).clone(),
            last_applied: self.last_applied,
            last_membership: self.last_membership.clone(),
            snapshot_id: format!("{last}-{}", self.snapshot_idx),
        }
    }

    async fn begin_receiving_snapshot(
        &mut self,
    ) -> Result<Box<Cursor<Vec<u8>>>, StorageError<u64>> {
        Ok(Box::new(Cursor::new(Vec::new())))
    }

    async fn install_snapshot(
        &mut self,
        meta: &SnapshotMeta<u64, PeerNode>,
        snapshot: Box<Cursor<Vec<u8>>>,
    ) -> Result<(), StorageError<u64>> {
        let data = snapshot.into_inner();
        let tables: Replicas = serde_json::from_slice(&data).map_err(|e| {
            StorageError::from(StorageIOError::read_snapshot(
                Some(meta.signature()),
                AnyError::new(&e),
            ))
        })?;
        let stored = StoredSnapshot { meta: meta.clone(), data };
        self.db.put_meta(SNAPSHOT, &stored).await.map_err(snapshot_write)?;
        *self.replicas.write().unwrap_or_else(PoisonError::into_inner) = tables;
        self.last_applied = meta.last_log_id;
        self.last_membership = meta.last_membership.clone();
        tracing::info!(last_log_id = ?meta.last_log_id, "controller snapshot installed");
        Ok(())
    }

    async fn get_current_snapshot(
        &mut self,
    ) -> Result<Option<Snapshot<TypeConfig>>, StorageError<u64>> {
        let stored: Option<StoredSnapshot> = self.db.get_meta(SNAPSHOT).await.map_err(sm_read)?;
        Ok(stored.map(|s| Snapshot { meta: s.meta, snapshot: Box::new(Cursor::new(s.data)) }))
    }
}
