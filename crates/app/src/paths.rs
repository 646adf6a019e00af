//! Where the app keeps its files: settings, data (trust file, dial history, pairing records)
//! and logs. The shell asks the OS for the folders; tests and the end-to-end suite give a
//! private home through `SWITCHBOARD_HOME`.

use std::path::{Path, PathBuf};

/// The environment variable naming a private home (`<home>/{config,data,logs}`), used by tests
/// and the end-to-end suite instead of the OS folders.
pub const HOME_VAR: &str = "SWITCHBOARD_HOME";

/// The desktop app's identifier (`tauri.conf.json`), the name of its OS folders.
pub const APP_IDENTIFIER: &str = "dev.switchboard.desktop";

/// The folder, inside the data folder ([`AppPaths::link_dir`]), dial exports go to by default.
pub const EXPORT_DIR: &str = "exports";

/// The app's log folder as Tauri's `app_log_dir` names it: `~/Library/Logs/<id>` on macOS,
/// `<local data>/<id>/logs` elsewhere (`~/.local/share/<id>/logs`, `%LOCALAPPDATA%\<id>\logs`).
/// `None` when the OS gives no such folder.
pub fn os_log_dir() -> Option<PathBuf> {
    if cfg!(target_os = "macos") {
        Some(dirs::home_dir()?.join("Library/Logs").join(APP_IDENTIFIER))
    } else {
        Some(dirs::data_local_dir()?.join(APP_IDENTIFIER).join("logs"))
    }
}

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

    /// The OS's per-user folders the desktop app uses when `SWITCHBOARD_HOME` is not set, as
    /// Tauri names them for the app's identifier [`APP_IDENTIFIER`]: `<data>/<id>`,
    /// `<config>/<id>`, and the logs where Tauri's `app_log_dir` puts them, which the app writes
    /// to ([`os_log_dir`]) (Linux: `~/.local/share/dev.switchboard.desktop`).
    /// `None` when the OS gives no home folder. The CLI finds the running app's control socket
    /// through it ([`switchboard_control::socket_path`]).
    pub fn os_default() -> Option<Self> {
        Some(Self {
            config_dir: dirs::config_dir()?.join(APP_IDENTIFIER),
            data_dir: dirs::data_dir()?.join(APP_IDENTIFIER),
            log_dir: os_log_dir()?,
        })
    }

    /// [`AppPaths::from_env`], else [`AppPaths::os_default`].
    pub fn from_env_or_os() -> Option<Self> {
        Self::from_env().or_else(Self::os_default)
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
    /// is tightened when it is opened). Removes the temporary files a write cut short by a
    /// kill left beside the settings file, the trust file and in the export folder
    /// ([`switchboard_wire::fsutil::remove_stale_temp_files`]); called at start, before anything writes. The log folder is the shell's (it makes it private when
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
            if let Err(e) = switchboard_wire::fsutil::make_private_dir(d) {
                problems.push(format!("folder {} not made private: {e}", d.display()));
            }
        }
        let files = [
            self.settings_file(),
            self.link_dir(demo)
                .join(switchboard_link::trust::TRUST_FILE),
        ];
        // What a write killed midway left behind: the app never
        // reads these, but they would pile up, one per crash.
        let exports = self.link_dir(demo).join(EXPORT_DIR);
        let stale = files
            .iter()
            .filter_map(|f| Some((f.parent()?.to_path_buf(), f.file_name()?.to_str()?)))
            .map(|(dir, name)| (dir, Some(name)))
            .chain(std::iter::once((exports, None)));
        for (dir, target) in stale {
            match switchboard_wire::fsutil::remove_stale_temp_files(&dir, target) {
                Ok(removed) => {
                    for f in removed {
                        tracing::info!(
                            "removed {}, left by a write that was cut short",
                            f.display()
                        );
                    }
                }
                Err(e) => problems.push(format!(
                    "stale temporary files in {} not removed: {e}",
                    dir.display()
                )),
            }
        }
        for f in &files {
            match switchboard_wire::fsutil::make_private_file(f) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    problems.push(format!("file {} not made private: {e}", f.display()));
                }
                _ => {}
            }
        }
        problems
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::fs;

    /// Where Tauri's `app_log_dir` writes (the support bundle collects from here).
    #[test]
    fn the_log_folder_is_tauris_app_log_dir() {
        let logs = AppPaths::os_default().unwrap().log_dir;
        let want = if cfg!(target_os = "macos") {
            Path::new("Library").join("Logs").join(APP_IDENTIFIER)
        } else {
            Path::new(APP_IDENTIFIER).join("logs")
        };
        assert!(logs.ends_with(&want), "{}", logs.display());
        assert!(logs.is_absolute(), "{}", logs.display());
    }

    #[test]
    fn the_identifier_is_the_desktop_apps() {
        let conf = fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tauri.conf.json"
        ))
        .unwrap();
        let v: serde_json::Value = serde_json::from_str(&conf).unwrap();
        assert_eq!(v["identifier"], APP_IDENTIFIER);
    }

    #[test]
    fn start_removes_what_killed_writes_left_and_nothing_else() {
        let home = tempfile::tempdir().unwrap();
        let paths = AppPaths::under(home.path());
        let exports = paths.data_dir.join(EXPORT_DIR);
        fs::create_dir_all(&paths.config_dir).unwrap();
        fs::create_dir_all(&exports).unwrap();
        let stale = [
            paths.config_dir.join(".settings.json.Ab12Cd.tmp"),
            paths.data_dir.join(".paired-phones.json.x9Y8z7.tmp"),
            exports.join(".week.jsonl.QQQQQQ.tmp"),
        ];
        let kept = [
            paths.settings_file(),
            paths.data_dir.join("paired-phones.json"),
            // Not a temporary file of the settings or the trust file.
            paths.data_dir.join(".dials.sqlite3.abcdef.tmp"),
            exports.join("week.jsonl"),
        ];
        for f in stale.iter().chain(&kept) {
            fs::write(f, b"x").unwrap();
        }
        assert!(paths.make_private(false).is_empty());
        for f in &stale {
            assert!(!f.exists(), "{} is left", f.display());
        }
        for f in &kept {
            assert!(f.exists(), "{} was removed", f.display());
        }
    }
}
