//! Config requests: 318 UPDATE_NAMESRV_CONFIG, 319 GET_NAMESRV_CONFIG.

use remoting::RemotingCommand;

use super::{success, HandlerError, HandlerResult};
use crate::config::ConfigUpdateError;
use crate::state::State;

/// 318: apply a properties body; black-listed keys are refused; the config file is rewritten.
/// Unlike Java, a value that does not parse rejects the update (SYSTEM_ERROR naming the key).
/// Java: `DefaultRequestProcessor#updateConfig`
pub async fn update(state: &State, request: &RemotingCommand) -> HandlerResult {
    let Some(body) = request.body.clone() else {
        return Ok(success());
    };
    let config = std::sync::Arc::clone(&state.config);
    let keys: Vec<String> = crate::properties::parse_bytes(&body)
        .map(|entries| entries.into_iter().map(|(k, _)| k).collect())
        .unwrap_or_default();
    let outcome = tokio::task::spawn_blocking(move || config.apply_update(&body))
        .await
        .map_err(|e| HandlerError::System(format!("config update task failed: {e}")))?;
    match outcome {
        Ok(()) => {
            state.event(events::NewEvent::new(
                events::EventKind::ConfigUpdated,
                format!("keys: {}", keys.join(", ")),
            ));
            Ok(success())
        }
        Err(ConfigUpdateError::NoPermission { .. }) => {
            Err(HandlerError::NotPermitted("Can not update config in black list."))
        }
        Err(ConfigUpdateError::Parse(_)) => {
            Err(HandlerError::System("string2Properties error".to_owned()))
        }
        Err(e) => Err(HandlerError::System(e.to_string())),
    }
}

/// 319: every config key as sorted `key=value` lines, secrets redacted; no body when there are
/// none. Java: `DefaultRequestProcessor#getConfig`
pub fn get(state: &State) -> HandlerResult {
    let text = state.config.to_public_properties_text();
    if text.trim().is_empty() {
        return Ok(success());
    }
    Ok(success().with_body(text.into_bytes()))
}
