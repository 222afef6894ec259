//! The documentation book's key reference is generated from the key table:
//! `docs/src/reference/keys.md` equals what `Config::documented_keys` renders now (that
//! `mqnamesrv -p` prints exactly the keys the page documents is checked where the binary is
//! built: `crates/daemon/tests/book.rs`).
//!
//! After adding or changing a key: `cargo test -p namesrv --test book` (the first run rewrites
//! the page and fails; the second passes), then commit the page.

use keyref::{book_page, DefaultValue, Reference};
use namesrv::Config;

const REGENERATE: &str = "cargo test -p namesrv --test book";

const INTRO: &str = "\
Every key below can be set in the properties file given with `mqnamesrv -c FILE`, one \
`key=value` per line, with the Java NameServer's names and defaults: a Java `namesrv.properties` \
works unchanged. `mqnamesrv -p` (after `-c FILE` if any) prints every key with its effective \
value. A value that cannot be converted to the key's type or is out of range stops start-up \
with a message naming the key (Java ignores it silently). Keys that no row knows are kept as \
written: GET_NAMESRV_CONFIG returns them and UPDATE_NAMESRV_CONFIG re-persists them, as Java \
does.

**Run-time change** says what an UPDATE_NAMESRV_CONFIG (`mqadmin updateNamesrvConfig -k KEY \
-v VALUE`) does to the running server. *at once*: the server uses the new value from the next \
request on. *next start*: the value is persisted to `configStorePath` (the `-c` file when there \
is one) and used when the server next starts from that file. *refused*: the update is answered \
with NO_PERMISSION (16) and nothing changes. *none (unused)*: accepted and persisted for compatibility, \
but this server does not read it. An update with a bad value is refused as a whole with \
SYSTEM_ERROR and a message naming the key (Java ignores the value and answers SUCCESS).";

#[test]
fn key_reference_page_is_generated_from_the_key_table() {
    let keys = Config::documented_keys();
    let page = keyref::render_reference(&Reference {
        title: "Configuration keys",
        source: "the `config_struct!` table in `crates/namesrv/src/config/keys.rs`",
        regenerate: REGENERATE,
        intro: INTRO,
        keys: &keys,
    });
    keyref::ensure_file(&book_page("reference/keys.md"), &page, REGENERATE);
}

#[test]
fn every_key_has_documentation_and_machine_independent_defaults() {
    let machine: Vec<String> = ["HOME", "ROCKETMQ_HOME"]
        .iter()
        .filter_map(|var| std::env::var(var).ok())
        .filter(|value| value.len() > 1)
        .collect();
    for info in Config::documented_keys() {
        assert!(
            info.doc.split_whitespace().count() >= 3,
            "{}: give the key a `///` comment saying what it does",
            info.key
        );
        if let DefaultValue::Value(default) = &info.default {
            for value in &machine {
                assert!(
                    !default.contains(value.as_str()),
                    "{}: the default {default:?} depends on this machine; describe it with a \
                     `default_doc = \"...\"` marker",
                    info.key
                );
            }
        }
    }
}

#[test]
fn keys_an_update_may_not_change_are_documented_as_refused() {
    let infos = Config::documented_keys();
    let refused: Vec<&str> = infos.iter().filter(|i| i.refused).map(|i| i.key).collect();
    // The default black list (Java's four, the snapshot path and the access-control keys) and
    // where the server listens.
    assert_eq!(
        refused,
        [
            "rocketmqHome",
            "kvConfigPath",
            "configStorePath",
            "configBlackList",
            "bindAddress",
            "listenPort",
            "routeSnapshotPath",
            "httpListenPort",
            "httpBindAddress",
            "authenticationEnabled",
            "authConfigPath",
            "authenticationMode",
            "proxyProtocolTrustedAddresses",
            "authFailureWindowSeconds"
        ]
    );
    assert_eq!(infos.len(), Config::KEYS.len());
}

/// Scenario 8 of the interop suite compares GET_NAMESRV_CONFIG (319) with the Java
/// nameserver's and fails on every key only ours shows unless `interop/allowlist.txt` lists it
/// with a reason; a key of our own that 319 shows by default (it has a default value) must be
/// listed there, so adding one cannot fail the interop suite in CI only.
#[test]
fn keys_of_our_own_shown_by_319_are_in_the_interop_allow_list() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../interop/allowlist.txt");
    let list = std::fs::read_to_string(&path).expect("interop/allowlist.txt");
    let allowed: Vec<&str> = list
        .lines()
        .filter(|line| !line.starts_with('#'))
        .filter_map(|line| {
            let mut fields = line.split_whitespace();
            (fields.next() == Some("config/get*"))
                .then(|| fields.next())
                .flatten()
                .and_then(|field| field.strip_prefix("body."))
        })
        .collect();
    let missing: Vec<&str> = Config::documented_keys()
        .iter()
        .filter(|info| info.java_source() == "none")
        .filter(|info| !matches!(info.default, DefaultValue::Unset))
        .map(|info| info.key)
        .filter(|key| !allowed.contains(key))
        .collect();
    assert!(
        missing.is_empty(),
        "keys of our own that 319 shows but interop/allowlist.txt does not list (add a \
         `config/get*  body.KEY  reason` line for each): {missing:?}"
    );
}
