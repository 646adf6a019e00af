//! Logging with `tracing`: to stderr and to a daily-rotating file in the app's log folder
//! (`switchboard.log.YYYY-MM-DD`, the last 7 kept). `RUST_LOG` sets the level (default `info`).

use std::path::{Path, PathBuf};

use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{fmt, EnvFilter};

/// Keeps the file writer alive and remembers where the log is.
pub struct LogHandle {
    /// The folder holding the log files.
    pub dir: PathBuf,
    _guard: tracing_appender::non_blocking::WorkerGuard,
}

/// Starts logging to stderr and to a rotating file in `dir`. Returns `None` (stderr only) when
/// the folder cannot be used or a subscriber is already installed (tests boot several apps).
pub fn init(dir: &Path) -> Option<LogHandle> {
    let filter = || EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    if let Err(e) = std::fs::create_dir_all(dir) {
        eprintln!("log folder {} not usable: {e}", dir.display());
    }
    let appender = tracing_appender::rolling::Builder::new()
        .rotation(tracing_appender::rolling::Rotation::DAILY)
        .filename_prefix("switchboard.log")
        .max_log_files(7)
        .build(dir);
    match appender {
        Ok(appender) => {
            let (writer, guard) = tracing_appender::non_blocking(appender);
            let installed = tracing_subscriber::registry()
                .with(filter())
                .with(fmt::layer().with_writer(std::io::stderr))
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
                .with(fmt::layer().with_writer(std::io::stderr))
                .try_init();
            tracing::warn!("log folder {} not usable: {e}", dir.display());
            None
        }
    }
}
