//! KV config requests: 100, 101, 102, 219.

use std::sync::Arc;

use remoting::body::KvTable;
use remoting::headers::{
    DeleteKvConfigRequestHeader, GetKvConfigRequestHeader, GetKvConfigResponseHeader,
    GetKvListByNamespaceRequestHeader, PutKvConfigRequestHeader,
};
use remoting::RemotingCommand;

use super::{or_null, success, success_json, HandlerError, HandlerResult};
use crate::limits::Cap;
use crate::state::State;
use ::kv::{KvError, KvStore};
use remoting::text::clip;

/// Runs a persisting KV operation off the async workers (it fsyncs).
async fn persist<F>(state: &State, op: F) -> Result<(), HandlerError>
where
    F: FnOnce(&KvStore) -> Result<(), KvError> + Send + 'static,
{
    let kv = Arc::clone(&state.kv);
    match tokio::task::spawn_blocking(move || op(&kv)).await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(HandlerError::System(format!("kv config not persisted: {e}"))),
        Err(e) => Err(HandlerError::System(format!("kv config task failed: {e}"))),
    }
}

/// 100: store a value; persisted before the answer.
/// Java: `DefaultRequestProcessor#putKVConfig`
pub async fn put(state: &State, request: &RemotingCommand) -> HandlerResult {
    let header: PutKvConfigRequestHeader = request.decode_header();
    let (Some(namespace), Some(key)) = (header.namespace, header.key) else {
        return Err(HandlerError::System("namespace or key is null".to_owned()));
    };
    let value = header.value;
    let max = usize::try_from(state.config.load().kv_config_max_value_bytes).unwrap_or(0);
    if let Some(len) = value.as_deref().map(str::len).filter(|len| *len > max) {
        let remark = format!(
            "kv config value of {len} bytes exceeds kvConfigMaxValueBytes ({max}); not stored"
        );
        state.limits.triggered(
            Cap::KvValueBytes,
            state.uptime_ms(),
            format_args!("{}/{}: {remark}", clip(&namespace), clip(&key)),
        );
        return Err(HandlerError::System(remark));
    }
    persist(state, move |kv| kv.put(&namespace, &key, value.as_deref())).await?;
    Ok(success())
}

/// 101: the value, or QUERY_NOT_FOUND.
/// Java: `DefaultRequestProcessor#getKVConfig`
pub fn get(state: &State, request: &RemotingCommand) -> HandlerResult {
    let header: GetKvConfigRequestHeader = request.decode_header();
    let value = match (&header.namespace, &header.key) {
        (Some(ns), Some(key)) => state.kv.get(ns, key),
        _ => None,
    };
    match value {
        Some(value) => Ok(success().with_header(&GetKvConfigResponseHeader { value: Some(value) })),
        None => Err(HandlerError::ValueNotFound(format!(
            "No config item, Namespace: {} Key: {}",
            or_null(&header.namespace),
            or_null(&header.key)
        ))),
    }
}

/// 102: remove a key (the namespace stays, even when empty); always persisted, always SUCCESS.
/// Java: `DefaultRequestProcessor#deleteKVConfig`
pub async fn delete(state: &State, request: &RemotingCommand) -> HandlerResult {
    let header: DeleteKvConfigRequestHeader = request.decode_header();
    if let (Some(namespace), Some(key)) = (header.namespace, header.key) {
        persist(state, move |kv| kv.delete(&namespace, &key)).await?;
    }
    Ok(success())
}

/// 219: a whole namespace as a KVTable, or QUERY_NOT_FOUND.
/// Java: `DefaultRequestProcessor#getKVListByNamespace`
pub fn list_namespace(state: &State, request: &RemotingCommand) -> HandlerResult {
    let header: GetKvListByNamespaceRequestHeader = request.decode_header();
    match header.namespace.as_deref().and_then(|ns| state.kv.list(ns)) {
        Some(table) => Ok(success_json(&KvTable { table })),
        None => Err(HandlerError::NotFound(format!(
            "No config item, Namespace: {}",
            or_null(&header.namespace)
        ))),
    }
}
