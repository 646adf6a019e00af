//! Commands of the Phone lines view ([`switchboard::app::phone_lines`]): each phone line with
//! its state, pairing decision and manifest, a test of a path against its exclusions, the
//! registry of known lines, and the desktop's revoke (never a grant: granting is done on the
//! phone).

use switchboard::app::phone_lines::{ExclusionTest, PhoneLinesSnapshot};
use switchboard::error::IpcError;

use super::Core;

/// The phone lines from the current source, with the registry.
#[tauri::command]
pub fn phone_lines_snapshot(core: Core<'_>) -> Result<serde_json::Value, IpcError> {
    core.phone_lines_shown()
}

/// Opens a `phoneline-pairings.json` (or a folder holding one); only reads.
///
/// # Errors
/// `invalid_input` naming the field, line and column; `io` when it cannot be read.
#[tauri::command]
pub fn open_pairings_file(core: Core<'_>, path: String) -> Result<PhoneLinesSnapshot, IpcError> {
    core.change()?.open_pairings_file(&path)
}

/// Shows the phone-line settings of the paired phone `phone` (the view's phone picker).
///
/// # Errors
/// `not_found` when that phone is not paired or has not sent its settings.
#[tauri::command]
pub fn show_phone_lines_of(core: Core<'_>, phone: String) -> Result<PhoneLinesSnapshot, IpcError> {
    core.change()?.show_phone_lines_of(&phone)
}

/// Stops showing the opened file (nothing is written).
#[tauri::command]
pub fn close_pairings_file(core: Core<'_>) -> Result<PhoneLinesSnapshot, IpcError> {
    Ok(core.change()?.close_pairings_file())
}

/// Uses a pasted `describe` response as the latest describe of line `identifier`.
///
/// # Errors
/// `invalid_input` when no file is open, the text is too long, or it is not JSON.
#[tauri::command]
pub fn attach_describe(
    core: Core<'_>,
    identifier: String,
    text: String,
) -> Result<PhoneLinesSnapshot, IpcError> {
    core.change()?.attach_describe(&identifier, &text)
}

/// Revokes line `identifier` (only with `confirm: true`).
///
/// # Errors
/// `invalid_input`, `link`, `not_found`, `conflict` or `io`, as
/// [`switchboard::app::App::revoke_phone_line`] says.
#[tauri::command]
pub fn revoke_phone_line(
    core: Core<'_>,
    identifier: String,
    confirm: bool,
) -> Result<PhoneLinesSnapshot, IpcError> {
    core.change()?.revoke_phone_line(&identifier, confirm)
}

/// Which `excludeFromSearch` prefix of line `identifier`, if any, covers `path`.
///
/// # Errors
/// `not_found` when no line has that identifier or its manifest is not known.
#[tauri::command]
pub fn test_exclusion(
    core: Core<'_>,
    identifier: String,
    path: String,
) -> Result<ExclusionTest, IpcError> {
    core.change()?.test_exclusion(&identifier, &path)
}

/// Adds a known phone line to the registry (saved in the settings).
///
/// # Errors
/// `invalid_input` for a bad or known identifier or an empty name; `io` when saving fails.
#[tauri::command]
pub fn add_known_phone_line(
    core: Core<'_>,
    identifier: String,
    name: String,
) -> Result<PhoneLinesSnapshot, IpcError> {
    core.change()?.add_known_phone_line(&identifier, &name)
}

/// Removes a phone line added in settings from the registry (LumiRealm is built in).
///
/// # Errors
/// `invalid_input` for a built-in line; `not_found`; `io` when saving fails.
#[tauri::command]
pub fn remove_known_phone_line(
    core: Core<'_>,
    identifier: String,
) -> Result<PhoneLinesSnapshot, IpcError> {
    core.change()?.remove_known_phone_line(&identifier)
}
