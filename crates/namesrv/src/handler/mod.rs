//! Request handlers, one file per noun. Each decodes its typed header, calls the model and builds
//! the response Java would build (code, remark, header fields, body).

mod ahead;
pub mod broker;
pub mod config;
mod error;
pub mod kv;
pub mod route;
pub mod topic;

pub use error::{HandlerError, HandlerResult};

use remoting::{RemotingCommand, ResponseCode};

/// SUCCESS with no remark, no ext fields and no body.
pub(crate) fn success() -> RemotingCommand {
    RemotingCommand::response(ResponseCode::Success, None)
}

/// SUCCESS with a legacy-JSON body (fastjson's default form, used for every body but routes).
pub(crate) fn success_json<T: serde::Serialize>(body: &T) -> RemotingCommand {
    success().with_body(remoting::body::to_legacy_json(body))
}

/// Java prints a null `String` as `null` in remarks.
pub(crate) fn or_null(s: &Option<String>) -> &str {
    s.as_deref().unwrap_or("null")
}
