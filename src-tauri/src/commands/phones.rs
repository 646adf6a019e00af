//! Commands of the Phones view: paired phones and their status, the pairing window, unpair,
//! and the link's diagnostics ([`switchboard::app::phones`]). Nothing here can approve, reject
//! or cancel an action.

use switchboard::error::IpcError;
use switchboard::link::PairingInvite;

use super::Core;

/// Paired phones with their status, the open pairing window, and diagnostics.
#[tauri::command]
pub fn phones_snapshot(core: Core<'_>) -> Result<serde_json::Value, IpcError> {
    core.phones_shown()
}

/// Opens (or renews) the pairing window: a 6-digit code that lives 2 minutes, the
/// `switchboard://pair` link, its QR code and the typed line, offering the addresses of the
/// interfaces in `networks` (the person's choice; absent: every network).
///
/// # Errors
/// `link` when the link is not running (no key store, no free port); `invalid_input` when none
/// of `networks` has an address.
#[tauri::command]
pub fn open_pairing(
    core: Core<'_>,
    networks: Option<Vec<String>>,
) -> Result<PairingInvite, IpcError> {
    core.change()?.open_pairing_on(networks)
}

/// Closes the pairing window; the code stops working at once.
#[tauri::command]
pub fn close_pairing(core: Core<'_>) -> Result<(), IpcError> {
    core.change()?.close_pairing();
    Ok(())
}

/// The person's answer after comparing the verification code of the pending pairing `id` with
/// the phone's screen: `codes_match` ("Codes match") pins the phone once the phone confirmed too;
/// `false` ("They differ") discards it, saves nothing and closes the pairing window.
///
/// # Errors
/// `link` when the link is not running; `not_found` when that pairing ended meanwhile.
#[tauri::command]
pub fn confirm_pairing(core: Core<'_>, id: String, codes_match: bool) -> Result<(), IpcError> {
    core.change()?.confirm_pairing(&id, codes_match)
}

/// Forgets a phone's pinned key and, when it is connected, tells it. Returns whether it was
/// paired.
///
/// # Errors
/// `link` when the link is not running or the trust file cannot be written.
#[tauri::command]
pub fn unpair_phone(core: Core<'_>, device_id: String) -> Result<bool, IpcError> {
    core.change()?.unpair(&device_id)
}
