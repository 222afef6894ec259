//! The nameserver configuration: one [`Config`] holding every `NamesrvConfig` and
//! `NettyServerConfig` key under its Java name and Java default, the TLS and serialize-type keys
//! that Java takes from JVM system properties, and a bag of extra keys; [`SharedConfig`], the
//! live copy that UPDATE_NAMESRV_CONFIG (318) swaps and GET_NAMESRV_CONFIG (319) prints.
//!
//! Precedence: defaults < `-c` file < command line (`-c` itself sets `configStorePath`).
//! Unlike Java, which silently ignores a value it cannot convert, a bad value is an error that
//! names the key and the value, both at start-up and in an update.
//!
//! By noun: [`keys`] is the key table (every key, its Java name, default and documentation);
//! `rules.rs` what a value must satisfy (ranges, update floors, the black list); `access.rs`
//! the access-control keys read as `acl` settings.

mod access;
mod keys;
mod rules;

use std::path::{Path, PathBuf};

use remoting::SerializeType;

pub use acl::AuthMode;
pub use conf::{ConfigError, ConfigUpdateError};
pub use keys::Config;
pub use rules::FIXED_BLACK_LIST;

/// The live configuration that UPDATE_NAMESRV_CONFIG (318) swaps and GET_NAMESRV_CONFIG (319)
/// prints. See [`conf::Live`].
pub type SharedConfig = conf::Live<Config>;

/// `$HOME/namesrv/<file>`, Java's `${user.home}/namesrv/<file>`.
fn home_file(file: &str) -> String {
    let home = std::env::var_os("HOME").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("."));
    home.join("namesrv").join(file).to_string_lossy().into_owned()
}

impl Config {
    /// Builds the start-up configuration: defaults, then the `-c` file if given (typed keys
    /// converted, other keys kept in [`Config::extra`], `configStorePath` set to `file`), then
    /// [`Config::validate`]. Java: `NamesrvStartup#parseCommandlineAndConfigFile`
    pub fn load(file: Option<&Path>) -> Result<Self, ConfigError> {
        let mut config = Config::default();
        if let Some(path) = file {
            conf::table::load_file(&mut config, path)?;
            config.config_store_path = path.to_string_lossy().into_owned();
        }
        config.validate()?;
        Ok(config)
    }

    /// The route snapshot file: `routeSnapshotPath`, or `routes.snapshot` in the directory of
    /// `kvConfigPath`.
    pub fn route_snapshot_file(&self) -> PathBuf {
        match self.route_snapshot_path.as_deref() {
            Some(path) if !path.is_empty() => PathBuf::from(path),
            _ => Path::new(&self.kv_config_path)
                .parent()
                .unwrap_or_else(|| Path::new("."))
                .join("routes.snapshot"),
        }
    }

    /// The serialize type of our responses (`JSON` unless `rocketmq.serialize.type` says
    /// otherwise).
    pub fn effective_serialize_type(&self) -> SerializeType {
        self.serialize_type.unwrap_or_default()
    }
}
