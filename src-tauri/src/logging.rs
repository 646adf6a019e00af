//! Logging with `tracing`: to stderr and to one file a day in the app's log folder
//! (`switchboard.log.YYYY-MM-DD`, UTC dates, the last [`MAX_FILES`] kept). `RUST_LOG` sets the
//! level (default `info`).
//!
//! Bounded and private: a day's file grows to at most
//! [`MAX_FILE_BYTES`]; past that one line says so and the rest of that day's lines go to stderr
//! only, so the folder never holds more than about `MAX_FILES × MAX_FILE_BYTES` (112 MiB) however
//! fast something writes. On Unix the log folder is `0700` and every log file `0600`, whatever
//! the umask (files an earlier version left `0644` are tightened when logging starts). The first
//! lines of a flood are kept rather than the last: the start of an attack says more than its
//! thousandth line. Each event is one line in the file: control characters inside it are
//! written escaped, so a peer's text (a device id in a refused hello) cannot forge lines.
//!
//! The file is written by [`DailyLog`] here, not by `tracing_appender::rolling`: tracing-appender
//! 0.2.5 rotates by time only (no size limit) and creates its files under the umask (`0644`
//! usually), with no way to set the mode. Only its `non_blocking` writer is used.

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use switchboard::clock::{Clock, SystemClock};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{fmt, EnvFilter};

/// The log files' name before the date (`switchboard.log.2026-07-21`).
pub const FILE_PREFIX: &str = switchboard::support::LOG_FILE_PREFIX;
/// How many daily files are kept (the oldest beyond that are deleted).
pub const MAX_FILES: usize = 7;
/// How large one day's file may grow, in bytes (16 MiB).
pub const MAX_FILE_BYTES: u64 = 16 * 1024 * 1024;

/// Keeps the file writer alive and remembers where the log is.
pub struct LogHandle {
    /// The folder holding the log files.
    pub dir: PathBuf,
    _guard: tracing_appender::non_blocking::WorkerGuard,
}

/// Starts logging to stderr and to [`DailyLog`] files in `dir` (created `0700`). Returns `None`
/// (stderr only) when the folder cannot be used or a subscriber is already installed (tests boot
/// several apps).
pub fn init(dir: &Path) -> Option<LogHandle> {
    let filter = || EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    // Colours only for a terminal: stderr sent to a file or a pipe (`start.sh > log`) gets
    // plain text, not escape codes.
    let colour = std::io::IsTerminal::is_terminal(&std::io::stderr());
    match DailyLog::open(dir, MAX_FILE_BYTES, MAX_FILES, Arc::new(SystemClock)) {
        Ok(log) => {
            let (writer, guard) = tracing_appender::non_blocking(log);
            let installed = tracing_subscriber::registry()
                .with(filter())
                .with(fmt::layer().with_ansi(colour).with_writer(std::io::stderr))
                .with(fmt::layer().with_ansi(false).with_writer(writer))
                .try_init()
                .is_ok();
            installed.then(|| LogHandle {
                dir: dir.to_path_buf(),
                _guard: guard,
            })
        }
        Err(e) => {
            let _ = tracing_subscriber::registry()
                .with(filter())
                .with(fmt::layer().with_ansi(colour).with_writer(std::io::stderr))
                .try_init();
            tracing::warn!("log folder {} not usable: {e}", dir.display());
            None
        }
    }
}

/// The file being written: its day, and how much it holds.
struct Today {
    date: String,
    file: File,
    bytes: u64,
    capped: bool,
}

/// A log writer: one file a day (`switchboard.log.YYYY-MM-DD`, UTC, by `clock`) in one folder,
/// at most `max_bytes` each (then one line saying so, and later lines that day dropped), the last
/// `max_files` kept; `0600` files in a `0700` folder on Unix (module doc).
pub struct DailyLog {
    dir: PathBuf,
    max_bytes: u64,
    max_files: usize,
    clock: Arc<dyn Clock>,
    today: Option<Today>,
}

impl DailyLog {
    /// Makes `dir` a private folder (created when missing; `0700` on Unix), tightens the log
    /// files already in it to `0600` and deletes the oldest beyond `max_files`. The day's file is
    /// opened at the first write.
    ///
    /// # Errors
    /// When the folder cannot be created or made private, or read.
    pub fn open(
        dir: &Path,
        max_bytes: u64,
        max_files: usize,
        clock: Arc<dyn Clock>,
    ) -> io::Result<Self> {
        switchboard::fsutil::make_private_dir(dir)?;
        let log = Self {
            dir: dir.to_path_buf(),
            max_bytes,
            max_files: max_files.max(1),
            clock,
            today: None,
        };
        for f in log.files()? {
            switchboard::fsutil::make_private_file(&f)?;
        }
        log.prune();
        Ok(log)
    }

    /// The log files in the folder, oldest first (by the date in their names).
    fn files(&self) -> io::Result<Vec<PathBuf>> {
        let mut files: Vec<PathBuf> = std::fs::read_dir(&self.dir)?
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .and_then(|n| n.strip_prefix(FILE_PREFIX))
                    .is_some_and(is_date)
            })
            .collect();
        files.sort();
        Ok(files)
    }

    /// Deletes the oldest files beyond `max_files`. Best effort: a file that cannot be deleted
    /// is said on stderr (the log cannot log about itself).
    fn prune(&self) {
        let Ok(files) = self.files() else { return };
        let extra = files.len().saturating_sub(self.max_files);
        for f in &files[..extra] {
            if let Err(e) = std::fs::remove_file(f) {
                eprintln!("old log file {} not deleted: {e}", f.display());
            }
        }
    }

    /// Makes `today` the file for `date`, opened (appending, created `0600`) when the day
    /// changed.
    fn open_day(&mut self, date: &str) -> io::Result<()> {
        if self.today.as_ref().is_some_and(|t| t.date == date) {
            return Ok(());
        }
        let path = self.dir.join(format!("{FILE_PREFIX}{date}"));
        let mut options = std::fs::OpenOptions::new();
        options.append(true).create(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(
            &mut options,
            switchboard::fsutil::PRIVATE_FILE_MODE,
        );
        let file = options.open(&path)?;
        switchboard::fsutil::make_private_file(&path)?;
        let bytes = file.metadata()?.len();
        self.today = None;
        self.prune();
        self.today = Some(Today {
            date: date.to_string(),
            file,
            bytes,
            capped: false,
        });
        Ok(())
    }
}

/// One event's text as one line: a control character inside it (a newline or carriage return
/// in a phone-supplied device id, say) is written escaped (`\n`, `\r`, `\x1b`), so no peer can
/// forge log lines; the final newline and tabs stay.
fn one_line(buf: &[u8]) -> std::borrow::Cow<'_, [u8]> {
    let body = buf.strip_suffix(b"\n").unwrap_or(buf);
    let bad = |b: &u8| (*b < 0x20 && *b != b'\t') || *b == 0x7f;
    if !body.iter().any(bad) {
        return std::borrow::Cow::Borrowed(buf);
    }
    let mut out = Vec::with_capacity(buf.len() + 16);
    for b in body {
        match b {
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b if bad(b) => out.extend_from_slice(format!("\\x{b:02x}").as_bytes()),
            b => out.push(*b),
        }
    }
    if body.len() < buf.len() {
        out.push(b'\n');
    }
    std::borrow::Cow::Owned(out)
}

/// `YYYY-MM-DD`.
fn is_date(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 10
        && b.iter().enumerate().all(|(i, c)| match i {
            4 | 7 => *c == b'-',
            _ => c.is_ascii_digit(),
        })
}

impl Write for DailyLog {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let stamp = switchboard::timefmt::rfc3339_ms(self.clock.now_ms());
        let date = stamp.get(..10).unwrap_or("0000-00-00").to_string();
        let max = self.max_bytes;
        self.open_day(&date)?;
        let Some(today) = self.today.as_mut() else {
            return Ok(buf.len());
        };
        let line = one_line(buf);
        let len = line.len() as u64;
        if today.bytes.saturating_add(len) <= max {
            today.file.write_all(&line)?;
            today.bytes += len;
        } else if !today.capped {
            today.capped = true;
            let note = format!(
                "{stamp} WARN switchboard: this log file reached {max} bytes; \
                 later lines today are on stderr only\n"
            );
            today.file.write_all(note.as_bytes())?;
            today.bytes += note.len() as u64;
        }
        // A dropped line counts as written: the log never fails the program.
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        match self.today.as_mut() {
            Some(t) => t.file.flush(),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use switchboard::clock::ManualClock;

    const DAY_MS: u64 = 86_400_000;
    /// 2026-07-21T00:00:00Z.
    const START: u64 = 1_784_592_000_000;

    fn log(dir: &Path, clock: &Arc<ManualClock>) -> DailyLog {
        DailyLog::open(dir, 1_000, 3, clock.clone() as Arc<dyn Clock>).unwrap()
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut n: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        n.sort();
        n
    }

    #[test]
    fn a_flood_is_capped_per_day_and_old_days_are_deleted() {
        let home = tempfile::tempdir().unwrap();
        let dir = home.path().join("logs");
        let clock = Arc::new(ManualClock::new(START));
        let mut w = log(&dir, &clock);
        let line = [b'x'; 99];
        for _ in 0..100_000 {
            w.write_all(&line).unwrap();
            w.write_all(b"\n").unwrap();
        }
        w.flush().unwrap();
        let first = dir.join("switchboard.log.2026-07-21");
        let text = std::fs::read_to_string(&first).unwrap();
        assert!(text.len() <= 1_000 + 200, "{}", text.len());
        assert_eq!(text.matches('\n').count(), 11, "ten lines and the note");
        assert!(
            text.ends_with("later lines today are on stderr only\n"),
            "{text}"
        );
        assert!(text.contains("2026-07-21T00:00:00.000Z WARN"), "{text}");
        for _ in 1..=4 {
            clock.advance(DAY_MS);
            w.write_all(b"next day\n").unwrap();
        }
        assert_eq!(
            names(&dir),
            [
                "switchboard.log.2026-07-23",
                "switchboard.log.2026-07-24",
                "switchboard.log.2026-07-25"
            ]
        );
        // A restart the same day appends and still respects the cap.
        drop(w);
        let mut w = log(&dir, &clock);
        w.write_all(&[b'y'; 2_000]).unwrap();
        let last = std::fs::read_to_string(dir.join("switchboard.log.2026-07-25")).unwrap();
        assert!(
            last.starts_with("next day\n") && last.len() < 1_000,
            "{last}"
        );
    }

    #[test]
    fn a_newline_inside_an_event_cannot_forge_a_line() {
        let home = tempfile::tempdir().unwrap();
        let clock = Arc::new(ManualClock::new(START));
        let mut w = log(home.path(), &clock);
        w.write_all(b"hello from dev_x\n2026-07-21 INFO paired\r\x1b[31m\tok\n")
            .unwrap();
        w.write_all(b"plain\n").unwrap();
        let text = std::fs::read_to_string(home.path().join("switchboard.log.2026-07-21")).unwrap();
        assert_eq!(
            text,
            "hello from dev_x\\n2026-07-21 INFO paired\\r\\x1b[31m\tok\nplain\n"
        );
    }

    #[cfg(unix)]
    #[test]
    fn the_folder_is_0700_and_files_0600_also_when_they_were_loose() {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        let home = tempfile::tempdir().unwrap();
        let dir = home.path().join("logs");
        std::fs::create_dir(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        let old = dir.join("switchboard.log.2026-07-20");
        std::fs::write(&old, "old\n").unwrap();
        std::fs::set_permissions(&old, std::fs::Permissions::from_mode(0o644)).unwrap();
        let clock = Arc::new(ManualClock::new(START));
        let mut w = log(&dir, &clock);
        w.write_all(b"hello\n").unwrap();
        assert_eq!(mode(&dir), 0o700);
        assert_eq!(mode(&old), 0o600);
        assert_eq!(mode(&dir.join("switchboard.log.2026-07-21")), 0o600);
    }
}
