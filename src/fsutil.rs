//! The one way every store writes a whole file: atomically, so a reader or a crash never sees a
//! half-written file (`docs/ARCHITECTURE.md`, "Files are written atomically"). Used for the
//! settings, the test phone's identity, `phoneline-pairings.json` (with a `.bak` of the previous
//! file), the phone-line registry settings file and dial exports.
//!
//! Steps: create the parent folder when missing, write a temporary file in the same folder
//! (`.NAME.XXXXXX.tmp`), fsync it, rename it over the target, and on Unix fsync the folder so the
//! rename itself survives a crash. On any error the target is untouched and the temporary file is
//! removed.

use std::fs::File;
use std::io::{self, Write};
use std::path::Path;

/// Writes `bytes` to `path` atomically (see the module doc). Creates the parent folder when
/// missing.
///
/// # Errors
/// Any I/O error creating the folder, writing, syncing or renaming (also when `path` names no
/// file, e.g. `/` or `..`); `path` is then unchanged.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write_atomic_with(path, |file| file.write_all(bytes))
}

/// Like [`write_atomic`], with the content written by `write` into the temporary file (for
/// content streamed rather than held in memory). Returns what `write` returned.
///
/// # Errors
/// `write`'s error, or any I/O error of [`write_atomic`]; `path` is then unchanged.
pub fn write_atomic_with<T>(
    path: &Path,
    write: impl FnOnce(&mut File) -> io::Result<T>,
) -> io::Result<T> {
    let name = path.file_name().ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} does not name a file", path.display()),
        )
    })?;
    let dir = parent_dir(path);
    std::fs::create_dir_all(dir)?;
    let mut prefix = std::ffi::OsString::from(".");
    prefix.push(name);
    prefix.push(".");
    // Dropping `tmp` on an early return removes the temporary file.
    let mut tmp = tempfile::Builder::new()
        .prefix(&prefix)
        .suffix(".tmp")
        .tempfile_in(dir)?;
    let out = write(tmp.as_file_mut())?;
    tmp.as_file_mut().flush()?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    sync_dir(dir);
    Ok(out)
}

/// Like [`write_atomic`], after first copying the current `path` (when it exists) to `backup`,
/// itself atomically, so `backup` always holds the whole previous file.
///
/// # Errors
/// An I/O error reading `path` (other than its absence), or any error of [`write_atomic`] for
/// `backup` or `path`; when the backup fails, `path` is untouched.
pub fn write_atomic_with_backup(path: &Path, bytes: &[u8], backup: &Path) -> io::Result<()> {
    match std::fs::read(path) {
        Ok(old) => write_atomic(backup, &old)?,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    write_atomic(path, bytes)
}

/// The folder `path` lives in (`.` for a bare file name).
fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    }
}

/// Makes the rename durable on Unix. Best effort: a folder that cannot be opened or synced does
/// not undo a write that already happened.
fn sync_dir(dir: &Path) {
    #[cfg(unix)]
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
    #[cfg(not(unix))]
    let _ = dir;
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use std::fs;

    #[test]
    fn replaces_content_and_leaves_no_temp_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("sub").join("a.json");
        write_atomic(&p, b"one").unwrap();
        write_atomic(&p, b"two").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"two");
        let names: Vec<_> = std::fs::read_dir(p.parent().unwrap()).unwrap().collect();
        assert_eq!(names.len(), 1, "only the target file remains");
    }

    #[test]
    fn writes_and_backs_up_without_leftovers() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.json");
        let bak = dir.path().join("f.json.bak");
        write_atomic_with_backup(&path, b"one", &bak).unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"one");
        assert!(!bak.exists(), "no backup of a file that did not exist");
        write_atomic_with_backup(&path, b"two", &bak).unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"two");
        assert_eq!(fs::read(&bak).unwrap(), b"one");
        let names: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(names.len(), 2, "{names:?}");
    }

    #[test]
    fn a_failed_write_leaves_the_old_file() {
        let dir = tempfile::tempdir().unwrap();
        // The target is a non-empty folder: the rename fails.
        let path = dir.path().join("taken");
        fs::create_dir(&path).unwrap();
        fs::write(path.join("x"), b"x").unwrap();
        assert!(write_atomic(&path, b"new").is_err());
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn a_failed_streamed_write_leaves_the_old_file_and_no_temp_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.jsonl");
        write_atomic(&path, b"old").unwrap();
        let e = write_atomic_with(&path, |f| {
            f.write_all(b"half")?;
            Err::<(), _>(io::Error::other("boom"))
        })
        .unwrap_err();
        assert_eq!(e.to_string(), "boom");
        assert_eq!(fs::read(&path).unwrap(), b"old");
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
        assert_eq!(
            write_atomic_with(&path, |f| f.write_all(b"new").map(|()| 7)).unwrap(),
            7
        );
        assert_eq!(fs::read(&path).unwrap(), b"new");
    }

    #[test]
    fn a_path_without_a_file_name_is_refused() {
        assert_eq!(
            write_atomic(Path::new("/"), b"x").unwrap_err().kind(),
            io::ErrorKind::InvalidInput
        );
    }
}
