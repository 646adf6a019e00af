//! Managed state of the desktop shell: where files live and what the person chose.

use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard};

use switchboard::settings::Settings;
use tauri::{AppHandle, Manager, Runtime};

/// The folders the app keeps its files in.
#[derive(Debug, Clone)]
pub struct AppPaths {
    /// Settings (`settings.json`).
    pub config_dir: PathBuf,
    /// Data: trust file, dial history, pairing records.
    pub data_dir: PathBuf,
    /// Rotating log files (`switchboard.log.YYYY-MM-DD`).
    pub log_dir: PathBuf,
}

impl AppPaths {
    /// The OS's app folders, or `$SWITCHBOARD_HOME/{config,data,logs}` when that variable is
    /// set (tests and the end-to-end suite use it for a private, throwaway home).
    ///
    /// # Errors
    /// When the OS gives no home folder for the app.
    pub fn resolve<R: Runtime>(app: &AppHandle<R>) -> tauri::Result<Self> {
        if let Some(home) = std::env::var_os("SWITCHBOARD_HOME") {
            let home = PathBuf::from(home);
            return Ok(Self {
                config_dir: home.join("config"),
                data_dir: home.join("data"),
                log_dir: home.join("logs"),
            });
        }
        let p = app.path();
        Ok(Self {
            config_dir: p.app_config_dir()?,
            data_dir: p.app_data_dir()?,
            log_dir: p.app_log_dir()?,
        })
    }

    /// The settings file.
    pub fn settings_file(&self) -> PathBuf {
        self.config_dir.join("settings.json")
    }
}

/// Everything the commands share, `manage()`d once at start.
pub struct AppState {
    /// Where files live.
    pub paths: AppPaths,
    settings: Mutex<Settings>,
    /// Set when `settings.json` could not be read at start (the app then runs on defaults and
    /// does not overwrite the file until the person saves).
    pub settings_load_error: Option<String>,
    /// Keeps the log file writer alive; `None` when the log folder could not be opened.
    pub log: Option<crate::logging::LogHandle>,
}

impl AppState {
    /// Loads the settings file (defaults when missing or unreadable, remembering why).
    pub fn load(paths: AppPaths, log: Option<crate::logging::LogHandle>) -> Self {
        let (settings, settings_load_error) = match Settings::load(&paths.settings_file()) {
            Ok(s) => (s, None),
            Err(e) => {
                tracing::warn!("settings not loaded, using defaults: {e}");
                (Settings::default(), Some(e.to_string()))
            }
        };
        Self {
            paths,
            settings: Mutex::new(settings),
            settings_load_error,
            log,
        }
    }

    /// A copy of the current settings.
    pub fn settings(&self) -> Settings {
        self.lock_settings().clone()
    }

    /// Locks the settings (a poisoned lock is recovered: settings are plain data).
    pub fn lock_settings(&self) -> MutexGuard<'_, Settings> {
        self.settings.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Convenience: the managed [`AppState`] of an app handle.
pub trait StateExt {
    /// The managed app state.
    fn app_state(&self) -> tauri::State<'_, AppState>;
}

impl<R: Runtime> StateExt for AppHandle<R> {
    fn app_state(&self) -> tauri::State<'_, AppState> {
        self.state::<AppState>()
    }
}
