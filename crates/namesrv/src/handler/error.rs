//! What a handler answers when it does not succeed: [`HandlerError`]. A handler names what
//! happened; `dispatch.rs` alone turns it into a response code and remark.

use acl::Refusal;
use remoting::RemotingCommand;

/// What a handler answers: a response to send, or an error that `dispatch` maps to one.
pub type HandlerResult = Result<RemotingCommand, HandlerError>;

/// Every answer but a success, as handlers and admission name it. `dispatch` builds the
/// response (code, remark, and `"extFields":{}` where Java's carries an empty header).
#[derive(Debug, thiserror::Error)]
pub enum HandlerError {
    /// SYSTEM_ERROR (1) with this remark, logged (Java: an exception in the processor).
    #[error("{0}")]
    System(String),
    /// SYSTEM_ERROR (1) with no remark (Java: unregistration queue full).
    #[error("system error")]
    SystemNoRemark,
    /// REQUEST_CODE_NOT_SUPPORTED (3).
    #[error("request type {0} not supported")]
    NotSupported(i32),
    /// NO_PERMISSION (16): access control refused the request before any handler ran.
    #[error(transparent)]
    Refused(#[from] Refusal),
    /// NO_PERMISSION (16) with this remark: the handler refused the change (a black-listed
    /// config key).
    #[error("{0}")]
    NotPermitted(&'static str),
    /// SYSTEM_ERROR (1) with this remark and `"extFields":{}`: a resource cap refused the
    /// REGISTER_BROKER (the handler counted and logged the cap; the routes are unchanged).
    #[error("{0}")]
    Capped(String),
    /// SYSTEM_ERROR (1) with this remark and `"extFields":{}`: a REGISTER_BROKER not applied
    /// (its CRC does not match, or it was refused by the route tables).
    #[error("{0}")]
    RegisterFailed(&'static str),
    /// TOPIC_NOT_EXIST (17) with this remark.
    #[error("{0}")]
    TopicNotExist(String),
    /// QUERY_NOT_FOUND (22) with this remark.
    #[error("{0}")]
    NotFound(String),
    /// QUERY_NOT_FOUND (22) with this remark and `"extFields":{}` (GET_KV_CONFIG's empty
    /// response header).
    #[error("{0}")]
    ValueNotFound(String),
}
