//! Commands of the Bridge view ([`switchboard::app::bridge`]): the current banners, their
//! history, and the explainer for a pasted error text. They only read.

use switchboard::bridge::explain::ErrorExplanation;
use switchboard::error::IpcError;

use super::Core;

/// The current banners, the retired ones and the failed calls that raised no banner.
#[tauri::command]
pub fn bridge_snapshot(core: Core<'_>) -> Result<serde_json::Value, IpcError> {
    core.bridge_shown()
}

/// Explains a pasted error text and the banner it would raise, with the app's known
/// manifests. `caller` and `endpoint` optionally name the call it came from.
///
/// # Errors
/// `invalid_input` when the text is empty or too long.
#[tauri::command]
pub fn explain_error(
    core: Core<'_>,
    text: String,
    caller: Option<String>,
    endpoint: Option<String>,
) -> Result<ErrorExplanation, IpcError> {
    core.explain_error(&text, caller.as_deref(), endpoint.as_deref())
}
