//! Whole-file writes that never leave a half-written file: write a temporary file in the same
//! folder, fsync it, rename it over the target, fsync the folder (the project's file rule; used
//! for `phoneline-pairings.json` and the phone-line registry settings file).

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

static COUNTER: AtomicU64 = AtomicU64::new(0);

fn temp_path(path: &Path) -> io::Result<PathBuf> {
    let name = path.file_name().ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} does not name a file", path.display()),
        )
    })?;
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let mut tmp = std::ffi::OsString::from(".");
    tmp.push(name);
    tmp.push(format!(".tmp.{}.{n}", std::process::id()));
    Ok(path.with_file_name(tmp))
}

/// Replaces `path`'s content with `bytes` atomically: readers see the old file or the new one,
/// never a mix; on error the old file is untouched and no temporary file is left behind.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let tmp = temp_path(path)?;
    let result = (|| {
        let mut file = OpenOptions::new().write(true).create_new(true).open(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        drop(file);
        fs::rename(&tmp, path)?;
        sync_dir(path);
        Ok(())
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// Like [`write_atomic`], after first copying the current `path` (when it exists) to `backup`,
/// itself atomically, so `backup` always holds the whole previous file.
pub(crate) fn write_atomic_with_backup(path: &Path, bytes: &[u8], backup: &Path) -> io::Result<()> {
    match fs::read(path) {
        Ok(old) => write_atomic(backup, &old)?,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    write_atomic(path, bytes)
}

/// Makes the rename durable. Best effort: not every platform can open a folder for syncing.
fn sync_dir(path: &Path) {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

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
}
