//! What a value must satisfy: the ranges [`Config::validate`] checks at start-up and on every
//! update, the floors and restart-only keys an UPDATE_NAMESRV_CONFIG (318) must also respect,
//! and the keys it may never change.

use std::collections::BTreeSet;
use std::path::PathBuf;

use conf::table::invalid;

use super::{Config, ConfigError};

/// Range rules checked by [`Config::validate`]: (key, minimum, maximum).
const INT_RANGES: &[(&str, i64, i64)] = &[
    ("listenPort", 0, 65535),
    ("httpListenPort", 0, 65535),
    ("clientRequestThreadPoolNums", 1, i32::MAX as i64),
    ("defaultThreadPoolNums", 1, i32::MAX as i64),
    ("clientRequestThreadPoolQueueCapacity", 1, i32::MAX as i64),
    ("defaultThreadPoolQueueCapacity", 1, i32::MAX as i64),
    ("scanNotActiveBrokerInterval", 1, i64::MAX),
    ("unRegisterBrokerQueueCapacity", 1, i32::MAX as i64),
    ("waitSecondsForService", 0, i32::MAX as i64),
    ("serverWorkerThreads", 1, i32::MAX as i64),
    ("serverCallbackExecutorThreads", 0, i32::MAX as i64),
    ("serverSelectorThreads", 1, i32::MAX as i64),
    ("serverOnewaySemaphoreValue", 1, i32::MAX as i64),
    ("serverAsyncSemaphoreValue", 1, i32::MAX as i64),
    ("serverChannelMaxIdleTimeSeconds", 0, i32::MAX as i64),
    ("serverSocketSndBufSize", 0, i32::MAX as i64),
    ("serverSocketRcvBufSize", 0, i32::MAX as i64),
    ("writeBufferHighWaterMark", 0, i32::MAX as i64),
    ("writeBufferLowWaterMark", 0, i32::MAX as i64),
    ("serverSocketBacklog", 0, i32::MAX as i64),
    ("shutdownWaitTimeSeconds", 0, i32::MAX as i64),
    ("serverMaxConnections", 1, i32::MAX as i64),
    ("serverFrameTimeoutSeconds", 0, i32::MAX as i64),
    ("com.rocketmq.remoting.frameMaxLength", 64 * 1024, i32::MAX as i64),
    ("serverMaxPendingFrameBytes", 64 * 1024, i64::MAX),
    ("serverConnectionMaxPendingResponseBytes", 64 * 1024, i64::MAX),
    ("serverMaxPendingResponseBytes", 64 * 1024, i64::MAX),
    ("registerBodyMaxInflatedBytes", 64 * 1024, i64::MAX),
    ("registerBrokerMaxTopics", 1, i32::MAX as i64),
    ("kvConfigMaxValueBytes", 1, i32::MAX as i64),
    ("authFailureWindowSeconds", 1, 86_400),
    ("httpHeaderReadTimeoutSeconds", 1, 3600),
    ("httpMaxConnections", 1, i32::MAX as i64),
    ("httpMaxEventStreams", 0, i32::MAX as i64),
];

/// Keys whose value must be at least another key's: (key, the key it may not be below).
const AT_LEAST: &[(&str, &str)] = &[
    ("serverMaxPendingFrameBytes", "com.rocketmq.remoting.frameMaxLength"),
    ("serverMaxPendingResponseBytes", "serverConnectionMaxPendingResponseBytes"),
];

/// Floors an UPDATE_NAMESRV_CONFIG must respect (a start-up file may go lower, e.g. in a
/// test): (key, minimum, why). Zero stays allowed for the keys in [`ZERO_IS_OFF`].
const UPDATE_FLOORS: &[(&str, i64, &str)] = &[
    (
        "serverChannelMaxIdleTimeSeconds",
        60,
        "must be 0 (never) or at least 60 at run time: brokers re-register every 30 s (60 s at \
         most), so a shorter idle timeout closes their connections and drops their routes",
    ),
    (
        "serverFrameTimeoutSeconds",
        10,
        "must be 0 (never) or at least 10 at run time: a broker's multi-MB registration may \
         take seconds to arrive",
    ),
    (
        "scanNotActiveBrokerInterval",
        1000,
        "must be at least 1000 (ms) at run time: the liveness scan would run continuously",
    ),
    (
        "com.rocketmq.remoting.frameMaxLength",
        4 << 20,
        "must be at least 4194304 at run time: broker registrations of a few thousand topics \
         are larger",
    ),
];

/// Where the server listens: an update may not change them (the next start would leave the
/// address clients, brokers and probes use, or fail to bind).
const RESTART_ONLY: [&str; 4] = ["listenPort", "bindAddress", "httpListenPort", "httpBindAddress"];

/// Keys of [`UPDATE_FLOORS`] for which 0 means "off".
const ZERO_IS_OFF: &[&str] = &["serverChannelMaxIdleTimeSeconds", "serverFrameTimeoutSeconds"];

/// Keys that UPDATE_NAMESRV_CONFIG may never change, whatever `configBlackList` says: Java's
/// four; `routeSnapshotPath` (a path the server writes to, like the other two); and the
/// access-control keys (a remote request must not be able to turn checking off or point it at
/// another accounts file).
/// Java: `DefaultRequestProcessor#initConfigBlackList`
pub const FIXED_BLACK_LIST: [&str; 10] = [
    "configBlackList",
    "configStorePath",
    "kvConfigPath",
    "rocketmqHome",
    "routeSnapshotPath",
    "authenticationEnabled",
    "authConfigPath",
    "authenticationMode",
    "proxyProtocolTrustedAddresses",
    "authFailureWindowSeconds",
];

impl Config {
    /// Checks ranges: `listenPort` within 0–65535, pool sizes and queue capacities at least 1,
    /// other numbers not negative, `bindAddress` not empty. The error names the key and value.
    pub fn validate(&self) -> Result<(), ConfigError> {
        conf::table::check_ranges(self, INT_RANGES)?;
        for &(key, floor) in AT_LEAST {
            let number = |k: &str| self.get(k).and_then(|v| v.parse::<i64>().ok()).unwrap_or(0);
            if number(key) < number(floor) {
                let value = self.get(key).unwrap_or_default();
                return Err(invalid(key, &value, &format!("must be at least {floor}")));
            }
        }
        self.validate_access()?;
        if self.bind_address.is_empty() {
            return Err(conf::table::invalid(
                "bindAddress",
                &self.bind_address,
                "must not be empty",
            ));
        }
        Ok(())
    }

    /// The checks an UPDATE_NAMESRV_CONFIG (318) must also pass, beyond [`Config::validate`]:
    /// no value that would break the running server or take it off its address at the next
    /// start. `self` is the updated configuration, `running` the one in use. The error names
    /// the key and says why.
    pub fn validate_update(&self, running: &Config) -> Result<(), ConfigError> {
        let restart_only = |key: &str, value: String, now: String| {
            invalid(
                key,
                &value,
                &format!(
                    "cannot be changed at run time (the server listens with {now}); change it \
                     in the config file and restart"
                ),
            )
        };
        for key in RESTART_ONLY {
            let (value, now) = (self.get(key), running.get(key));
            if value != now {
                let shown = |v: Option<String>| v.unwrap_or_else(|| "unset".to_owned());
                return Err(restart_only(key, shown(value), shown(now)));
            }
        }
        for &(key, min, why) in UPDATE_FLOORS {
            let Some(value) = self.get(key) else { continue };
            if running.get(key).as_ref() == Some(&value) {
                continue; // unchanged: the running value, whatever the start-up file said
            }
            let number: i64 = value.parse().unwrap_or(0);
            let off = number == 0 && ZERO_IS_OFF.contains(&key);
            if !off && number < min {
                return Err(invalid(key, &value, why));
            }
        }
        Ok(())
    }

    /// The keys UPDATE_NAMESRV_CONFIG may not change: [`FIXED_BLACK_LIST`] plus the
    /// `configBlackList` value split on `;` (empty pieces skipped; exact, case-sensitive).
    /// Java: `DefaultRequestProcessor#initConfigBlackList`
    pub fn black_list(&self) -> BTreeSet<String> {
        let mut list: BTreeSet<String> = FIXED_BLACK_LIST.iter().map(|k| (*k).to_owned()).collect();
        list.extend(self.config_black_list.split(';').filter(|k| !k.is_empty()).map(str::to_owned));
        list
    }

    /// What the book's key reference says about every key: the table's [`Config::key_infos`],
    /// with the keys of the default black list and where the server listens marked refused,
    /// and the ranges
    /// [`Config::validate`] enforces.
    pub fn documented_keys() -> Vec<conf::KeyInfo> {
        conf::table::documented_keys::<Config>(Config::key_infos(), INT_RANGES)
            .into_iter()
            .map(|info| if RESTART_ONLY.contains(&info.key) { info.refused() } else { info })
            .collect()
    }
}

impl conf::Rules for Config {
    fn check(&self) -> Result<(), ConfigError> {
        self.validate()
    }
    fn check_update(&self, running: &Self) -> Result<(), ConfigError> {
        self.validate_update(running)
    }
    fn update_black_list(&self) -> BTreeSet<String> {
        self.black_list()
    }
    fn store_path(&self) -> PathBuf {
        PathBuf::from(&self.config_store_path)
    }
}

#[cfg(test)]
mod tests {
    use crate::config::Config;

    #[test]
    fn validate_rejects_out_of_range_values() {
        let mut config = Config { listen_port: -1, ..Config::default() };
        let err = config.validate().expect_err("negative port");
        assert_eq!(
            err.to_string(),
            "invalid value for config key listenPort: \"-1\" (must be between 0 and 65535)"
        );
        config.listen_port = 0;
        config.default_thread_pool_nums = 0;
        assert!(config
            .validate()
            .expect_err("zero pool")
            .to_string()
            .contains("defaultThreadPoolNums"));
    }

    #[test]
    fn black_list_adds_configured_keys_to_fixed_ones() {
        let config = Config { config_black_list: "a;;b".into(), ..Config::default() };
        let list: Vec<_> = config.black_list().into_iter().collect();
        assert_eq!(
            list,
            [
                "a",
                "authConfigPath",
                "authFailureWindowSeconds",
                "authenticationEnabled",
                "authenticationMode",
                "b",
                "configBlackList",
                "configStorePath",
                "kvConfigPath",
                "proxyProtocolTrustedAddresses",
                "rocketmqHome",
                "routeSnapshotPath"
            ]
        );
    }
}
