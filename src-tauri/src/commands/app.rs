//! Commands of the Settings view and the app frame: identity, settings, where files live.

use serde::Serialize;
use switchboard::app_info::AppInfo;
use switchboard::error::IpcError;
use switchboard::settings::Settings;
use tauri::{AppHandle, Runtime, State};
use ts_rs::TS;

use crate::state::AppState;

/// Where the app keeps its files and what went wrong loading them, for the Settings view.
#[derive(Debug, Clone, Serialize, TS)]
#[ts(export)]
pub struct Diagnostics {
    /// The settings file's path.
    pub settings_file: String,
    /// The data folder (trust file, dial history).
    pub data_dir: String,
    /// The folder of rotating log files, when file logging is on.
    pub log_dir: Option<String>,
    /// Why the settings file could not be read at start, if it could not.
    pub settings_load_error: Option<String>,
}

/// The app's name, version and protocol ranges.
#[tauri::command]
pub fn app_info() -> AppInfo {
    switchboard::app_info::app_info()
}

/// The current settings.
#[tauri::command]
pub fn get_settings(state: State<'_, AppState>) -> Settings {
    state.settings()
}

/// Validates, saves (atomically) and applies new settings; returns what was saved.
///
/// # Errors
/// `invalid_input` for an out-of-range value, `io` when the file cannot be written.
#[tauri::command]
pub fn save_settings<R: Runtime>(
    _app: AppHandle<R>,
    state: State<'_, AppState>,
    settings: Settings,
) -> Result<Settings, IpcError> {
    settings
        .save(&state.paths.settings_file())
        .map_err(|e| match e {
            switchboard::settings::SettingsError::Invalid { .. } => {
                IpcError::invalid_input(e.to_string())
            }
            other => IpcError::io(other.to_string()),
        })?;
    *state.lock_settings() = settings.clone();
    Ok(settings)
}

/// Where files live and what failed to load.
#[tauri::command]
pub fn diagnostics(state: State<'_, AppState>) -> Diagnostics {
    Diagnostics {
        settings_file: state.paths.settings_file().display().to_string(),
        data_dir: state.paths.data_dir.display().to_string(),
        log_dir: state.log.as_ref().map(|l| l.dir.display().to_string()),
        settings_load_error: state.settings_load_error.clone(),
    }
}
