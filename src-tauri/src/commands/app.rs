//! Commands of the Settings view and the app frame: identity, settings, where files live.

use switchboard::app::Diagnostics;
use switchboard::app_info::AppInfo;
use switchboard::error::IpcError;
use switchboard::settings::Settings;

use super::Core;

/// The app's name, version and protocol ranges.
#[tauri::command]
pub fn app_info() -> AppInfo {
    switchboard::app_info::app_info()
}

/// The current settings.
#[tauri::command]
pub fn get_settings(core: Core<'_>) -> Settings {
    core.get_settings()
}

/// Validates, saves (atomically) and applies new settings; returns what was saved. The theme
/// also goes to the windows' own frame (the GTK menu bar on Linux, the title bar elsewhere).
///
/// # Errors
/// `invalid_input` for an out-of-range value, `io` when the file cannot be written.
#[tauri::command]
pub fn save_settings<R: tauri::Runtime>(
    app: tauri::AppHandle<R>,
    core: Core<'_>,
    settings: Settings,
) -> Result<Settings, IpcError> {
    core.read_only()?;
    let saved = core.save_settings(settings)?;
    if let Some(apply) = tauri::Manager::try_state::<crate::ThemeApplier>(&app) {
        (apply.0)(saved.theme);
    }
    Ok(saved)
}

/// Where files live and what failed to load.
#[tauri::command]
pub fn diagnostics(core: Core<'_>) -> Diagnostics {
    core.diagnostics()
}
