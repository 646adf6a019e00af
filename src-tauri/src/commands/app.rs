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
    let saved = core.change()?.save_settings(settings)?;
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

/// Where the person left the window (the view and its scroll places), kept by the app while
/// the window is closed to the tray, so a window made again opens there.
#[tauri::command]
pub fn window_place<R: tauri::Runtime>(app: tauri::AppHandle<R>) -> crate::window::WindowPlace {
    tauri::Manager::try_state::<std::sync::Arc<crate::window::PlaceState>>(&app)
        .map(|p| p.place())
        .unwrap_or_default()
}

/// Keeps where the person is in the window now (the page sends it as the view or a scroll
/// place changes); keys past 64 characters are cut and offsets that are not finite numbers
/// of at least 0 dropped.
#[tauri::command]
pub fn save_window_place<R: tauri::Runtime>(
    app: tauri::AppHandle<R>,
    place: crate::window::WindowPlace,
) {
    if let Some(p) = tauri::Manager::try_state::<std::sync::Arc<crate::window::PlaceState>>(&app) {
        p.save(place);
    }
}

/// The page painted its first frame on the place it was opened at (`view`, the main area
/// scrolled `scroll` CSS pixels down): the app logs it with the time from the window being
/// made, once per window (`first paint <N> ms after the window was made`), with the page's
/// own steps when it sent them ([`crate::window::PaintMarks`]; values that are not finite
/// numbers of at least 0 are left out).
#[tauri::command]
pub fn window_painted<R: tauri::Runtime>(
    app: tauri::AppHandle<R>,
    view: String,
    scroll: f64,
    marks: Option<crate::window::PaintMarks>,
) {
    if let Some(ms) = tauri::Manager::try_state::<std::sync::Arc<crate::window::PlaceState>>(&app)
        .and_then(|p| p.painted())
    {
        let view: String = view.chars().take(64).collect();
        let marks = marks.filter(|m| {
            [m.script_ms, m.place_ms, m.paint_ms]
                .iter()
                .all(|v| v.is_finite() && *v >= 0.0)
        });
        match marks {
            Some(m) => tracing::info!(
                view,
                scroll,
                // From the window being made to the page's navigation start: the web process
                // (and network process) starting and the request for the page.
                page_start_ms = (ms as f64 - m.paint_ms).max(0.0).round(),
                script_ms = m.script_ms.round(),
                place_ms = m.place_ms.round(),
                paint_ms = m.paint_ms.round(),
                "first paint {ms} ms after the window was made"
            ),
            None => tracing::info!(
                view,
                scroll,
                "first paint {ms} ms after the window was made"
            ),
        }
    }
}
