//! Commands of the Phones view: paired phones and their status, the pairing window, unpair,
//! and the link's diagnostics. Nothing here can approve, reject or cancel an action.

use switchboard::error::IpcError;
use switchboard::link::PairingInvite;
use tauri::State;

use crate::link::{LinkState, PhonesSnapshot};

fn running(state: &LinkState) -> Result<switchboard::link::Link, IpcError> {
    state.link().ok_or_else(|| {
        let why = state
            .snapshot()
            .link_error
            .unwrap_or_else(|| "the link is still starting; try again in a moment".to_string());
        IpcError::new("link", format!("The phone link is not running: {why}"))
    })
}

/// Paired phones with their status, the open pairing window, and diagnostics.
#[tauri::command]
pub fn phones_snapshot(state: State<'_, LinkState>) -> PhonesSnapshot {
    state.snapshot()
}

/// Opens (or renews) the pairing window: a 6-digit code that lives 2 minutes, the
/// `switchboard://pair` link and its QR code.
///
/// # Errors
/// `link` when the link is not running (no key store, no free port).
#[tauri::command]
pub fn open_pairing(state: State<'_, LinkState>) -> Result<PairingInvite, IpcError> {
    let link = running(&state)?;
    let addr = if state.options.demo {
        std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST)
    } else {
        switchboard::link::diagnostics::lan_address()
            .unwrap_or(std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST))
    };
    Ok(link.open_pairing(addr))
}

/// Closes the pairing window; the code stops working at once.
#[tauri::command]
pub fn close_pairing(state: State<'_, LinkState>) {
    if let Some(link) = state.link() {
        link.close_pairing();
    }
}

/// Forgets a phone's pinned key and, when it is connected, tells it. Returns whether it was
/// paired.
///
/// # Errors
/// `link` when the link is not running or the trust file cannot be written.
#[tauri::command]
pub fn unpair_phone(state: State<'_, LinkState>, device_id: String) -> Result<bool, IpcError> {
    let link = running(&state)?;
    link.unpair(&device_id)
        .map_err(|e| IpcError::new("link", e.to_string()))
}
