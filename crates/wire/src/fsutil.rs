//! The one way every store writes a whole file: atomically, so a reader or a crash never sees a
//! half-written file (`docs/ARCHITECTURE.md`, "Files are written atomically"). Used for the
//! settings, the trust file (`paired-phones.json`), the test phone's identity,
//! `phoneline-pairings.json` (with a `.bak` of the previous file), the phone-line registry
//! settings file and dial exports.
//!
//! Steps: create the parent folder when missing, write a temporary file in the same folder
//! (`.NAME.<random>.tmp`), fsync it, rename it over the target, and on Unix fsync the folder so the
//! rename itself survives a crash. On any error the target is untouched and the temporary file is
//! removed.
//!
//! Killed mid-write (SIGKILL, a crash): the target is the old file until the rename and the new
//! one from it on, whole either way — a kill between the rename and the folder fsync cannot undo
//! the rename; only a power cut there could, and it leaves the old file
//! (`tests/crash_safe_files.rs` kills a writer at random moments and at each step). What such a
//! kill leaves is the temporary file, which nothing reads ([`is_temp_file_name`]); the app
//! removes those of its own folders at start ([`remove_stale_temp_files`]).
//!
//! Private files: what the app keeps (pairing records, dial history, logs) is the person's own,
//! and another account on the same machine must not read it. On Unix every
//! folder this module creates is `0700` and every file it writes is `0600`, whatever the umask
//! (the mode is set with `chmod` after creating, not left to the umask). The temporary file is
//! created exclusively (`O_CREAT | O_EXCL`, by `tempfile`) under a random name, so another local
//! user can neither predict it nor have it opened through a planted file or symlink.
//! [`make_private_dir`] also tightens an existing folder of the app's own (config, data, logs),
//! for folders an earlier version created `0755`.
//!
//! Windows: nothing is changed there. Files and folders inherit the ACL of the folder they are
//! created in; the per-user app-data folders the shell uses are already readable by the user
//! (and administrators) only, so no ACL is set here.

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// The mode, on Unix, of every folder the app creates.
pub const PRIVATE_DIR_MODE: u32 = 0o700;
/// The mode, on Unix, of every file the app writes.
pub const PRIVATE_FILE_MODE: u32 = 0o600;

/// Creates `dir` and every missing folder above it, each new one with mode
/// [`PRIVATE_DIR_MODE`] on Unix (whatever the umask). Folders that already exist are left as
/// they are.
///
/// # Errors
/// Any I/O error creating a folder or setting its mode, or a path component that exists but is
/// not a folder.
pub fn create_private_dir_all(dir: &Path) -> io::Result<()> {
    // The missing folders, deepest first (`ancestors` is finite: one per component).
    let mut missing = Vec::new();
    for d in dir.ancestors() {
        if d.as_os_str().is_empty() {
            break;
        }
        match std::fs::metadata(d) {
            Ok(m) if m.is_dir() => break,
            Ok(_) => {
                return Err(io::Error::new(
                    io::ErrorKind::AlreadyExists,
                    format!("{} exists and is not a folder", d.display()),
                ))
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => missing.push(d),
            Err(e) => return Err(e),
        }
    }
    for d in missing.into_iter().rev() {
        match std::fs::create_dir(d) {
            Ok(()) => set_mode(d, PRIVATE_DIR_MODE)?,
            // Created meanwhile by someone else (another thread of the app): leave its mode.
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && d.is_dir() => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Creates `dir` like [`create_private_dir_all`] and also sets `dir` itself to
/// [`PRIVATE_DIR_MODE`] when it already existed: for the app's own folders only (config, data,
/// logs, exports), never for a folder the person chose.
///
/// # Errors
/// As [`create_private_dir_all`], or setting the mode of the existing folder.
pub fn make_private_dir(dir: &Path) -> io::Result<()> {
    create_private_dir_all(dir)?;
    set_mode(dir, PRIVATE_DIR_MODE)
}

/// Sets `path`'s mode to [`PRIVATE_FILE_MODE`] on Unix (nothing elsewhere); for files written
/// by others than [`write_atomic`] (the SQLite database, log files).
///
/// # Errors
/// The I/O error of `chmod`.
pub fn make_private_file(path: &Path) -> io::Result<()> {
    set_mode(path, PRIVATE_FILE_MODE)
}

/// Sets `path`'s permission bits to `mode` on Unix; does nothing elsewhere (module doc).
fn set_mode(path: &Path, mode: u32) -> io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
    }
    #[cfg(not(unix))]
    {
        let _ = (path, mode);
        Ok(())
    }
}

/// Sets an open file's permission bits to [`PRIVATE_FILE_MODE`] on Unix (`fchmod`).
fn set_file_private(file: &File) -> io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        file.set_permissions(std::fs::Permissions::from_mode(PRIVATE_FILE_MODE))
    }
    #[cfg(not(unix))]
    {
        let _ = file;
        Ok(())
    }
}

/// Writes `bytes` to `path` atomically (see the module doc), the file `0600` on Unix. Creates
/// the parent folder (`0700`) when missing.
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
    create_private_dir_all(dir)?;
    let mut prefix = std::ffi::OsString::from(".");
    prefix.push(name);
    prefix.push(".");
    // Dropping `tmp` on an early return removes the temporary file.
    let mut tmp = tempfile::Builder::new()
        .prefix(&prefix)
        .suffix(".tmp")
        .tempfile_in(dir)?;
    // tempfile creates it 0600 already; set it again so no umask can loosen it.
    set_file_private(tmp.as_file())?;
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

/// Whether `file_name` is a temporary file [`write_atomic`] makes for a target named `target`
/// (`.TARGET.<random letters and digits>.tmp`); with `target` `None`, for any target. Such a
/// file is left behind only when the writing process is killed mid-write (a SIGKILL, a crash,
/// a power cut): every error path removes it. Nothing reads it: the app and LumiAgent read
/// only the target's own name.
pub fn is_temp_file_name(file_name: &str, target: Option<&str>) -> bool {
    let Some(rest) = file_name
        .strip_prefix('.')
        .and_then(|r| r.strip_suffix(".tmp"))
    else {
        return false;
    };
    let random = match target {
        Some(t) => match rest.strip_prefix(t).and_then(|r| r.strip_prefix('.')) {
            Some(r) => r,
            None => return false,
        },
        None => match rest.rsplit_once('.') {
            Some((name, r)) if !name.is_empty() => r,
            _ => return false,
        },
    };
    !random.is_empty() && random.bytes().all(|b| b.is_ascii_alphanumeric())
}

/// Removes, in `dir`, the temporary files a killed writer left behind
/// ([`is_temp_file_name`] with `target`); for the app's own folders at start, before anything
/// writes (a temporary file of a write under way would be removed too). Returns the files
/// removed. A missing folder has none.
///
/// # Errors
/// Reading the folder, or removing a file (other than one already gone).
pub fn remove_stale_temp_files(dir: &Path, target: Option<&str>) -> io::Result<Vec<PathBuf>> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut removed = Vec::new();
    for entry in entries {
        let entry = entry?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else {
            continue;
        };
        if !is_temp_file_name(name, target) || !entry.file_type()?.is_file() {
            continue;
        }
        match std::fs::remove_file(entry.path()) {
            Ok(()) => removed.push(entry.path()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
    }
    Ok(removed)
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

    #[cfg(unix)]
    fn mode(p: &Path) -> u32 {
        use std::os::unix::fs::PermissionsExt as _;
        fs::metadata(p).unwrap().permissions().mode() & 0o7777
    }

    #[cfg(unix)]
    #[test]
    fn new_folders_are_0700_and_files_0600_and_existing_folders_are_left_alone() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let mine = dir.path().join("theirs");
        fs::create_dir(&mine).unwrap();
        fs::set_permissions(&mine, fs::Permissions::from_mode(0o755)).unwrap();
        let file = mine.join("a").join("b").join("f.json");
        write_atomic(&file, b"x").unwrap();
        assert_eq!(mode(&file), 0o600);
        assert_eq!(mode(&mine.join("a")), 0o700);
        assert_eq!(mode(&mine.join("a").join("b")), 0o700);
        assert_eq!(
            mode(&mine),
            0o755,
            "a folder the app did not create keeps its mode"
        );
        // A file someone made readable becomes private again when rewritten.
        fs::set_permissions(&file, fs::Permissions::from_mode(0o644)).unwrap();
        write_atomic(&file, b"y").unwrap();
        assert_eq!(mode(&file), 0o600);
        make_private_dir(&mine).unwrap();
        assert_eq!(mode(&mine), 0o700, "the app's own folder is tightened");
        let e = create_private_dir_all(&file).unwrap_err();
        assert!(e.to_string().contains("is not a folder"), "{e}");
        assert!(create_private_dir_all(&file.join("below")).is_err());
    }

    #[test]
    fn stale_temp_files_are_told_apart_and_removed() {
        assert!(is_temp_file_name(
            ".settings.json.a1B2c3.tmp",
            Some("settings.json")
        ));
        assert!(is_temp_file_name(".settings.json.a1B2c3.tmp", None));
        assert!(!is_temp_file_name(
            ".settings.json.a1B2c3.tmp",
            Some("paired-phones.json")
        ));
        assert!(!is_temp_file_name("settings.json", None));
        assert!(!is_temp_file_name(".settings.json..tmp", None));
        assert!(!is_temp_file_name(".settings.json.a-b.tmp", None));
        assert!(!is_temp_file_name(".x.tmp", None), "no target name");
        let dir = tempfile::tempdir().unwrap();
        let keep = ["settings.json", "notes.tmp", ".other.tmp"];
        for k in keep {
            fs::write(dir.path().join(k), b"k").unwrap();
        }
        fs::write(dir.path().join(".settings.json.Zx81aa.tmp"), b"half").unwrap();
        fs::create_dir(dir.path().join(".folder.json.abcdef.tmp")).unwrap();
        let removed = remove_stale_temp_files(dir.path(), Some("settings.json")).unwrap();
        assert_eq!(removed, vec![dir.path().join(".settings.json.Zx81aa.tmp")]);
        let mut left: Vec<String> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        left.sort();
        assert_eq!(
            left,
            [
                ".folder.json.abcdef.tmp",
                ".other.tmp",
                "notes.tmp",
                "settings.json"
            ]
        );
        assert!(remove_stale_temp_files(&dir.path().join("none"), None)
            .unwrap()
            .is_empty());
    }

    #[test]
    fn a_path_without_a_file_name_is_refused() {
        assert_eq!(
            write_atomic(Path::new("/"), b"x").unwrap_err().kind(),
            io::ErrorKind::InvalidInput
        );
    }
}
