//! `updateKvConfig`, `deleteKvConfig`, `getKvConfig`, `getKvListByNamespace`.

use serde_json::json;

use super::{all_ok, on_each};
use crate::{AdminError, Ctx, Exit};

/// Java: UpdateKvConfigCommand → MQClientAPIImpl#putKVConfigValue (every nameserver).
pub(crate) async fn update(
    ctx: &mut Ctx<'_>,
    namespace: &str,
    key: &str,
    value: &str,
) -> Result<Exit, AdminError> {
    let done = all_ok(
        on_each(&ctx.client, |ns| async move { ns.put_kv_config(namespace, key, value).await })
            .await,
    )?;
    if ctx.json {
        let namesrvs: Vec<&String> = done.iter().map(|(a, _)| a).collect();
        ctx.json(
            &json!({ "namespace": namespace, "key": key, "value": value, "namesrvs": namesrvs }),
        )?;
    } else {
        writeln!(ctx.out, "create or update kv config to namespace success.")?;
    }
    Ok(0)
}

/// Java: DeleteKvConfigCommand → MQClientAPIImpl#deleteKVConfigValue (every nameserver).
pub(crate) async fn delete(
    ctx: &mut Ctx<'_>,
    namespace: &str,
    key: &str,
) -> Result<Exit, AdminError> {
    let done = all_ok(
        on_each(&ctx.client, |ns| async move { ns.delete_kv_config(namespace, key).await }).await,
    )?;
    if ctx.json {
        let namesrvs: Vec<&String> = done.iter().map(|(a, _)| a).collect();
        ctx.json(&json!({ "namespace": namespace, "key": key, "namesrvs": namesrvs }))?;
    } else {
        writeln!(ctx.out, "delete kv config from namespace success.")?;
    }
    Ok(0)
}

/// Java: GetKvConfigCommand (one nameserver). A missing key fails like Java's QUERY_NOT_FOUND.
pub(crate) async fn get(ctx: &mut Ctx<'_>, namespace: &str, key: &str) -> Result<Exit, AdminError> {
    let value = ctx.client.get_kv_config(namespace, key).await?.ok_or_else(|| {
        AdminError::Failed(format!("No config item, Namespace: {namespace} Key: {key}"))
    })?;
    if ctx.json {
        ctx.json(&json!({ "namespace": namespace, "key": key, "value": value }))?;
    } else {
        writeln!(
            ctx.out,
            "get kv config success, namespace: {namespace}, key: {key}, value: {value}."
        )?;
    }
    Ok(0)
}

/// GET_KVLIST_BY_NAMESPACE (one nameserver); printed like `getNamesrvConfig` entries.
pub(crate) async fn list(ctx: &mut Ctx<'_>, namespace: &str) -> Result<Exit, AdminError> {
    let table = ctx
        .client
        .get_kv_list_by_namespace(namespace)
        .await?
        .ok_or_else(|| AdminError::Failed(format!("No config item, Namespace: {namespace}")))?;
    if ctx.json {
        ctx.json(&json!({ "namespace": namespace, "table": table.table }))?;
    } else {
        for (k, v) in &table.table {
            writeln!(ctx.out, "{k:<50}=  {v}")?;
        }
    }
    Ok(0)
}
