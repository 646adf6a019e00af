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

    /// Creates the app's own folders (config, data and, with the demo, `<data>/demo`) when
    /// missing and, on Unix, sets each to `0700`, and the settings and trust files that exist
    /// to `0600` (also when an earlier version left them `0755` and `0644`; the dial database
    /// is tightened when it is opened). The log folder is the shell's (it makes it private when
    /// it starts logging). Returns one line per folder or file that could not be made private
    /// (each naming it), for the log: a folder that cannot be created is reported again, in
    /// words, by whatever then uses it.
    pub fn make_private(&self, demo: bool) -> Vec<String> {
        let mut problems = Vec::new();
        let mut dirs = vec![self.config_dir.clone(), self.data_dir.clone()];
        if demo {
            dirs.push(self.link_dir(true));
        }
        for d in &dirs {
            if let Err(e) = crate::fsutil::make_private_dir(d) {
                problems.push(format!("folder {} not made private: {e}", d.display()));
            }
        }
        let files = [
            self.settings_file(),
            self.link_dir(demo).join(crate::link::trust::TRUST_FILE),
        ];
        for f in &files {
            match crate::fsutil::make_private_file(f) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    problems.push(format!("file {} not made private: {e}", f.display()));
                }
                _ => {}
            }
        }
        problems
    }
}
