//! Crash-safe replacement of a whole file, shared by the KV store and the config store.
//!
//! Sequence: create the parent directories; write `<path>.tmp` and fsync it; keep the current
//! content of `<path>` (if any) as `<path>.bak` as Java does (a hard link to the old file, no
//! copy); rename the temp file over `<path>`; fsync the directory. A crash at any point leaves
//! `<path>` either old or new, never torn. Callers serialize writers to one path themselves.
//! Used by the KV store, the config store and the route snapshot (which streams its content
//! into the temp file through [`write_atomically_with`] instead of handing over a buffer).
//!
//! Java: `MixAll#string2File` (which writes in place; the `.bak` copy is kept for operators).

use std::ffi::OsString;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// `path` with `suffix` appended to its file name (`a/b.json` + `.tmp` = `a/b.json.tmp`).
pub fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name: OsString = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// Replaces the content of `path` with `contents` atomically and durably (see module docs).
/// Blocking: call from a blocking context (`spawn_blocking` in async code).
pub fn write_atomically(path: &Path, contents: &[u8]) -> io::Result<()> {
    write_atomically_with(path, |file| file.write_all(contents))
}

/// [`write_atomically`] with the content streamed by `write` into the (empty) temp file, which
/// it may also seek in (a header written last): no buffer of the whole content is needed. An
/// error from `write` leaves `path` and its `.bak` untouched (the temp file is removed).
pub fn write_atomically_with<T>(
    path: &Path,
    write: impl FnOnce(&mut File) -> io::Result<T>,
) -> io::Result<T> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    fs::create_dir_all(&dir)?;

    let tmp = with_suffix(path, ".tmp");
    let written = {
        let mut file = OpenOptions::new().write(true).create(true).truncate(true).open(&tmp)?;
        match write(&mut file).and_then(|written| file.sync_all().map(|()| written)) {
            Ok(written) => written,
            Err(e) => {
                drop(file);
                let _ = fs::remove_file(&tmp);
                return Err(e);
            }
        }
    };

    match fs::symlink_metadata(path) {
        Ok(_) => keep_previous(path, &with_suffix(path, ".bak"))?,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }

    fs::rename(&tmp, path)?;
    File::open(&dir)?.sync_all()?;
    Ok(written)
}

/// Makes the current content of `path` its `.bak`: a second name for the file (the rename that
/// follows gives `path` the new one), so no byte is copied; a copy where the file system has no
/// hard links.
fn keep_previous(path: &Path, bak: &Path) -> io::Result<()> {
    match fs::remove_file(bak) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    if fs::hard_link(path, bak).is_err() {
        fs::copy(path, bak)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_write_creates_parents_and_no_bak() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("a/b/file.json");
        write_atomically(&path, b"one").expect("write");
        assert_eq!(fs::read(&path).expect("read"), b"one");
        assert!(!with_suffix(&path, ".bak").exists());
        assert!(!with_suffix(&path, ".tmp").exists());
    }

    #[test]
    fn second_write_keeps_previous_content_in_bak() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("file.json");
        write_atomically(&path, b"one").expect("write");
        write_atomically(&path, b"two").expect("write");
        assert_eq!(fs::read(&path).expect("read"), b"two");
        assert_eq!(fs::read(with_suffix(&path, ".bak")).expect("read bak"), b"one");
    }

    #[test]
    fn a_streamed_write_may_seek_and_a_failed_one_changes_nothing() {
        use std::io::{Seek, SeekFrom};
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("file.bin");
        write_atomically(&path, b"one").expect("write");
        let n = write_atomically_with(&path, |f| {
            f.write_all(b"....body")?;
            f.seek(SeekFrom::Start(0))?;
            f.write_all(b"head")?;
            Ok(8)
        })
        .expect("streamed write");
        assert_eq!(n, 8);
        assert_eq!(fs::read(&path).expect("read"), b"headbody");
        assert_eq!(fs::read(with_suffix(&path, ".bak")).expect("read bak"), b"one");
        let failed = write_atomically_with(&path, |f| {
            f.write_all(b"half")?;
            Err::<(), _>(io::Error::other("disk full"))
        });
        assert!(failed.is_err());
        assert_eq!(fs::read(&path).expect("read"), b"headbody");
        assert_eq!(fs::read(with_suffix(&path, ".bak")).expect("read bak"), b"one");
        assert!(!with_suffix(&path, ".tmp").exists());
    }
}
