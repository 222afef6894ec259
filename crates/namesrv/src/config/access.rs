//! The access-control keys (`authenticationEnabled`, `authConfigPath`, `authenticationMode`,
//! `authFailureWindowSeconds`, `proxyProtocolTrustedAddresses`): their values in force and the
//! `acl::Settings` they make.

use std::path::PathBuf;

use conf::table::invalid;

use super::{home_file, AuthMode, Config, ConfigError};

impl Config {
    /// The access-control part of [`Config::validate`]: `authenticationMode` is `writes` or
    /// `all`, `proxyProtocolTrustedAddresses` parses.
    pub(super) fn validate_access(&self) -> Result<(), ConfigError> {
        if let Some(mode) = &self.authentication_mode {
            if AuthMode::parse(mode).is_none() {
                return Err(conf::table::invalid(
                    "authenticationMode",
                    mode,
                    "expected writes or all",
                ));
            }
        }
        if let Err(why) = self.trusted_proxies_text().parse::<acl::AddrList>() {
            let value = self.trusted_proxies_text();
            return Err(invalid("proxyProtocolTrustedAddresses", &value, &why));
        }
        Ok(())
    }

    /// `authenticationEnabled`, false when unset.
    pub fn authentication_on(&self) -> bool {
        self.authentication_enabled.unwrap_or(false)
    }

    /// `authConfigPath`, `$HOME/namesrv/auth.yml` when unset.
    pub fn auth_file(&self) -> PathBuf {
        PathBuf::from(self.auth_config_path.clone().unwrap_or_else(|| home_file("auth.yml")))
    }

    /// `authenticationMode`, `writes` when unset (a bad value never gets past [`Config::validate`]).
    pub fn auth_mode(&self) -> AuthMode {
        self.authentication_mode.as_deref().and_then(AuthMode::parse).unwrap_or_default()
    }

    /// The access-control settings these keys make (`authenticationEnabled`,
    /// `authenticationMode`, `authConfigPath`).
    pub fn acl_settings(&self) -> acl::Settings {
        acl::Settings {
            enabled: self.authentication_on(),
            mode: self.auth_mode(),
            path: self.auth_file(),
            failure_window: self
                .auth_failure_window_seconds
                .and_then(|secs| u64::try_from(secs).ok())
                .map(std::time::Duration::from_secs),
        }
    }

    /// `proxyProtocolTrustedAddresses` in force: as set, else `*` with access control off and
    /// empty with it on.
    pub fn trusted_proxies_text(&self) -> String {
        match &self.proxy_protocol_trusted_addresses {
            Some(text) => text.clone(),
            None if self.authentication_on() => String::new(),
            None => "*".to_owned(),
        }
    }

    /// The peers whose PROXY preface is honoured (a bad list never gets past
    /// [`Config::validate`]; it then trusts nobody).
    pub fn trusted_proxies(&self) -> acl::AddrList {
        self.trusted_proxies_text().parse().unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use crate::config::{AuthMode, Config};

    #[test]
    fn access_control_keys_are_unset_by_default_and_absent_from_319() {
        let config = Config::default();
        assert!(!config.authentication_on());
        assert_eq!(config.auth_mode(), AuthMode::Writes);
        assert!(config.auth_file().ends_with("namesrv/auth.yml"));
        assert!(!config.to_public_properties_text().contains("authentication"));
        let mut config = Config::default();
        config.set_known("authenticationMode", "all").expect("all");
        assert_eq!(config.auth_mode(), AuthMode::All);
        config.set_known("authenticationMode", "reads").expect("text");
        let err = config.validate().expect_err("bad mode");
        assert!(err.to_string().contains("authenticationMode"), "{err}");
        assert!(config.set_known("authenticationEnabled", "yes").is_err());
    }
}
