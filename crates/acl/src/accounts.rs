//! The accounts file (`authConfigPath`, YAML) and the lookup tables built from it.
//!
//! ```yaml
//! globalWhiteRemoteAddresses: [10.0.0.0/8]   # unsigned requests from here are accepted
//! accounts:
//!   - accessKey: broker-a
//!     secretKey: "12345678"
//!     role: broker                           # reader | broker | admin
//!     whiteRemoteAddress: 192.168.0.0/16     # optional: one pattern, or a list
//!     certificateCN: broker-a.example.com    # optional: a client certificate naming this account
//!     clusters: [DefaultCluster]             # optional (broker role): the clusters it may act in
//!     brokerNames: [broker-a, broker-a-*]    # optional (broker role): the groups it may act for
//! ```

use std::collections::HashMap;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use remoting::signature::SigningKey;
use serde::Deserialize;

use super::address::AddrPattern;
use super::ownership::Ownership;
use super::policy::Role;

/// Why an accounts file cannot be used. Never shows a secret.
#[derive(Debug, thiserror::Error)]
pub enum AccountsError {
    /// The file cannot be read (missing, permissions).
    #[error("authConfigPath {}: cannot read: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file is not valid YAML of the expected shape, or a value is wrong.
    #[error("authConfigPath {}: {reason}", path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong, with the line when the YAML reader knows it.
        reason: String,
    },
}

/// One account. Its `Debug` never shows the secret.
pub struct Account {
    /// The account's name: its `accessKey`.
    pub access_key: Arc<str>,
    /// The key its signatures are checked with (none for a certificate-only account).
    key: Option<SigningKey>,
    /// What it may send.
    pub role: Role,
    /// Where it may connect from; `None` means anywhere.
    white: Option<Vec<AddrPattern>>,
    /// The broker groups it may act for (`clusters`, `brokerNames`).
    pub ownership: Ownership,
}

impl std::fmt::Debug for Account {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Account")
            .field("access_key", &self.access_key)
            .field("role", &self.role)
            .field("white", &self.white)
            .field("ownership", &self.ownership)
            .finish_non_exhaustive()
    }
}

impl Account {
    /// The signing key, `None` for a certificate-only account (its signatures never verify).
    pub fn key(&self) -> Option<&SigningKey> {
        self.key.as_ref()
    }

    /// Whether the account may connect from `ip`.
    pub fn allows_address(&self, ip: IpAddr) -> bool {
        self.white.as_ref().is_none_or(|white| white.iter().any(|p| p.matches(ip)))
    }
}

/// Every account of a loaded file, by access key and by certificate CN.
#[derive(Debug, Default)]
pub struct Accounts {
    /// Looked up on every signed request: foldhash, seeded per process (the keys come from the
    /// file, so a client can probe the table but never grow it).
    by_key: HashMap<Arc<str>, Arc<Account>, foldhash::fast::RandomState>,
    by_cn: HashMap<String, Arc<Account>>,
    global_white: Vec<AddrPattern>,
}

impl Accounts {
    /// Reads and checks the file. Blocking.
    pub fn load(path: &Path) -> Result<Self, AccountsError> {
        let text = std::fs::read_to_string(path)
            .map_err(|source| AccountsError::Read { path: path.to_owned(), source })?;
        Self::parse(&text)
            .map_err(|reason| AccountsError::Invalid { path: path.to_owned(), reason })
    }

    /// Parses the YAML text; the error says what is wrong (and where, when it can).
    pub fn parse(text: &str) -> Result<Self, String> {
        let file: FileModel = serde_yaml_ng::from_str(text).map_err(|e| e.to_string())?;
        let mut accounts = Accounts::default();
        for pattern in file.global_white_remote_addresses.into_iter().flatten() {
            let pattern =
                pattern.parse().map_err(|e| format!("globalWhiteRemoteAddresses: {e}"))?;
            accounts.global_white.push(pattern);
        }
        for (i, entry) in file.accounts.into_iter().enumerate() {
            let access_key = entry.access_key.text("accessKey", i)?;
            if access_key.trim().is_empty() {
                return Err(format!("accounts[{i}]: accessKey is empty"));
            }
            let at = |what: &str| format!("account {access_key:?}: {what}");
            let secret = entry.secret_key.map(|s| s.text("secretKey", i)).transpose()?;
            if secret.as_deref().is_some_and(str::is_empty) {
                return Err(at("secretKey is empty"));
            }
            let cn = entry.certificate_cn.filter(|cn| !cn.trim().is_empty());
            if secret.is_none() && cn.is_none() {
                return Err(at("needs a secretKey or a certificateCN"));
            }
            let white = match entry.white_remote_address {
                None => None,
                Some(list) => Some(
                    list.into_iter()
                        .flat_map(|item| {
                            item.split(',').map(str::trim).map(str::to_owned).collect::<Vec<_>>()
                        })
                        .filter(|p| !p.is_empty())
                        .map(|p| p.parse().map_err(|e| at(&format!("whiteRemoteAddress: {e}"))))
                        .collect::<Result<Vec<_>, _>>()?,
                ),
            };
            let ownership = Ownership::parse(
                entry.clusters.map(|l| l.into_iter().collect()),
                entry.broker_names.map(|l| l.into_iter().collect()),
            )
            .map_err(|e| at(&e))?;
            let account = Arc::new(Account {
                access_key: Arc::from(access_key.as_str()),
                key: secret.as_deref().map(SigningKey::new),
                role: entry.role,
                white,
                ownership,
            });
            if let Some(cn) = cn {
                if accounts.by_cn.insert(cn.clone(), Arc::clone(&account)).is_some() {
                    return Err(at(&format!("certificateCN {cn:?} names another account too")));
                }
            }
            if accounts.by_key.insert(Arc::clone(&account.access_key), account).is_some() {
                return Err(at("listed twice"));
            }
        }
        Ok(accounts)
    }

    /// The account with this access key.
    pub fn by_access_key(&self, access_key: &str) -> Option<&Arc<Account>> {
        self.by_key.get(access_key)
    }

    /// The account a client certificate with this subject CN stands for.
    pub fn by_certificate_cn(&self, cn: &str) -> Option<&Arc<Account>> {
        self.by_cn.get(cn)
    }

    /// Whether unsigned requests from `ip` are accepted (`globalWhiteRemoteAddresses`).
    pub fn globally_allowed(&self, ip: IpAddr) -> bool {
        self.global_white.iter().any(|p| p.matches(ip))
    }

    /// The pairs of broker-role accounts (by access key, sorted) that may act for a common
    /// broker group: one could overwrite or unregister the other's brokers.
    pub fn overlapping_brokers(&self) -> Vec<(Arc<str>, Arc<str>)> {
        let mut brokers: Vec<&Arc<Account>> =
            self.by_key.values().filter(|a| a.role == Role::Broker).collect();
        brokers.sort_by(|a, b| a.access_key.cmp(&b.access_key));
        let mut pairs = Vec::new();
        for (i, a) in brokers.iter().enumerate() {
            for b in &brokers[i + 1..] {
                if a.ownership.overlaps(&b.ownership) {
                    pairs.push((Arc::clone(&a.access_key), Arc::clone(&b.access_key)));
                }
            }
        }
        pairs
    }

    /// How many accounts there are.
    pub fn len(&self) -> usize {
        self.by_key.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.by_key.is_empty()
    }
}

/// Whether every user of the machine may read `path` (a secret file should not be).
#[cfg(unix)]
pub fn world_readable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.permissions().mode() & 0o004 != 0)
}

/// Whether every user of the machine may read `path` (never known here).
#[cfg(not(unix))]
pub fn world_readable(_path: &Path) -> bool {
    false
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct FileModel {
    #[serde(default)]
    global_white_remote_addresses: Option<Vec<String>>,
    #[serde(default)]
    accounts: Vec<AccountModel>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct AccountModel {
    access_key: Text,
    #[serde(default)]
    secret_key: Option<Text>,
    role: Role,
    #[serde(default)]
    white_remote_address: Option<OneOrMany>,
    #[serde(default, rename = "certificateCN")]
    certificate_cn: Option<String>,
    #[serde(default)]
    clusters: Option<OneOrMany>,
    #[serde(default)]
    broker_names: Option<OneOrMany>,
}

/// A key or secret: text, or a YAML number, which is refused (YAML reads `012345` as 12345 or
/// 5349 depending on the reader: the secret would silently not be what was written).
#[derive(Deserialize)]
#[serde(untagged)]
enum Text {
    Text(String),
    Number(serde::de::IgnoredAny),
}

impl Text {
    fn text(self, field: &str, index: usize) -> Result<String, String> {
        match self {
            Text::Text(s) => Ok(s),
            Text::Number(_) => Err(format!(
                "accounts[{index}]: {field} is a YAML number; write it in quotes (\"12345678\") so it is read as text"
            )),
        }
    }
}

/// `whiteRemoteAddress`: one pattern (or a comma-separated list) or a YAML list.
#[derive(Deserialize)]
#[serde(untagged)]
enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

impl IntoIterator for OneOrMany {
    type Item = String;
    type IntoIter = std::vec::IntoIter<String>;

    fn into_iter(self) -> Self::IntoIter {
        match self {
            OneOrMany::One(s) => vec![s].into_iter(),
            OneOrMany::Many(v) => v.into_iter(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = r#"
globalWhiteRemoteAddresses:
  - 10.0.0.0/8
accounts:
  - accessKey: broker-a
    secretKey: "12345678"
    role: broker
    whiteRemoteAddress: 127.0.0.1, 192.168.0.*
  - accessKey: ops
    secretKey: s3cr3t-ops
    role: admin
  - accessKey: by-cert
    role: reader
    certificateCN: reader.example.com
"#;

    fn ip(s: &str) -> IpAddr {
        s.parse().expect("ip")
    }

    #[test]
    fn accounts_are_found_by_access_key_and_certificate_cn() {
        let accounts = Accounts::parse(FILE).expect("valid");
        assert_eq!(accounts.len(), 3);
        let broker = accounts.by_access_key("broker-a").expect("broker-a");
        assert_eq!(broker.role, Role::Broker);
        assert!(broker.key().is_some());
        assert!(broker.allows_address(ip("127.0.0.1")) && broker.allows_address(ip("192.168.0.9")));
        assert!(!broker.allows_address(ip("127.0.0.2")));
        assert!(accounts.by_access_key("ops").expect("ops").allows_address(ip("8.8.8.8")));
        let by_cert = accounts.by_certificate_cn("reader.example.com").expect("cn");
        assert_eq!(&*by_cert.access_key, "by-cert");
        assert!(by_cert.key().is_none());
        assert!(
            accounts.globally_allowed(ip("10.2.3.4")) && !accounts.globally_allowed(ip("11.0.0.1"))
        );
        assert!(accounts.by_access_key("nobody").is_none());
    }

    #[test]
    fn bad_files_are_refused_with_a_reason_that_shows_no_secret() {
        let cases = [
            ("accounts: [{accessKey: a, secretKey: 12345678, role: admin}]", "in quotes"),
            ("accounts: [{accessKey: a, secretKey: x, role: root}]", "unknown variant"),
            ("accounts: [{accessKey: a, secretKey: x, role: admin, admin: true}]", "unknown field"),
            ("accounts: [{accessKey: a, role: admin}]", "needs a secretKey or a certificateCN"),
            ("accounts: [{accessKey: '', secretKey: x, role: admin}]", "accessKey is empty"),
            (
                "accounts: [{accessKey: a, secretKey: hunter2, role: admin}, {accessKey: a, secretKey: y, role: reader}]",
                "listed twice",
            ),
            (
                "accounts: [{accessKey: a, secretKey: hunter2, role: admin, whiteRemoteAddress: 10.0.0.0/40}]",
                "prefix length",
            ),
            ("globalWhiteRemoteAddresses: [nowhere]", "globalWhiteRemoteAddresses"),
            ("accounts: {accessKey: a}", "invalid type"),
            ("accounts: [{accessKey: a, secretKey: hunter2, role: admin", "line"),
        ];
        for (text, expected) in cases {
            let err = Accounts::parse(text).expect_err(text);
            assert!(err.contains(expected), "{text}: {err}");
            assert!(!err.contains("hunter2"), "{text}: {err}");
        }
    }

    #[test]
    fn broker_accounts_that_may_act_for_a_common_group_are_named() {
        let text = r#"
accounts:
  - {accessKey: broker-a, secretKey: a, role: broker, brokerNames: [bn-a, "bn-a-*"]}
  - {accessKey: broker-b, secretKey: b, role: broker, brokerNames: bn-b}
  - {accessKey: broker-c, secretKey: c, role: broker, clusters: [prod], brokerNames: ["*-2"]}
  - {accessKey: ops, secretKey: o, role: admin}
"#;
        let accounts = Accounts::parse(text).expect("valid");
        let pairs: Vec<(String, String)> = accounts
            .overlapping_brokers()
            .into_iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect();
        assert_eq!(pairs, [("broker-a".to_string(), "broker-c".to_string())]);
        let open = Accounts::parse(
            "accounts: [{accessKey: x, secretKey: a, role: broker}, {accessKey: y, secretKey: b, role: broker, brokerNames: bn-y}]",
        )
        .expect("valid");
        assert_eq!(open.overlapping_brokers().len(), 1);
        let err = Accounts::parse(
            "accounts: [{accessKey: x, secretKey: a, role: broker, brokerNames: [' ']}]",
        )
        .expect_err("an empty list");
        assert!(err.contains("brokerNames lists no pattern"), "{err}");
    }

    #[test]
    fn an_empty_file_has_no_accounts() {
        assert!(Accounts::parse("{}").expect("empty map").is_empty());
        assert!(Accounts::parse("accounts: []").expect("empty list").is_empty());
    }

    #[test]
    fn debug_output_shows_no_secret() {
        let accounts = Accounts::parse(FILE).expect("valid");
        let shown = format!("{accounts:?}");
        assert!(!shown.contains("12345678") && !shown.contains("s3cr3t"), "{shown}");
    }
}
