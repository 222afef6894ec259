//! `getNamesrvConfig`, `updateNamesrvConfig`, `wipeWritePerm`, `addWritePerm`: commands that
//! address every nameserver of -n one by one.

use std::collections::BTreeMap;

use serde_json::json;

use super::{all_ok, on_each};
use crate::{AdminError, Ctx, Exit};

/// Java: GetNamesrvConfigCommand.
pub(crate) async fn get_config(ctx: &mut Ctx<'_>) -> Result<Exit, AdminError> {
    let configs =
        all_ok(on_each(&ctx.client, |ns| async move { ns.get_namesrv_config().await }).await)?;
    super::print_configs(ctx, &configs)
}

/// Java: UpdateNamesrvConfigCommand.
pub(crate) async fn update_config(
    ctx: &mut Ctx<'_>,
    key: &str,
    value: &str,
) -> Result<Exit, AdminError> {
    let props: BTreeMap<String, String> = [(key.to_owned(), value.to_owned())].into();
    let props = &props;
    let done = all_ok(
        on_each(&ctx.client, |ns| async move { ns.update_namesrv_config(props).await }).await,
    )?;
    let namesrvs: Vec<&String> = done.iter().map(|(a, _)| a).collect();
    if ctx.json {
        ctx.json(&json!({ "namesrvs": namesrvs, "key": key, "value": value }))?;
    } else {
        let list: Vec<&str> = namesrvs.iter().map(|s| s.as_str()).collect();
        writeln!(
            ctx.out,
            "update name server config success![{}]\n{key} : {value}",
            list.join(", ")
        )?;
    }
    Ok(0)
}

/// Java: WipeWritePermSubCommand / AddWritePermSubCommand: one line per nameserver. Unlike
/// Java, the exit code is 1 when any nameserver failed.
pub(crate) async fn write_perm(
    ctx: &mut Ctx<'_>,
    broker: &str,
    add: bool,
) -> Result<Exit, AdminError> {
    let results = on_each(&ctx.client, |ns| async move {
        if add {
            ns.add_write_perm(broker).await
        } else {
            ns.wipe_write_perm(broker).await
        }
    })
    .await;
    let verb = if add { "add" } else { "wipe" };
    let failed = results.iter().filter(|(_, r)| r.is_err()).count();
    if ctx.json {
        let rows: Vec<_> = results
            .iter()
            .map(|(addr, r)| match r {
                Ok(n) => json!({ "namesrv": addr, "ok": true, "topicCount": n }),
                Err(e) => json!({ "namesrv": addr, "ok": false, "error": e.to_string() }),
            })
            .collect();
        ctx.json(&json!({ "brokerName": broker, "results": rows }))?;
    } else {
        for (addr, r) in &results {
            match r {
                Ok(n) => writeln!(
                    ctx.out,
                    "{verb} write perm of broker[{broker}] in name server[{addr}] OK, {n}"
                )?,
                Err(e) => {
                    writeln!(
                        ctx.out,
                        "{verb} write perm of broker[{broker}] in name server[{addr}] Failed"
                    )?;
                    eprintln!("{e}");
                }
            }
        }
    }
    Ok(u8::from(failed > 0))
}
