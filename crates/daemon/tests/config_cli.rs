//! Start-up configuration and the `mqnamesrv` command line; UPDATE_NAMESRV_CONFIG (318) and
//! GET_NAMESRV_CONFIG (319) semantics on the shared config.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use daemon::cli::{parse_cli, CliAction, CliError};
use namesrv::config::{Config, ConfigError, ConfigUpdateError, SharedConfig, FIXED_BLACK_LIST};

fn cli(args: &[&str]) -> Result<CliAction, CliError> {
    parse_cli(std::iter::once("mqnamesrv").chain(args.iter().copied()).map(OsString::from))
}

fn write_config(dir: &tempfile::TempDir, text: &str) -> PathBuf {
    let path = dir.path().join("namesrv.properties");
    std::fs::write(&path, text).expect("write config");
    path
}

fn path_arg(path: &Path) -> &str {
    path.to_str().expect("utf-8 temp path")
}

fn print_text(action: CliAction) -> String {
    match action {
        CliAction::Print(text) => text,
        other => panic!("expected Print, got {other:?}"),
    }
}

fn shared_from_file(text: &str) -> (tempfile::TempDir, PathBuf, SharedConfig) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = write_config(&dir, text);
    let config = Config::load(Some(&path)).expect("load");
    (dir, path, SharedConfig::new(config))
}

#[test]
fn print_config_item_lists_every_key_with_defaults() {
    let text = print_text(cli(&["-p"]).expect("-p"));
    for key in Config::KEYS {
        assert!(
            text.lines().any(|l| l.starts_with(&format!("{key}="))),
            "{key} missing from:\n{text}"
        );
    }
    for line in [
        "listenPort=9876",
        "bindAddress=0.0.0.0",
        "orderMessageEnable=false",
        "returnOrderTopicConfigToBroker=true",
        "waitSecondsForService=45",
        "scanNotActiveBrokerInterval=5000",
        "configBlackList=configBlackList;configStorePath;kvConfigPath",
        "serverSocketBacklog=1024",
        "tls.server.mode=",
    ] {
        assert!(text.lines().any(|l| l == line), "{line} missing from:\n{text}");
    }
    assert!(text
        .lines()
        .any(|l| l.starts_with("kvConfigPath=") && l.ends_with("/namesrv/kvConfig.json")));
    assert!(!text.contains("load config properties file OK"));
}

#[test]
fn print_config_item_after_config_file_shows_file_values() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = write_config(&dir, "listenPort=10911\ncustomKey=abc\n");
    let text = print_text(cli(&["-c", path_arg(&path), "-p"]).expect("-c -p"));
    let first = text.lines().next().expect("first line");
    assert_eq!(first, format!("load config properties file OK, {}", path.display()));
    assert!(text.lines().any(|l| l == "listenPort=10911"), "{text}");
    assert!(text.lines().any(|l| l == format!("configStorePath={}", path.display())), "{text}");
    assert!(text.lines().any(|l| l == "customKey=abc"), "{text}");
}

#[test]
fn print_config_item_shows_the_trusted_proxies_in_force() {
    let text = print_text(cli(&["-p"]).expect("-p"));
    assert!(text.lines().any(|l| l == "proxyProtocolTrustedAddresses=*"), "off: any\n{text}");
    let dir = tempfile::tempdir().expect("tempdir");
    let auth = dir.path().join("auth.yml");
    std::fs::write(&auth, "accounts: []\n").expect("accounts");
    let on = format!("authenticationEnabled=true\nauthConfigPath={}\n", auth.display());
    let path = write_config(&dir, &on);
    let text = print_text(cli(&["-c", path_arg(&path), "-p"]).expect("-c -p"));
    assert!(text.lines().any(|l| l == "proxyProtocolTrustedAddresses="), "on: none\n{text}");
    let path =
        write_config(&dir, &format!("{on}proxyProtocolTrustedAddresses=10.0.0.5, 10.8.0.0/16\n"));
    let text = print_text(cli(&["-c", path_arg(&path), "-p"]).expect("-c -p"));
    assert!(
        text.lines().any(|l| l == "proxyProtocolTrustedAddresses=10.0.0.5, 10.8.0.0/16"),
        "{text}"
    );
    let path = write_config(&dir, "proxyProtocolTrustedAddresses=10.0.0.0/40\n");
    let err = cli(&["-c", path_arg(&path)]).expect_err("bad CIDR");
    assert!(format!("{err:#}").contains("proxyProtocolTrustedAddresses"), "{err:#}");
}

#[test]
fn help_prints_java_style_usage() {
    let CliAction::Help(text) = cli(&["-h", "-c", "/does/not/exist"]).expect("-h") else {
        panic!("expected Help");
    };
    assert!(text.starts_with("usage: mqnamesrv [-c <arg>] [-h] [-n <arg>] [-p]\n"), "{text}");
    assert!(
        text.contains(" -c,--configFile <arg>    Name server config properties file\n"),
        "{text}"
    );
    assert!(text.contains(" -p,--printConfigItem     Print all config items\n"), "{text}");
}

#[test]
fn unknown_option_is_a_usage_error_with_exit_code_1() {
    let err = cli(&["-x"]).expect_err("unknown option");
    assert_eq!(err.exit_code(), 1);
    let CliError::Usage { message, usage } = &err else { panic!("expected Usage, got {err:?}") };
    assert_eq!(message, "Unrecognized option: -x");
    assert!(usage.starts_with("usage: mqnamesrv"));
    assert_eq!(cli(&["-c"]).expect_err("missing argument").exit_code(), 1);
    assert_eq!(cli(&["stray"]).expect_err("positional").exit_code(), 1);
}

#[test]
fn namesrv_addr_option_is_accepted_and_ignored() {
    let CliAction::Run(config) = cli(&["-n", "127.0.0.1:9876"]).expect("-n") else {
        panic!("expected Run");
    };
    assert_eq!(config, Config::default());
    assert!(!config.to_properties_text().contains("namesrvAddr"));
}

#[test]
fn config_file_sets_values_and_config_store_path_and_load_message() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = write_config(
        &dir,
        "listenPort = 10876\norderMessageEnable: true\nconfigStorePath=/elsewhere\n",
    );
    let CliAction::Run(config) = cli(&["--configFile", path_arg(&path)]).expect("run") else {
        panic!("expected Run");
    };
    assert_eq!(config.listen_port, 10876);
    assert!(config.order_message_enable);
    assert_eq!(Path::new(&config.config_store_path), path);
    assert_eq!(
        config.load_message(),
        Some(format!("load config properties file OK, {}", path.display()))
    );
}

#[test]
fn missing_config_file_is_an_error_naming_it() {
    let err = cli(&["-c", "/no/such/dir/namesrv.properties"]).expect_err("missing file");
    assert_eq!(err.exit_code(), 255);
    assert!(err.to_string().contains("/no/such/dir/namesrv.properties"), "{err}");
}

#[test]
fn bad_values_in_config_file_are_errors_naming_key_and_value() {
    let cases = [
        ("listenPort=98x76\n", "listenPort", "98x76"),
        ("listenPort=9876 \n", "listenPort", "9876 "),
        ("listenPort=-1\n", "listenPort", "-1"),
        ("listenPort=70000\n", "listenPort", "70000"),
        ("orderMessageEnable=yes\n", "orderMessageEnable", "yes"),
        ("scanNotActiveBrokerInterval=5s\n", "scanNotActiveBrokerInterval", "5s"),
        ("defaultThreadPoolNums=0\n", "defaultThreadPoolNums", "0"),
        ("rocketmq.serialize.type=XML\n", "rocketmq.serialize.type", "XML"),
    ];
    for (text, key, value) in cases {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = write_config(&dir, text);
        let err = cli(&["-c", path_arg(&path)]).expect_err(text);
        assert_eq!(err.exit_code(), 255);
        let CliError::Config(ConfigError::InvalidValue { key: k, value: v, .. }) = &err else {
            panic!("{text}: expected InvalidValue, got {err:?}");
        };
        assert_eq!((k.as_str(), v.as_str()), (key, value));
        let message = err.to_string();
        assert!(message.contains(key) && message.contains(&format!("{value:?}")), "{message}");
    }
}

#[test]
fn malformed_config_file_is_an_error_naming_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = write_config(&dir, "a=\\u12\n");
    let err = Config::load(Some(&path)).expect_err("bad escape");
    assert!(matches!(err, ConfigError::Parse { .. }), "{err:?}");
    assert!(err.to_string().contains("namesrv.properties"), "{err}");
}

#[test]
fn shipped_example_config_loads() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../conf/namesrv.properties");
    let config = Config::load(Some(&path)).expect("example config is valid");
    assert_eq!(config.listen_port, 9876);
    assert_eq!(config.bind_address, "0.0.0.0");
    assert!(config.extra.is_empty(), "example uses only known keys: {:?}", config.extra);
    let expected = Config {
        config_store_path: config.config_store_path.clone(),
        loaded_from: config.loaded_from.clone(),
        ..Config::default()
    };
    assert_eq!(config, expected, "the example shows the defaults");
}

#[test]
fn unknown_keys_are_kept_and_listed_by_319() {
    let (_dir, _path, shared) =
        shared_from_file("clientWorkerThreads=4\nzzz.custom = some value\n");
    let config = shared.load();
    assert_eq!(config.extra.get("clientWorkerThreads").map(String::as_str), Some("4"));
    assert_eq!(config.get("zzz.custom").as_deref(), Some("some value"));
    let text = shared.to_properties_text();
    assert!(text.contains("\nclientWorkerThreads=4\n"), "{text}");
    assert!(text.ends_with("\nzzz.custom=some value\n"), "{text}");
}

#[test]
fn update_round_trip_rewrites_file_and_keeps_bak() {
    let original = "listenPort=9876\ncustom=1\n";
    let (_dir, path, shared) = shared_from_file(original);
    shared
        .apply_update(b"orderMessageEnable=true\nserverWorkerThreads=32\ncustom=2\nnotKnown=x\n")
        .expect("update");

    let text = shared.to_properties_text();
    assert!(text.contains("\norderMessageEnable=true\n"), "{text}");
    assert!(text.contains("\nserverWorkerThreads=32\n"), "{text}");
    assert!(text.contains("\ncustom=2\n"), "{text}");
    assert!(!text.contains("notKnown"), "unknown keys are dropped: {text}");

    let on_disk = std::fs::read_to_string(&path).expect("config file");
    assert_eq!(on_disk, text);
    let bak = std::fs::read_to_string(format!("{}.bak", path.display())).expect("bak");
    assert_eq!(bak, original);

    let reloaded = Config::load(Some(&path)).expect("persisted file loads");
    assert_eq!(reloaded.to_properties_text(), text);
}

/// Values that would break the running server or take it off its address at the next start
/// are refused with a remark naming the key, and nothing of the update is applied or written.
#[test]
fn updates_that_would_break_the_server_are_refused_and_nothing_is_applied() {
    let original = "listenPort=9876\nserverChannelMaxIdleTimeSeconds=120\n";
    let (_dir, path, shared) = shared_from_file(original);
    let before = shared.snapshot();
    for (body, key) in [
        (
            "orderMessageEnable=true\nserverChannelMaxIdleTimeSeconds=1\n",
            "serverChannelMaxIdleTimeSeconds",
        ),
        ("listenPort=1\n", "listenPort"),
        ("listenPort=10000\n", "listenPort"),
        ("bindAddress=10.1.2.3\n", "bindAddress"),
        ("httpListenPort=1\n", "httpListenPort"),
        ("httpBindAddress=10.1.2.3\n", "httpBindAddress"),
        ("serverFrameTimeoutSeconds=1\n", "serverFrameTimeoutSeconds"),
        ("scanNotActiveBrokerInterval=1\n", "scanNotActiveBrokerInterval"),
        ("com.rocketmq.remoting.frameMaxLength=65536\n", "com.rocketmq.remoting.frameMaxLength"),
        ("serverMaxPendingFrameBytes=100000\n", "serverMaxPendingFrameBytes"),
        ("serverMaxConnections=0\n", "serverMaxConnections"),
    ] {
        let err = shared.apply_update(body.as_bytes()).expect_err(body);
        let remark = err.to_string();
        assert!(remark.contains(key), "{body}: {remark}");
        assert_eq!(*shared.snapshot(), *before, "{body}: nothing applied");
        assert_eq!(std::fs::read_to_string(&path).expect("file"), original, "{body}: not written");
    }
    let remark =
        shared.apply_update(b"serverChannelMaxIdleTimeSeconds=1\n").expect_err("1 s").to_string();
    assert!(remark.contains("drops their routes"), "says why: {remark}");
    // Values a running server takes well are still applied: 0 (off), the port it has, ≥ 60 s.
    shared
        .apply_update(
            b"serverChannelMaxIdleTimeSeconds=0\nlistenPort=9876\nserverFrameTimeoutSeconds=30\n",
        )
        .expect("acceptable values");
    shared.apply_update(b"serverChannelMaxIdleTimeSeconds=60\n").expect("60 s");
    assert_eq!(shared.snapshot().server_channel_max_idle_time_seconds, 60);
}

/// A start-up file may hold values an update may not set (tests run with short timeouts), and
/// an update of another key does not trip over them.
#[test]
fn an_update_checks_only_the_keys_it_changes() {
    let (_dir, _path, shared) = shared_from_file("serverChannelMaxIdleTimeSeconds=2\n");
    shared.apply_update(b"orderMessageEnable=true\n").expect("unrelated key");
    assert!(shared.snapshot().order_message_enable);
}

#[test]
fn update_with_empty_body_changes_nothing() {
    let (_dir, path, shared) = shared_from_file("listenPort=9876\n");
    let before = shared.snapshot();
    shared.apply_update(b"").expect("empty body");
    assert_eq!(*shared.snapshot(), *before);
    assert!(!Path::new(&format!("{}.bak", path.display())).exists(), "nothing persisted");
}

#[test]
fn update_of_fixed_black_list_keys_is_no_permission() {
    let (_dir, path, shared) = shared_from_file("listenPort=9876\n");
    for key in FIXED_BLACK_LIST {
        let body = format!("orderMessageEnable=true\n{key}=/tmp/x\n");
        let err = shared.apply_update(body.as_bytes()).expect_err(key);
        assert!(
            matches!(&err, ConfigUpdateError::NoPermission { key: k } if k == key),
            "{key}: {err:?}"
        );
        assert_eq!(err.to_string(), "Can not update config in black list.");
    }
    assert!(!shared.load().order_message_enable, "a refused update applies nothing");
    assert_eq!(std::fs::read_to_string(&path).expect("file"), "listenPort=9876\n");
}

#[test]
fn update_of_key_added_to_black_list_is_no_permission() {
    let (_dir, _path, shared) =
        shared_from_file("configBlackList=configBlackList;productEnvName\n");
    let err = shared.apply_update(b"productEnvName=test\n").expect_err("black-listed");
    assert!(matches!(err, ConfigUpdateError::NoPermission { .. }), "{err:?}");
    assert!(shared.black_list().contains("productEnvName"));
    shared.apply_update(b"clusterTest=true\n").expect("not black-listed");
    assert!(shared.load().cluster_test);
}

#[test]
fn update_with_bad_value_is_refused_and_names_the_key() {
    let (_dir, path, shared) = shared_from_file("listenPort=9876\n");
    for body in [
        "orderMessageEnable=true\nlistenPort=abc\n",
        "waitSecondsForService=-5\n",
        "enableTopicList=1\n",
    ] {
        let err = shared.apply_update(body.as_bytes()).expect_err(body);
        assert!(matches!(err, ConfigUpdateError::InvalidValue(_)), "{body}: {err:?}");
        let key = body.lines().last().and_then(|l| l.split('=').next()).expect("key");
        assert!(err.to_string().contains(key), "{body}: {err}");
    }
    assert!(!shared.load().order_message_enable, "nothing applied");
    assert_eq!(
        std::fs::read_to_string(&path).expect("file"),
        "listenPort=9876\n",
        "nothing persisted"
    );
}

#[test]
fn update_with_malformed_body_is_string2properties_error() {
    let (_dir, _path, shared) = shared_from_file("");
    let err = shared.apply_update(b"a=\\uZZZZ").expect_err("bad escape");
    assert!(matches!(err, ConfigUpdateError::Parse(_)), "{err:?}");
    assert_eq!(err.to_string(), "string2Properties error");
}

#[test]
fn update_that_cannot_be_persisted_changes_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let blocker = dir.path().join("file");
    std::fs::write(&blocker, "").expect("write");
    let config = Config {
        config_store_path: blocker.join("namesrv.properties").to_string_lossy().into_owned(),
        ..Config::default()
    };
    let shared = SharedConfig::new(config);
    let err = shared.apply_update(b"orderMessageEnable=true\n").expect_err("parent is a file");
    assert!(matches!(err, ConfigUpdateError::Persist { .. }), "{err:?}");
    assert!(!shared.load().order_message_enable);
}

#[test]
fn dynamic_key_update_is_seen_by_concurrent_readers_at_once() {
    let (_dir, _path, shared) = shared_from_file("");
    let shared = Arc::new(shared);
    let held = shared.snapshot();
    assert!(!held.order_message_enable);

    let reader = {
        let shared = Arc::clone(&shared);
        std::thread::spawn(move || {
            // Poll until the update is visible; bounded so a lost update fails the test.
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
            while std::time::Instant::now() < deadline {
                if shared.load().order_message_enable {
                    return true;
                }
                std::thread::yield_now();
            }
            false
        })
    };
    shared.apply_update(b"orderMessageEnable=true\nenableTopicList=false\n").expect("update");
    assert!(shared.load().order_message_enable, "visible to the next load");
    assert!(!shared.load().enable_topic_list);
    assert!(reader.join().expect("reader thread"), "reader saw the update");
    assert!(!held.order_message_enable, "a held snapshot is immutable");
}

/// #21 finding 2: a literal `\n` in a 318 value is a line break once parsed; Java writes the
/// value unescaped, so the `-c` file gained a key (here `authenticationEnabled=false`, black-listed)
/// that the next start would read. The update is refused naming the key, and the file is untouched.
#[test]
fn an_escaped_line_break_cannot_smuggle_a_black_listed_key_into_the_file() {
    let original = "listenPort=9876\nauthenticationEnabled=false\n";
    let (_dir, path, shared) = shared_from_file(original);
    for body in [
        &br"httpNamesrvAddr=1.2.3.4:9876\nauthenticationEnabled=true\nauthConfigPath=/x.yml"[..],
        &b"httpNamesrvAddr=1.2.3.4:9876\\r\\nauthenticationEnabled=true"[..],
        &b"httpNamesrvAddr=a\\u000aauthenticationEnabled=true"[..],
        &b"httpNamesrvAddr=a\\u0000b"[..],
    ] {
        let err = shared.apply_update(body).expect_err("refused");
        assert!(
            matches!(err, namesrv::config::ConfigUpdateError::ControlCharacter { .. }),
            "{err}"
        );
        assert!(err.to_string().contains("httpNamesrvAddr"), "the remark names the key: {err}");
        assert_eq!(std::fs::read_to_string(&path).expect("file"), original, "nothing written");
        assert_eq!(shared.load().get("httpNamesrvAddr"), None, "nothing applied");
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

    /// Whatever a 318 body sets, the `-c` file it writes reads back at the next start as exactly
    /// what was accepted (values with backslashes, separators, comment marks, leading spaces and
    /// non-ASCII included), and a value with a control character is refused with nothing written.
    #[test]
    fn what_318_accepts_is_what_the_next_start_reads(
        a in ".{0,40}", b in "[ -~]{0,40}", c in "\\PC{0,20}",
    ) {
        let original = "listenPort=9876\ncustom.a=1\ncustom.b=2\ncustom.c=3\n";
        let (_dir, path, shared) = shared_from_file(original);
        let body = namesrv::properties::to_escaped_text([
            ("custom.a", a.as_str()), ("custom.b", b.as_str()), ("custom.c", c.as_str()),
            ("httpNamesrvAddr", b.as_str()),
        ]);
        let accepted = shared.apply_update(body.as_bytes());
        let has_control = [&a, &b, &c].iter().any(|v| v.chars().any(char::is_control));
        proptest::prop_assert_eq!(accepted.is_err(), has_control, "{:?}", accepted);
        let restarted = Config::load(Some(&path)).expect("the written file loads");
        if has_control {
            proptest::prop_assert_eq!(std::fs::read_to_string(&path).expect("file"), original);
        } else {
            proptest::prop_assert_eq!(restarted.get("custom.a"), Some(a));
            proptest::prop_assert_eq!(restarted.get("custom.b"), Some(b.clone()));
            proptest::prop_assert_eq!(restarted.get("custom.c"), Some(c));
            proptest::prop_assert_eq!(
                restarted.get("httpNamesrvAddr"), shared.load().get("httpNamesrvAddr")
            );
            proptest::prop_assert_eq!(
                restarted.to_properties_text(), shared.to_properties_text()
            );
        }
    }
}
