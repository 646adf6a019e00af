//! Commands of support bundles ([`switchboard::app::support`]): the preview of every file
//! before saving, the save, and opening a bundle read only (its views then answer from it, and
//! every command that would change something answers `read_only`). Nothing here can approve,
//! reject or cancel anything on a phone.

use switchboard::app::tray::TraySummary;
use switchboard::error::IpcError;
use switchboard::support::open::{BundleDetails, BundleInfo};
use switchboard::support::{BundleOptions, BundlePreview, SavedBundle};

use super::Core;

/// Every file a bundle saved now would hold, with its purpose and text (the preview dialog).
///
/// # Errors
/// `read_only` while a bundle is open.
#[tauri::command]
pub async fn support_preview(
    core: Core<'_>,
    options: Option<BundleOptions>,
) -> Result<BundlePreview, IpcError> {
    core.change()?
        .support_preview(options.unwrap_or_default())
        .await
}

/// Saves a bundle of the app's state now to `path` (relative: in the export folder; empty: the
/// suggested name there).
///
/// # Errors
/// `read_only` while a bundle is open; `invalid_input`, `io` naming the file.
#[tauri::command]
pub async fn save_support_bundle(
    core: Core<'_>,
    path: String,
    options: Option<BundleOptions>,
) -> Result<SavedBundle, IpcError> {
    core.change()?
        .save_support_bundle(&path, options.unwrap_or_default())
        .await
}

/// Opens the bundle at `path` read only.
///
/// # Errors
/// `invalid_input` naming what is wrong with a damaged or foreign archive; `io`.
#[tauri::command]
pub async fn open_bundle(core: Core<'_>, path: String) -> Result<BundleInfo, IpcError> {
    core.open_bundle(&path).await
}

/// Closes the open bundle; `false` when none was open.
#[tauri::command]
pub fn close_bundle(core: Core<'_>) -> bool {
    core.close_bundle()
}

/// The open bundle (the window's read-only banner), or `null` when the views are live.
#[tauri::command]
pub fn bundle_info(core: Core<'_>) -> Option<BundleInfo> {
    core.bundle_info()
}

/// The window's "at a glance" line: the tray's summary (its tooltip's counts and menu
/// entries) of the live app, or while a bundle is open, of the bundle (what the sender's tray
/// showed when it was saved). The tray itself always shows the live app.
#[tauri::command]
pub fn tray_summary(core: Core<'_>) -> TraySummary {
    core.glance()
}

/// The open bundle's sender's app, settings and per-phone Phone lines views, or `null` when
/// the views are live (the viewer's own settings are never answered here).
#[tauri::command]
pub fn bundle_details(core: Core<'_>) -> Option<BundleDetails> {
    core.bundle_details()
}
