//! Where the app keeps its files: settings, data (trust file, dial history, pairing records)
//! and logs. The shell asks the OS for the folders; tests and the end-to-end suite give a
//! private home through `SWITCHBOARD_HOME`.

use std::path::{Path, PathBuf};

/// The environment variable naming a private home (`<home>/{config,data,logs}`), used by tests
/// and the end-to-end suite instead of the OS folders.
pub const HOME_VAR: &str = "SWITCHBOARD_HOME";

/// The folders the app keeps its files in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppPaths {
    /// Settings (`settings.json`).
    pub config_dir: PathBuf,
    /// Data: trust file, dial history, pairing records.
    pub data_dir: PathBuf,
    /// Rotating log files (`switchboard.log.YYYY-MM-DD`).
    pub log_dir: PathBuf,
}

impl AppPaths {
    /// `home/config`, `home/data` and `home/logs`.
    pub fn under(home: &Path) -> Self {
        Self {
            config_dir: home.join("config"),
            data_dir: home.join("data"),
            log_dir: home.join("logs"),
        }
    }

    /// [`AppPaths::under`] the folder `SWITCHBOARD_HOME` names, when it is set.
    pub fn from_env() -> Option<Self> {
        std::env::var_os(HOME_VAR).map(|home| Self::under(Path::new(&home)))
    }

    /// The settings file.
    pub fn settings_file(&self) -> PathBuf {
        self.config_dir.join("settings.json")
    }

    /// The folder of the phone link's files (trust file) and the dial history: the data folder,
    /// or `<data>/demo` with the demo phone, so the demo's dials and pairing stay out of the
    /// real ones.
    pub fn link_dir(&self, demo: bool) -> PathBuf {
        if demo {
            self.data_dir.join("demo")
        } else {
            self.data_dir.clone()
        }
    }
}
