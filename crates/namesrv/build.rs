//! Records the git commit being built (`NAMESRV_GIT_COMMIT`, for the `build_info` metric);
//! nothing when git or the repository is not there (a crates.io or tarball build).

use std::process::Command;

fn main() {
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
        if let Some(head_ref) = git(&["symbolic-ref", "-q", "HEAD"]) {
            println!("cargo:rerun-if-changed={dir}/{head_ref}");
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
}
