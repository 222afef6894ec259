//! The documentation book's controller key reference is generated from the controller's key
//! table, like the nameserver's (`crates/namesrv/tests/book.rs`); that `mqcontroller -p` prints
//! exactly the keys it documents is checked where the binary is built
//! (`crates/daemon/tests/book.rs`).
//!
//! After adding or changing a key: `cargo test -p controller --test book` (the first run
//! rewrites the page and fails; the second passes), then commit the page.

use controller::Config;
use keyref::{book_page, Reference};

const REGENERATE: &str = "cargo test -p controller --test book";
const PAGE: &str = "reference/controller-keys.md";

const INTRO: &str = "\
The keys of the RocketMQ 5 controller, read from the properties file of `mqcontroller -c FILE` \
or, with `enableControllerInNamesrv=true`, from the nameserver's own file. They are the Java \
`ControllerConfig` keys with Java's defaults (a Java `controller.conf` works unchanged), the \
`NettyServerConfig` keys that apply, the Raft timings of this implementation and its HTTP \
listener (metrics and probes). \
`mqcontroller -p` prints every key with its effective value. A value of the wrong type or out \
of range stops start-up with a message naming the key.

**Run-time change** says what an UPDATE_CONTROLLER_CONFIG (`mqadmin updateControllerConfig -k \
KEY -v VALUE -a CONTROLLER:PORT`) does to the running node. *at once*: used from the next \
request or election on. *next start*: persisted to `configStorePath` (the `-c` file when there \
is one) and used at the next start. *refused*: answered with NO_PERMISSION and nothing \
changes. *none (unused)*: accepted for compatibility, not read.";

#[test]
fn controller_key_reference_page_is_generated_from_the_key_table() {
    let keys = Config::documented_keys();
    let page = keyref::render_reference(&Reference {
        title: "Controller configuration keys",
        source: "the `config_struct!` table in `crates/controller/src/config.rs`",
        regenerate: REGENERATE,
        intro: INTRO,
        keys: &keys,
    });
    keyref::ensure_file(&book_page(PAGE), &page, REGENERATE);
}
