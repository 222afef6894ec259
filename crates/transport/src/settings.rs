//! `TlsSettings`: the server-side `tls.*` keys, read Java-style from a key lookup.
//!
//! Java reads these from JVM system properties (`TlsSystemConfig`) and then lets the file named by
//! `tls.config.file` override every key except `tls.server.mode` (`TlsHelper#extractTlsConfigFromFile`).
//! This module only interprets values; the caller owns the sources (the `-c` properties, the file).

use std::path::PathBuf;

/// `tls.server.mode`.
pub const KEY_MODE: &str = "tls.server.mode";
/// `tls.test.mode.enable`.
pub const KEY_TEST_MODE: &str = "tls.test.mode.enable";
/// `tls.server.certPath`.
pub const KEY_CERT_PATH: &str = "tls.server.certPath";
/// `tls.server.keyPath`.
pub const KEY_KEY_PATH: &str = "tls.server.keyPath";
/// `tls.server.keyPassword`.
pub const KEY_KEY_PASSWORD: &str = "tls.server.keyPassword";
/// `tls.server.trustCertPath`.
pub const KEY_TRUST_CERT_PATH: &str = "tls.server.trustCertPath";
/// `tls.server.need.client.auth`.
pub const KEY_CLIENT_AUTH: &str = "tls.server.need.client.auth";
/// `tls.server.authClient`: whether client certificates are checked against the trust file.
pub const KEY_AUTH_CLIENT: &str = "tls.server.authClient";
/// `tls.config.file`: a properties file whose `tls.*` keys override the other source.
pub const KEY_CONFIG_FILE: &str = "tls.config.file";
/// Java's default for `tls.config.file`.
pub const DEFAULT_CONFIG_FILE: &str = "/etc/rocketmq/tls.properties";

/// How the server treats TLS on its single port (remoting-protocol §10.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TlsMode {
    /// A TLS ClientHello closes the connection; plaintext only.
    Disabled,
    /// TLS when the first byte is `0x16`, plaintext otherwise (the default).
    #[default]
    Permissive,
    /// Plaintext closes the connection; TLS only.
    Enforcing,
}

impl TlsMode {
    /// Parses the Java spelling; anything else (including absence) is `Permissive`.
    /// Java: `TlsMode#parse`
    pub fn parse(value: Option<&str>) -> TlsMode {
        match value.map(str::trim) {
            Some("disabled") => TlsMode::Disabled,
            Some("enforcing") => TlsMode::Enforcing,
            _ => TlsMode::Permissive,
        }
    }
}

/// Whether the server asks for and verifies a client certificate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ClientAuth {
    /// No client certificate is requested (the default).
    #[default]
    None,
    /// A client certificate is requested; if sent, it must chain to the trust certificate.
    Optional,
    /// A client certificate chaining to the trust certificate is required.
    Require,
}

impl ClientAuth {
    /// Parses `none|optional|require`, case-insensitively; blank or unknown values are `None`.
    /// Java: `TlsHelper#parseClientAuthMode`
    pub fn parse(value: Option<&str>) -> ClientAuth {
        match value.map(|v| v.trim().to_ascii_lowercase()).as_deref() {
            Some("optional") => ClientAuth::Optional,
            Some("require") => ClientAuth::Require,
            _ => ClientAuth::None,
        }
    }
}

/// The server-side TLS settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsSettings {
    /// `tls.server.mode`, default permissive.
    pub mode: TlsMode,
    /// `tls.test.mode.enable`, default true: serve a self-signed certificate generated at start and
    /// ignore `cert_path`/`key_path`.
    pub test_mode: bool,
    /// `tls.server.certPath`: PEM certificate chain, leaf first.
    pub cert_path: Option<PathBuf>,
    /// `tls.server.keyPath`: PEM private key (PKCS#8, PKCS#1 or SEC1; encrypted PKCS#8 with a password).
    pub key_path: Option<PathBuf>,
    /// `tls.server.keyPassword`: password of an encrypted PKCS#8 key.
    pub key_password: Option<String>,
    /// `tls.server.trustCertPath`: PEM CA certificates that client certificates must chain to.
    pub trust_cert_path: Option<PathBuf>,
    /// `tls.server.need.client.auth`, default none.
    pub client_auth: ClientAuth,
    /// `tls.server.authClient`, default false (Java's): when false a client certificate asked
    /// for by `client_auth` is accepted whatever signed it (Java's `InsecureTrustManagerFactory`;
    /// the handshake still proves the client holds its key); when true it must chain to
    /// `trust_cert_path`. Ignored in test mode.
    pub auth_client: bool,
}

impl Default for TlsSettings {
    fn default() -> Self {
        TlsSettings {
            mode: TlsMode::Permissive,
            test_mode: true,
            cert_path: None,
            key_path: None,
            key_password: None,
            trust_cert_path: None,
            client_auth: ClientAuth::None,
            auth_client: false,
        }
    }
}

impl TlsSettings {
    /// Settings with TLS refused on every connection.
    pub fn disabled() -> Self {
        TlsSettings { mode: TlsMode::Disabled, ..TlsSettings::default() }
    }

    /// Reads every `tls.server.*` / `tls.test.mode.enable` key from one source.
    ///
    /// Never fails: values are only interpreted here (unknown words fall back to Java's defaults,
    /// blank paths are "not set"); files are read by [`TlsContext::new`](super::TlsContext::new).
    /// Java: `TlsSystemConfig` static initialisation
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Self {
        let non_blank = |key: &str| lookup(key).filter(|v| !v.trim().is_empty());
        TlsSettings {
            mode: TlsMode::parse(lookup(KEY_MODE).as_deref()),
            // Java: Boolean.parseBoolean, so anything but "true" (any case) is false.
            test_mode: lookup(KEY_TEST_MODE).is_none_or(|v| v.trim().eq_ignore_ascii_case("true")),
            cert_path: non_blank(KEY_CERT_PATH).map(|v| PathBuf::from(v.trim())),
            key_path: non_blank(KEY_KEY_PATH).map(|v| PathBuf::from(v.trim())),
            key_password: non_blank(KEY_KEY_PASSWORD),
            trust_cert_path: non_blank(KEY_TRUST_CERT_PATH).map(|v| PathBuf::from(v.trim())),
            client_auth: ClientAuth::parse(lookup(KEY_CLIENT_AUTH).as_deref()),
            // Java: Boolean.parseBoolean(System.getProperty(..., "false")).
            auth_client: lookup(KEY_AUTH_CLIENT)
                .is_some_and(|v| v.trim().eq_ignore_ascii_case("true")),
        }
    }

    /// Reads the settings from a primary source (system properties / `-c` file) and the parsed
    /// `tls.config.file`, whose keys win, except `tls.server.mode`, which only the primary source sets.
    /// Java: `TlsHelper#extractTlsConfigFromFile`
    pub fn from_layers(
        primary: impl Fn(&str) -> Option<String>,
        config_file: impl Fn(&str) -> Option<String>,
    ) -> Self {
        TlsSettings::from_lookup(|key| {
            if key == KEY_MODE {
                primary(key)
            } else {
                config_file(key).or_else(|| primary(key))
            }
        })
    }

    /// The path of the `tls.config.file` to read, Java's default when unset.
    pub fn config_file_path(lookup: impl Fn(&str) -> Option<String>) -> PathBuf {
        lookup(KEY_CONFIG_FILE)
            .filter(|v| !v.trim().is_empty())
            .map_or_else(|| PathBuf::from(DEFAULT_CONFIG_FILE), |v| PathBuf::from(v.trim()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn lookup(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> =
            pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        move |k| map.get(k).cloned()
    }

    #[test]
    fn defaults_are_permissive_test_mode_without_client_auth() {
        let s = TlsSettings::from_lookup(|_| None);
        assert_eq!(s, TlsSettings::default());
        assert_eq!(s.mode, TlsMode::Permissive);
        assert!(s.test_mode);
        assert_eq!(s.client_auth, ClientAuth::None);
    }

    #[test]
    fn mode_words_follow_java_and_unknown_means_permissive() {
        assert_eq!(TlsMode::parse(Some("disabled")), TlsMode::Disabled);
        assert_eq!(TlsMode::parse(Some("enforcing")), TlsMode::Enforcing);
        assert_eq!(TlsMode::parse(Some("permissive")), TlsMode::Permissive);
        assert_eq!(TlsMode::parse(Some("strict")), TlsMode::Permissive);
        // Java's TlsMode#parse compares the lowercase name exactly.
        assert_eq!(TlsMode::parse(Some("DISABLED")), TlsMode::Permissive);
        assert_eq!(TlsMode::parse(None), TlsMode::Permissive);
    }

    #[test]
    fn client_auth_words_are_case_insensitive_and_unknown_is_none() {
        assert_eq!(ClientAuth::parse(Some("REQUIRE")), ClientAuth::Require);
        assert_eq!(ClientAuth::parse(Some("optional")), ClientAuth::Optional);
        assert_eq!(ClientAuth::parse(Some("sometimes")), ClientAuth::None);
        assert_eq!(ClientAuth::parse(Some("  ")), ClientAuth::None);
    }

    #[test]
    fn keys_are_read_and_blank_paths_are_unset() {
        let s = TlsSettings::from_lookup(lookup(&[
            (KEY_MODE, "enforcing"),
            (KEY_TEST_MODE, "False"),
            (KEY_CERT_PATH, " /etc/cert.pem "),
            (KEY_KEY_PATH, "/etc/key.pem"),
            (KEY_KEY_PASSWORD, ""),
            (KEY_TRUST_CERT_PATH, "  "),
            (KEY_CLIENT_AUTH, "require"),
            (KEY_AUTH_CLIENT, "TRUE"),
        ]));
        assert_eq!(s.mode, TlsMode::Enforcing);
        assert!(!s.test_mode);
        assert_eq!(s.cert_path, Some(PathBuf::from("/etc/cert.pem")));
        assert_eq!(s.key_path, Some(PathBuf::from("/etc/key.pem")));
        assert_eq!(s.key_password, None);
        assert_eq!(s.trust_cert_path, None);
        assert_eq!(s.client_auth, ClientAuth::Require);
        assert!(s.auth_client);
        assert!(!TlsSettings::from_lookup(lookup(&[(KEY_AUTH_CLIENT, "yes")])).auth_client);
    }

    #[test]
    fn config_file_overrides_everything_but_the_mode() {
        let primary =
            lookup(&[(KEY_MODE, "enforcing"), (KEY_CERT_PATH, "/a.pem"), (KEY_KEY_PATH, "/a.key")]);
        let file = lookup(&[(KEY_MODE, "disabled"), (KEY_CERT_PATH, "/b.pem")]);
        let s = TlsSettings::from_layers(primary, file);
        assert_eq!(s.mode, TlsMode::Enforcing);
        assert_eq!(s.cert_path, Some(PathBuf::from("/b.pem")));
        assert_eq!(s.key_path, Some(PathBuf::from("/a.key")));
    }

    #[test]
    fn config_file_path_defaults_to_etc_rocketmq() {
        assert_eq!(TlsSettings::config_file_path(|_| None), PathBuf::from(DEFAULT_CONFIG_FILE));
        let l = lookup(&[(KEY_CONFIG_FILE, "/tmp/tls.properties")]);
        assert_eq!(TlsSettings::config_file_path(l), PathBuf::from("/tmp/tls.properties"));
    }
}
