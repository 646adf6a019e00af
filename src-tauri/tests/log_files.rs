//! The shell's log files through [`switchboard_desktop::logging::init`], as the app starts
//! logging: under the most permissive umask (`0o000`) the log folder is `0700` and the day's
//! file `0600`, and it holds the line logged.
//!
//! The umask and the global subscriber are per process: this file holds one test.
#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap().permissions().mode() & 0o7777
}

#[test]
fn log_files_are_private_whatever_the_umask() {
    // SAFETY: umask only sets the process's file-creation mask; this binary runs one test.
    unsafe { libc::umask(0o000) };
    let home = tempfile::tempdir().unwrap();
    let dir = home.path().join("new").join("logs");
    let handle = switchboard_desktop::logging::init(&dir).expect("the first subscriber");
    tracing::info!("a line for the log file");
    drop(handle); // flushes the non-blocking writer
    let files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    let name = files[0].file_name().unwrap().to_str().unwrap().to_string();
    assert!(
        name.starts_with(switchboard_desktop::logging::FILE_PREFIX),
        "{name}"
    );
    assert!(std::fs::read_to_string(&files[0])
        .unwrap()
        .contains("a line for the log file"));
    assert_eq!(mode(&files[0]), 0o600, "{name}");
    assert_eq!(mode(&dir), 0o700);
    assert_eq!(mode(dir.parent().unwrap()), 0o700, "created by the app too");
}
