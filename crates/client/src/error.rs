//! The client's error type: transport failures, and server answers that were not SUCCESS.

use std::time::Duration;

use remoting::ResponseCode;

/// Everything a client call can fail with.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The address list was empty, or an address was not `host:port`.
    #[error("bad nameserver address list {0:?}")]
    BadAddress(String),
    /// TCP connect failed.
    #[error("connect to {addr} failed: {source}")]
    Connect {
        addr: String,
        #[source]
        source: std::io::Error,
    },
    /// TCP connect did not finish in time.
    #[error("connect to {addr} timed out after {timeout:?}")]
    ConnectTimeout { addr: String, timeout: Duration },
    /// No response in time; the request is forgotten (a late response is dropped).
    #[error("request {code} to {addr} timed out after {timeout:?}")]
    Timeout { addr: String, code: i32, timeout: Duration },
    /// The connection broke (or was closed by the peer) before the response arrived.
    #[error("connection to {addr} closed: {reason}")]
    ConnectionClosed { addr: String, reason: String },
    /// The server answered with a code other than the one the call expects.
    #[error("{addr} answered code {code} ({name:?}): {remark}", name = ResponseCode::from_i32(*.code), remark = .remark.as_deref().unwrap_or("<no remark>"))]
    Server { addr: String, code: i32, remark: Option<String> },
    /// A response body or header field could not be decoded.
    #[error("bad response from {addr}: {reason}")]
    BadResponse { addr: String, reason: String },
    /// A request could not be encoded (e.g. a body too large for a frame).
    #[error("cannot encode request: {0}")]
    Encode(String),
    /// The client (or agent) was shut down.
    #[error("client is shut down")]
    Shutdown,
}

impl Error {
    /// The server's response code, when the server answered.
    pub fn code(&self) -> Option<i32> {
        match self {
            Self::Server { code, .. } => Some(*code),
            _ => None,
        }
    }

    /// The server's response code as a [`ResponseCode`], when the server answered.
    pub fn response_code(&self) -> Option<ResponseCode> {
        self.code().map(ResponseCode::from_i32)
    }

    /// The server's remark, when the server answered with one.
    pub fn remark(&self) -> Option<&str> {
        match self {
            Self::Server { remark, .. } => remark.as_deref(),
            _ => None,
        }
    }

    /// True for failures of the transport (connect, timeout, broken connection): another
    /// nameserver may do better. False when a server answered.
    pub fn is_transport(&self) -> bool {
        matches!(
            self,
            Self::Connect { .. }
                | Self::ConnectTimeout { .. }
                | Self::Timeout { .. }
                | Self::ConnectionClosed { .. }
        )
    }
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
