//! The checks that keep the book true: a generated page equals what its generator renders now,
//! and a binary's `-p` prints exactly the keys its reference page documents.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The path of a page of the book's sources: `book_page("reference/keys.md")` is
/// `<workspace>/docs/src/reference/keys.md`.
pub fn book_page(relative: &str) -> PathBuf {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let workspace = crate_dir.parent().and_then(Path::parent).unwrap_or(crate_dir);
    workspace.join("docs/src").join(relative)
}

/// Checks that `path` holds `contents`. If it does not, writes `contents` there and panics
/// saying so: the first run after a change regenerates the page and fails, the next passes, and
/// the regenerated page is committed with the change (on a clean checkout the test fails until
/// it is). `regenerate` is the command to name in the message.
pub fn ensure_file(path: &Path, contents: &str, regenerate: &str) {
    let current = std::fs::read_to_string(path).unwrap_or_default();
    if current == contents {
        return;
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).expect("create the page's directory");
    }
    std::fs::write(path, contents).expect("write the regenerated page");
    panic!(
        "{} was out of date and has been regenerated from the code; review it, commit it, and \
         run `{regenerate}` again to see it pass",
        path.display()
    );
}

/// The keys a reference page documents: the text of every `` ### `key` `` heading.
pub fn documented_keys(page: &str) -> BTreeSet<String> {
    page.lines()
        .filter_map(|line| line.strip_prefix("### `")?.strip_suffix('`'))
        .map(str::to_owned)
        .collect()
}

/// The keys of a `-p` listing: the part before the first `=` of every non-empty line.
pub fn printed_keys(listing: &str) -> BTreeSet<String> {
    listing
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| line.split_once('=').map_or(line, |(key, _)| key).trim().to_owned())
        .collect()
}

/// Runs `binary -p` and panics unless it prints exactly the keys that the book page documents:
/// a key printed but not documented, or documented but no longer printed, fails with the list
/// and the fix.
pub fn assert_binary_keys_documented(binary: &str, page: &Path) {
    let output = Command::new(binary).arg("-p").output().expect("run the binary with -p");
    assert!(output.status.success(), "{binary} -p failed: {output:?}");
    let printed = printed_keys(&String::from_utf8_lossy(&output.stdout));
    assert!(!printed.is_empty(), "{binary} -p printed no key");
    let text = std::fs::read_to_string(page)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", page.display()));
    let documented = documented_keys(&text);
    let undocumented: Vec<_> = printed.difference(&documented).collect();
    let stale: Vec<_> = documented.difference(&printed).collect();
    assert!(
        undocumented.is_empty() && stale.is_empty(),
        "{binary} -p and {} disagree.\nPrinted but not documented: {undocumented:?}\n\
         Documented but not printed: {stale:?}\nRegenerate the page from the key table (see \
         its generated notice) and commit it.",
        page.display()
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documented_keys_are_the_third_level_code_headings() {
        let page =
            "# Keys\n\n| [`a`](#a) |\n\n## Section\n\n### `a`\n\ntext `b`\n### `c.d`\n#### `e`\n";
        assert_eq!(documented_keys(page), BTreeSet::from(["a".to_owned(), "c.d".to_owned()]));
    }

    #[test]
    fn printed_keys_take_the_text_before_the_first_equals() {
        let listing = "listenPort=9876\nrocketmqHome=\n\nweird=a=b\n";
        let keys: Vec<_> = printed_keys(listing).into_iter().collect();
        assert_eq!(keys, ["listenPort", "rocketmqHome", "weird"]);
    }

    #[test]
    fn ensure_file_accepts_the_same_text_and_rewrites_a_different_one() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("page.md");
        std::fs::write(&path, "old\n").expect("write");
        let rewrite = std::panic::catch_unwind(|| ensure_file(&path, "new\n", "cmd"));
        assert!(rewrite.is_err(), "a stale page fails");
        assert_eq!(std::fs::read_to_string(&path).expect("read"), "new\n");
        ensure_file(&path, "new\n", "cmd");
    }
}
