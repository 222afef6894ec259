//! The crate graph's invariants (ARCHITECTURE.md), read from `cargo metadata` so that adding a
//! forbidden dependency fails here: the core (`namesrv`) depends on no HTTP, metrics-exposition,
//! TLS or YAML crate and not on the controller; `transport` and `acl` sit below the core;
//! `ops` sits above it; the controller and `counters` keep plain counters (no HTTP, no
//! exposition); nothing is built on `daemon`, whose binaries are thin `main`s.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

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

/// Crates only `transport` needs (certificates and keys); the core may use them in tests only.
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
fn transport_and_acl_sit_below_the_core_and_ops_above_it() {
    let packages = workspace();
    for lower in ["transport", "acl"] {
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
