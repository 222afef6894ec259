//! The access-control settings: whether it is on, which requests it checks and where the
//! accounts file is. The server reads them from its own keys (the nameserver's
//! `authenticationEnabled`, `authenticationMode`, `authConfigPath`) and hands them over; this
//! crate reads no configuration itself.

use std::path::PathBuf;
use std::time::Duration;

/// Which requests must be authenticated when access control is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AuthMode {
    /// Only state-changing requests (broker registration, KV and config writes, permission
    /// changes, topic deletion); reads stay open so unmodified clients keep working.
    #[default]
    Writes,
    /// Every request, reads included.
    All,
}

impl AuthMode {
    /// The value as written in the config: `writes` or `all`.
    pub fn as_str(self) -> &'static str {
        match self {
            AuthMode::Writes => "writes",
            AuthMode::All => "all",
        }
    }

    /// `writes` or `all`; anything else is `None`.
    pub fn parse(raw: &str) -> Option<AuthMode> {
        match raw {
            "writes" => Some(AuthMode::Writes),
            "all" => Some(AuthMode::All),
            _ => None,
        }
    }
}

/// See the module documentation.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Settings {
    /// Whether requests are checked at all (off: the server holds no gate).
    pub enabled: bool,
    /// Which requests are checked.
    pub mode: AuthMode,
    /// The accounts file (YAML), read at start and watched for changes.
    pub path: PathBuf,
    /// How long ten failures of one (address, access key) pair block it; `None`: 60 s.
    pub failure_window: Option<Duration>,
}
