//! Where `mqadmin` takes its signing credentials from: `--accessKey`/`--secretKey` (or the
//! `ROCKETMQ_ACCESS_KEY`/`ROCKETMQ_SECRET_KEY` environment variables behind them), else the
//! `accessKey`/`secretKey` of `$ROCKETMQ_HOME/conf/tools.yml`, the file the Java `mqadmin` 5.x
//! reads. Without any, requests are sent unsigned.
//! Java: `MQAdminStartup#main0` → `AclUtils#getAclRPCHook(ROCKETMQ_HOME + "/conf/tools.yml")`

use std::path::Path;

use client::Credentials;
use serde_yaml_ng::Value;

use crate::AdminError;

/// The Java tool's credentials file, under `ROCKETMQ_HOME`. Java: `MixAll.ACL_CONF_TOOLS_FILE`
pub const TOOLS_FILE: &str = "conf/tools.yml";

/// The credentials to sign with: both flags (or variables) when either is given — one without
/// the other is a usage error — else `home/conf/tools.yml` when it names both keys. A missing
/// file means unsigned requests, as in Java; an unreadable or malformed one too, with a warning
/// on stderr (Java logs it).
pub fn resolve(
    access_key: Option<&str>,
    secret_key: Option<&str>,
    home: Option<&Path>,
) -> Result<Option<Credentials>, AdminError> {
    match (non_blank(access_key), non_blank(secret_key)) {
        (Some(access), Some(secret)) => return Ok(Some(Credentials::new(access, secret))),
        (Some(_), None) => {
            return Err(AdminError::Usage(
                "--accessKey needs --secretKey (or ROCKETMQ_SECRET_KEY)".into(),
            ))
        }
        (None, Some(_)) => {
            return Err(AdminError::Usage(
                "--secretKey needs --accessKey (or ROCKETMQ_ACCESS_KEY)".into(),
            ))
        }
        (None, None) => {}
    }
    let Some(home) = home else {
        return Ok(None);
    };
    let path = home.join(TOOLS_FILE);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            eprintln!("mqadmin: cannot read {}: {e}; requests are not signed", path.display());
            return Ok(None);
        }
    };
    match tools_file(&text) {
        Ok(credentials) => Ok(credentials),
        Err(reason) => {
            eprintln!("mqadmin: {}: {reason}; requests are not signed", path.display());
            Ok(None)
        }
    }
}

fn non_blank(value: Option<&str>) -> Option<&str> {
    value.map(str::trim).filter(|v| !v.is_empty())
}

/// The credentials of a `tools.yml` text: its `accessKey` and `secretKey` (text or numbers, read
/// as text as Java's `JSONObject#getString` does), `None` when either is absent or blank.
/// Java: `AclUtils#buildRpcHook`
fn tools_file(text: &str) -> Result<Option<Credentials>, String> {
    let value: Value = serde_yaml_ng::from_str(text).map_err(|e| e.to_string())?;
    let field = |name: &str| match value.get(name) {
        Some(Value::String(s)) => Some(s.trim().to_owned()),
        Some(Value::Number(n)) => Some(n.to_string()),
        Some(Value::Bool(b)) => Some(b.to_string()),
        _ => None,
    };
    Ok(match (field("accessKey"), field("secretKey")) {
        (Some(access), Some(secret)) if !access.is_empty() && !secret.is_empty() => {
            Some(Credentials::new(access, &secret))
        }
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn home_with(tools: Option<&str>) -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("dir");
        if let Some(text) = tools {
            std::fs::create_dir_all(dir.path().join("conf")).expect("conf");
            std::fs::write(dir.path().join(TOOLS_FILE), text).expect("write");
        }
        dir
    }

    fn access_key(c: Option<Credentials>) -> Option<String> {
        c.map(|c| c.access_key)
    }

    #[test]
    fn flags_win_over_the_tools_file() {
        let home = home_with(Some("accessKey: fromfile\nsecretKey: 12345678\n"));
        let c = resolve(Some("flag"), Some("secret"), Some(home.path())).expect("ok");
        assert_eq!(access_key(c).as_deref(), Some("flag"));
    }

    #[test]
    fn the_java_tools_file_is_read_with_numbers_as_text() {
        let home = home_with(Some("accessKey: rocketmq2\nsecretKey: 12345678\n"));
        let c = resolve(None, None, Some(home.path())).expect("ok").expect("credentials");
        assert_eq!(c.access_key, "rocketmq2");
        // The secret is "12345678": a request it signs verifies with that key.
        let mut request = remoting::RemotingCommand::request(remoting::RequestCode::PutKvConfig);
        c.sign(&mut request);
        let key = remoting::signature::SigningKey::new("12345678");
        assert!(remoting::signature::verify(&key, &request));
    }

    #[test]
    fn no_file_a_blank_key_or_a_broken_file_mean_unsigned() {
        assert!(resolve(None, None, None).expect("ok").is_none());
        assert!(resolve(None, None, Some(home_with(None).path())).expect("ok").is_none());
        let blank = home_with(Some("accessKey: ''\nsecretKey: x\n"));
        assert!(resolve(None, None, Some(blank.path())).expect("ok").is_none());
        let broken = home_with(Some("accessKey: [unclosed\n"));
        assert!(resolve(None, None, Some(broken.path())).expect("ok").is_none());
    }

    #[test]
    fn one_flag_without_the_other_is_a_usage_error() {
        let err = resolve(Some("ak"), None, None).map(drop).expect_err("usage");
        assert!(err.to_string().contains("--secretKey"), "{err}");
        assert_eq!(err.exit_code(), 2);
        assert!(resolve(None, Some("sk"), None).is_err());
    }
}
