//! Records the git commit being built (`NAMESRV_GIT_COMMIT`, for the `build_info` metric) in
//! release builds; nothing when git or the repository is not there (a crates.io or tarball
//! build). Debug builds say `unknown`, so a commit does not rebuild the crate for every test run.

use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    if std::env::var("PROFILE").as_deref() != Ok("release") {
        return;
    }
    let git = |args: &[&str]| {
        Command::new("git")
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .and_then(|o| String::from_utf8(o.stdout).ok())
            .map(|s| s.trim().to_owned())
    };
    if let Some(commit) = git(&["rev-parse", "--short=12", "HEAD"]) {
        println!("cargo:rustc-env=NAMESRV_GIT_COMMIT={commit}");
    }
    // Rebuild when HEAD moves (a commit, a checkout).
    if let Some(dir) = git(&["rev-parse", "--git-dir"]) {
        println!("cargo:rerun-if-changed={dir}/HEAD");
        // A loose branch ref moves on each commit (a packed one is not a file to watch).
        let common = git(&["rev-parse", "--git-common-dir"]).unwrap_or_else(|| dir.clone());
        if let Some(head_ref) = git(&["symbolic-ref", "-q", "HEAD"]) {
            for base in [&dir, &common] {
                let path = std::path::Path::new(base).join(&head_ref);
                if path.exists() {
                    println!("cargo:rerun-if-changed={}", path.display());
                }
            }
        }
    }
}
