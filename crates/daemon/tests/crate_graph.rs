//! The crate graph's invariants (ARCHITECTURE.md), read from `cargo metadata` so that adding a
//! forbidden dependency fails here: the core (`namesrv`) depends on no HTTP, metrics-exposition,
//! TLS or YAML crate and not on the controller; `transport` and `acl` sit below the core;
//! `ops` sits above it; the controller and `counters` keep plain counters (no HTTP, no
//! exposition); nothing is built on `daemon`, whose binaries are thin `main`s; only
//! `allocator` allows `unsafe`, in one block.
//!
//! The layering the graph cannot see is checked by scanning sources (rustfmt-formatted, as CI
//! requires): `route/` sees no clock, no runtime and no server state; no file under `crates/`
//! has over 600 lines of non-test code; no function of the core has over 80 lines; the core
//! has one way through its server (`serve_connection` is connection plumbing, at most 60 lines)
//! and only `dispatch.rs` turns an error into a response code (the handlers' `HandlerError` is
//! theirs: no handler names `dispatch`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde_json::Value;

/// Crates the core must not depend on directly, whatever the kind of dependency.
const NOT_IN_THE_CORE: &[&str] = &[
    "axum",
    "prometheus-client",
    "rustls",
    "tokio-rustls",
    "serde_yaml_ng",
    "controller",
    "ops",
    "daemon",
];

/// Crates only `transport` and `client` need (certificates and keys); the core may use them in
/// tests only.
const NOT_IN_THE_CORE_OUTSIDE_TESTS: &[&str] = &["x509-parser", "rcgen", "pkcs8"];

/// The server binaries (and the admin tool): `main` parses, and the library does the rest.
const THIN_BINARIES: &[&str] = &["mqnamesrv", "mqcontroller", "mqadmin"];

/// Lines a thin binary's `main` file stays under.
const MAIN_LINES: usize = 40;

struct Package {
    /// Dependency name → kinds (`normal`, `dev`, `build`).
    deps: BTreeMap<String, BTreeSet<String>>,
    /// Binary name → source file.
    bins: BTreeMap<String, PathBuf>,
}

/// Every workspace package, from `cargo metadata --no-deps`.
fn workspace() -> BTreeMap<String, Package> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let out = std::process::Command::new(cargo)
        .args(["metadata", "--no-deps", "--format-version", "1", "--offline"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo metadata runs");
    assert!(out.status.success(), "cargo metadata: {}", String::from_utf8_lossy(&out.stderr));
    let metadata: Value = serde_json::from_slice(&out.stdout).expect("metadata JSON");
    let mut packages = BTreeMap::new();
    for package in metadata["packages"].as_array().expect("packages") {
        let mut deps: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for dep in package["dependencies"].as_array().expect("dependencies") {
            let kind = dep["kind"].as_str().unwrap_or("normal").to_owned();
            deps.entry(dep["name"].as_str().expect("name").to_owned()).or_default().insert(kind);
        }
        let bins = package["targets"]
            .as_array()
            .expect("targets")
            .iter()
            .filter(|t| t["kind"].as_array().is_some_and(|k| k.iter().any(|k| k == "bin")))
            .map(|t| {
                let name = t["name"].as_str().expect("name").to_owned();
                (name, PathBuf::from(t["src_path"].as_str().expect("src_path")))
            })
            .collect();
        packages.insert(package["name"].as_str().expect("name").to_owned(), Package { deps, bins });
    }
    packages
}

/// The workspace packages `name` depends on with a normal or build dependency, transitively.
fn normal_closure(packages: &BTreeMap<String, Package>, name: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut todo = vec![name.to_owned()];
    while let Some(next) = todo.pop() {
        let Some(package) = packages.get(&next) else { continue };
        for (dep, kinds) in &package.deps {
            if kinds.iter().any(|k| k != "dev")
                && packages.contains_key(dep)
                && seen.insert(dep.clone())
            {
                todo.push(dep.clone());
            }
        }
    }
    seen
}

#[test]
fn the_core_depends_on_no_http_exposition_tls_yaml_or_controller_crate() {
    let packages = workspace();
    let core = &packages["namesrv"];
    for name in NOT_IN_THE_CORE {
        assert!(
            !core.deps.contains_key(*name),
            "namesrv depends on {name}: {:?}",
            core.deps[*name]
        );
    }
    for name in NOT_IN_THE_CORE_OUTSIDE_TESTS {
        let kinds = core.deps.get(*name).cloned().unwrap_or_default();
        assert!(kinds.iter().all(|k| k == "dev"), "namesrv depends on {name} outside tests");
    }
    let below = normal_closure(&packages, "namesrv");
    for name in ["controller", "ops", "daemon"] {
        assert!(!below.contains(name), "namesrv is built on {name}");
    }
}

#[test]
fn transport_acl_and_the_cores_own_parts_sit_below_the_core_and_ops_above_it() {
    let packages = workspace();
    for lower in ["transport", "acl", "kv", "events", "lane", "cowmap", "intern", "packed"] {
        let closure = normal_closure(&packages, lower);
        for higher in ["namesrv", "ops", "daemon", "controller"] {
            assert!(!closure.contains(higher), "{lower} is built on {higher}");
            let kinds = packages[lower].deps.get(higher);
            assert!(kinds.is_none(), "{lower} depends on {higher} ({kinds:?})");
        }
    }
    assert!(normal_closure(&packages, "ops").contains("namesrv"), "ops reads the core");
    for (name, package) in &packages {
        if let Some(kinds) = package.deps.get("ops") {
            assert!(
                name == "daemon",
                "{name} depends on ops ({kinds:?}): only the daemon wires it"
            );
        }
        if let Some(kinds) = package.deps.get("daemon") {
            assert!(kinds.iter().all(|k| k == "dev"), "{name} builds on daemon ({kinds:?})");
        }
    }
}

#[test]
fn the_controller_and_the_counters_keep_plain_counters() {
    let packages = workspace();
    for name in ["controller", "counters"] {
        for dep in ["axum", "prometheus-client", "namesrv", "ops", "daemon"] {
            let kinds = packages[name].deps.get(dep);
            assert!(
                kinds.is_none(),
                "{name} depends on {dep} ({kinds:?}): its metrics are ops' to expose"
            );
        }
    }
    let closure = normal_closure(&packages, "counters");
    assert!(closure.iter().all(|c| c == "remoting"), "counters is built on {closure:?}");
    assert!(normal_closure(&packages, "ops").contains("controller"), "ops exposes the controller");
}

#[test]
fn the_binaries_are_thin_mains() {
    let packages = workspace();
    let bins: BTreeMap<&String, &PathBuf> = packages.values().flat_map(|p| p.bins.iter()).collect();
    for name in THIN_BINARIES {
        let path = bins.get(&name.to_string()).unwrap_or_else(|| panic!("no binary {name}"));
        let lines = std::fs::read_to_string(path).expect("main file").lines().count();
        assert!(lines < MAIN_LINES, "{name}'s main ({}) has {lines} lines", path.display());
    }
    let daemon_bins: BTreeSet<&str> = packages["daemon"].bins.keys().map(String::as_str).collect();
    assert_eq!(daemon_bins, BTreeSet::from(["mqcontroller", "mqnamesrv"]), "the servers' binaries");
}

/// The one crate whose lints are not the workspace's: it allows `unsafe` (denied, not forbidden)
/// for one call into the allocator.
const UNSAFE_CRATE: &str = "allocator";

#[test]
fn only_the_allocator_crate_allows_unsafe_and_at_one_block() {
    for entry in std::fs::read_dir(crates_dir()).expect("crates/") {
        let dir = entry.expect("entry").path();
        let name = dir.file_name().expect("name").to_string_lossy().into_owned();
        let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).expect("Cargo.toml");
        if name == UNSAFE_CRATE {
            assert!(manifest.contains("unsafe_code = \"deny\""), "{name}: unsafe denied");
        } else {
            assert!(
                manifest.contains("[lints]\nworkspace = true"),
                "{name} must take the workspace's lints (unsafe_code = forbid)"
            );
        }
    }
    let blocks: usize = sources(&crates_dir().join(UNSAFE_CRATE))
        .iter()
        .flat_map(|f| non_test_lines(f))
        .filter(|l| !l.trim_start().starts_with("//") && l.contains("unsafe {"))
        .count();
    assert_eq!(blocks, 1, "{UNSAFE_CRATE} has one unsafe block");
}

/// `path`'s `.rs` files, recursively, skipping `tests/` directories (integration tests and the
/// route tables' test modules).
fn sources(path: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut todo = vec![path.to_path_buf()];
    while let Some(dir) = todo.pop() {
        for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let path = entry.expect("directory entry").path();
            if path.is_dir() {
                if path.file_name().is_some_and(|n| n != "tests" && n != "target") {
                    todo.push(path);
                }
            } else if path.extension().is_some_and(|e| e == "rs") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// A file's non-test lines: all but its inline test modules (`#[cfg(test)]` then `mod <name> {`
/// to the `}` that closes it at the start of a line), wherever they stand.
fn non_test_lines(path: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut kept = Vec::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        let opens_tests = line == "#[cfg(test)]"
            && lines.peek().is_some_and(|next| next.starts_with("mod ") && next.ends_with('{'));
        if opens_tests {
            lines.by_ref().find(|l| *l == "}");
        } else {
            kept.push(line.to_owned());
        }
    }
    kept
}

/// The workspace's `crates/` directory.
fn crates_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("crates/").to_path_buf()
}

/// What `route/` may not name outside its tests: it is handed time as a parameter, runs on no
/// runtime and knows nothing of the server's state.
const NOT_IN_ROUTE: &[&str] =
    &["Instant::now", "SystemTime::now", "quanta", "tokio", "crate::state", "crate::server"];

#[test]
fn route_sees_no_clock_no_runtime_and_no_server_state() {
    let route = crates_dir().join("namesrv/src/route");
    let files = sources(&route);
    assert!(files.len() > 5, "route/ has its files: {files:?}");
    for file in files {
        for (n, line) in non_test_lines(&file).iter().enumerate() {
            let code = line.split("//").next().unwrap_or_default();
            for word in NOT_IN_ROUTE {
                assert!(
                    !code.contains(word),
                    "{}:{}: route/ names {word}: pass the time in, keep the runtime and the \
                     state outside (ARCHITECTURE.md)",
                    file.display(),
                    n + 1
                );
            }
        }
    }
}

/// The most non-test lines a source file under `crates/` may have (the developers' guide).
const FILE_LINES: usize = 600;

#[test]
fn no_source_file_has_over_600_lines_of_non_test_code() {
    let files = sources(&crates_dir());
    assert!(files.len() > 100, "the workspace's sources are found: {}", files.len());
    let long: Vec<String> = files
        .iter()
        .map(|f| (f, non_test_lines(f).len()))
        .filter(|(_, n)| *n > FILE_LINES)
        .map(|(f, n)| format!("{} ({n})", f.display()))
        .collect();
    assert!(long.is_empty(), "over {FILE_LINES} non-test lines: split by noun: {long:?}");
}

/// The most non-test lines the core (`crates/namesrv/src`) may have: 7,491 when #23 closed
/// (12,110 before it), then #25's batched route writer and in-place refresh (+20), and the
/// decoded tables kept for sharing (+10).
const CORE_LINES: usize = 7_560;

#[test]
fn the_core_has_at_most_7560_lines_of_non_test_code() {
    let core = crates_dir().join("namesrv/src");
    let files = sources(&core);
    assert!(files.len() > 30, "the core's sources are found: {}", files.len());
    let mut sizes: Vec<(usize, String)> =
        files.iter().map(|f| (non_test_lines(f).len(), f.display().to_string())).collect();
    let total: usize = sizes.iter().map(|(n, _)| n).sum();
    sizes.sort_unstable_by(|a, b| b.cmp(a));
    assert!(
        total <= CORE_LINES,
        "the core has {total} non-test lines (at most {CORE_LINES}): move a noun out; largest: {:?}",
        &sizes[..5]
    );
}

/// The most lines a function of the core may have, from `fn` to its closing brace.
const FUNCTION_LINES: usize = 80;

/// The core's functions still over [`FUNCTION_LINES`] (#23 is splitting them): each must stay
/// long (a split one leaves this list), and no other may join them.
const LONG_FUNCTIONS_LEFT: &[&str] = &[];

/// Every function of `lines` (rustfmt-formatted: the closing brace sits alone at the `fn`'s
/// indentation) as (name, lines from `fn` to the closing brace).
fn functions(lines: &[String]) -> Vec<(String, usize)> {
    let mut found = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let body = line.trim_start();
        let indent = &line[..line.len() - body.len()];
        let mut words = body.split_whitespace().skip_while(|w| {
            w.starts_with("pub") || ["async", "const", "unsafe", "extern", "\"C\""].contains(w)
        });
        if words.next() != Some("fn") || body.ends_with(';') {
            continue;
        }
        let name: String = words
            .next()
            .unwrap_or_default()
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        if body.ends_with('}') {
            found.push((name, 1)); // `fn f() -> T { .. }` on one line
            continue;
        }
        let close = format!("{indent}}}");
        if let Some(end) = lines[i..].iter().position(|l| *l == close) {
            found.push((name, end + 1));
        }
    }
    found
}

#[test]
fn no_function_of_the_core_has_over_80_lines() {
    let core = crates_dir().join("namesrv/src");
    let mut long = BTreeSet::new();
    let mut counted = 0;
    for file in sources(&core) {
        let relative = file.strip_prefix(&core).expect("under src").display().to_string();
        for (name, lines) in functions(&non_test_lines(&file)) {
            counted += 1;
            if lines > FUNCTION_LINES {
                long.insert(format!("{relative}::{name}"));
            }
        }
    }
    assert!(counted > 300, "the core's functions are found: {counted}");
    let left: BTreeSet<String> = LONG_FUNCTIONS_LEFT.iter().map(|s| (*s).to_owned()).collect();
    let new: Vec<&String> = long.difference(&left).collect();
    assert!(new.is_empty(), "over {FUNCTION_LINES} lines: split by step: {new:?}");
    let split: Vec<&String> = left.difference(&long).collect();
    assert!(
        split.is_empty(),
        "no longer over {FUNCTION_LINES} lines: drop from the list: {split:?}"
    );
}

/// The most lines of `server.rs::serve_connection`: connection plumbing only (frames in, the
/// batch flushed, deadlines), every frame answered by `dispatch::answer`.
const SERVE_CONNECTION_LINES: usize = 60;

#[test]
fn the_server_has_one_way_through_it() {
    let core = crates_dir().join("namesrv/src");
    let server = non_test_lines(&core.join("server.rs"));
    let serve_connection = functions(&server)
        .into_iter()
        .find(|(name, _)| name == "serve_connection")
        .expect("server.rs::serve_connection");
    assert!(
        serve_connection.1 <= SERVE_CONNECTION_LINES,
        "serve_connection has {} lines (at most {SERVE_CONNECTION_LINES}): connection plumbing \
         only, the answers are dispatch's",
        serve_connection.1
    );
    let code = |l: &String| l.split("//").next().unwrap_or_default().to_owned();
    let answers = server.iter().map(code).filter(|l| l.contains("dispatch::answer(")).count();
    assert_eq!(answers, 1, "server.rs answers every frame through dispatch::answer, once");
    for file in sources(&core) {
        let relative = file.strip_prefix(&core).expect("under src").display().to_string();
        for (n, line) in non_test_lines(&file).iter().enumerate() {
            let code = line.split("//").next().unwrap_or_default();
            let at = format!("{relative}:{}", n + 1);
            if relative.starts_with("handler/") {
                // HandlerError lives with the handlers: they never reach back into dispatch.
                assert!(!code.contains("dispatch::"), "{at}: a handler names dispatch");
            }
            if relative != "dispatch.rs" {
                // Handlers and the server name no other entry of dispatch.
                let entries = code.matches("dispatch::").count();
                let answer = code.matches("dispatch::answer(").count();
                assert_eq!(entries, answer, "{at}: dispatch's one entry point is answer");
                // Only dispatch maps an error to a response code; a handler says SUCCESS.
                let codes = code.matches("ResponseCode::").count();
                let success = code.matches("ResponseCode::Success").count();
                assert_eq!(codes, success, "{at}: a response code outside dispatch.rs");
            }
            if relative != "dispatch.rs" && relative != "handler/mod.rs" {
                assert!(
                    !code.contains("RemotingCommand::response("),
                    "{at}: a response built outside dispatch.rs (handlers start from success())"
                );
            }
        }
    }
}
