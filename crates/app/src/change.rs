//! Read only while a support bundle is open, decided here once.
//!
//! While a person looks at a support bundle ([`App::open_bundle`]) the views answer from it and
//! nothing may change: not the settings, not a pairing, not a phone line, not the dials, not a
//! file. Every call that changes something is a method of [`Change`], and the only way to get a
//! `Change` is [`App::change`], which refuses with `read_only` while a bundle is open. The
//! methods behind them are not public, so no command of the shell, the control channel or a
//! CLI can change anything without meeting that one check, and none keeps a list of its own.
//!
//! The reads decide the same way in the core: [`App::phones_shown`] and its siblings answer
//! from the open bundle, else from the live app.

use switchboard_domain::settings::Settings;
use switchboard_link::PairingInvite;
use switchboard_wire::error::{IpcError, IpcErrorKind};

use crate::bundle::{BundleOptions, BundlePreview, SavedBundle};
use crate::dials::{DialClearScope, ExportRequest, ExportSummary, ImportSummary};
use crate::phone_lines::{ExclusionTest, PhoneLinesSnapshot};
use crate::App;

/// Proof that the app may change something now: no support bundle was open when it was made
/// ([`App::change`]). Borrowed from the app for one call or a few; not kept.
#[derive(Debug, Clone, Copy)]
pub struct Change<'a> {
    app: &'a App,
}

impl App {
    /// The one way to change anything: a [`Change`] while no support bundle is open.
    ///
    /// # Errors
    /// `read_only` while a bundle is open, naming it and what to do (close it).
    pub fn change(&self) -> Result<Change<'_>, IpcError> {
        match self.viewing() {
            None => Ok(Change { app: self }),
            Some(b) => Err(IpcError::new(
                IpcErrorKind::ReadOnly,
                format!(
                    "a support bundle is open ({}, from Switchboard {} saved {}): it is read \
                     only; close it to change anything",
                    b.path, b.manifest.app_version, b.manifest.saved_at
                ),
            )),
        }
    }
}

impl Change<'_> {
    /// Validates, saves (atomically) and applies new settings; returns what was saved.
    /// `start_on_login` writes or removes the autostart entry; where start on login is not
    /// available, asking for it is an `invalid_input` error and nothing is saved.
    ///
    /// # Errors
    /// `invalid_input` for an out-of-range value or start on login where it is unavailable,
    /// `io` when the settings file or the autostart entry cannot be written.
    pub fn save_settings(self, settings: Settings) -> Result<Settings, IpcError> {
        self.app.save_settings(settings)
    }

    /// Opens (or renews) the pairing window: a 6-digit code that lives 2 minutes, the
    /// `switchboard://pair` link and its QR code, naming every address phones may reach.
    ///
    /// # Errors
    /// `link` when the link is not running.
    pub fn open_pairing(self) -> Result<PairingInvite, IpcError> {
        self.app.phones.open_pairing()
    }

    /// [`Change::open_pairing`] offering only the addresses of the interfaces named in
    /// `networks` (`None`: every network).
    ///
    /// # Errors
    /// `link` when the link is not running; `invalid_input` when none of `networks` has an
    /// address to offer now (naming the ones that do).
    pub fn open_pairing_on(
        &self,
        networks: Option<Vec<String>>,
    ) -> Result<PairingInvite, IpcError> {
        self.app.phones.open_pairing_on(networks)
    }

    /// Closes the pairing window; the code stops working at once.
    pub fn close_pairing(self) {
        self.app.phones.close_pairing();
    }

    /// The person's answer to the pending pairing `id` after comparing the verification
    /// codes: `codes_match` pins the phone once the phone confirmed too; otherwise the pairing
    /// is discarded and the pairing window closes.
    ///
    /// # Errors
    /// `link` when the link is not running; `not_found` when that pairing ended meanwhile.
    pub fn confirm_pairing(self, id: &str, codes_match: bool) -> Result<(), IpcError> {
        self.app.phones.confirm_pairing(id, codes_match)
    }

    /// Forgets a phone's pinned key and, when it is connected, tells it. Returns whether it
    /// was paired.
    ///
    /// # Errors
    /// `link` when the link is not running or the trust file cannot be written.
    pub fn unpair(self, device_id: &str) -> Result<bool, IpcError> {
        self.app.phones.unpair(device_id)
    }

    /// Opens a `phoneline-pairings.json` file as the Phone lines view's source.
    ///
    /// # Errors
    /// As [`App::phone_lines_snapshot`]'s source: `io` or `invalid_input` naming the file.
    pub fn open_pairings_file(self, path: &str) -> Result<PhoneLinesSnapshot, IpcError> {
        self.app.open_pairings_file(path)
    }

    /// Shows the phone-line settings of the paired phone `phone` (the view's phone picker).
    ///
    /// # Errors
    /// `not_found` when `phone` is not paired or has not sent its settings.
    pub fn show_phone_lines_of(self, phone: &str) -> Result<PhoneLinesSnapshot, IpcError> {
        self.app.show_phone_lines_of(phone)
    }

    /// Closes the opened pairings file; the view shows the app's own source again.
    pub fn close_pairings_file(self) -> PhoneLinesSnapshot {
        self.app.close_pairings_file()
    }

    /// Attaches a pasted `describe` manifest to the phone line `identifier`.
    ///
    /// # Errors
    /// `invalid_input` naming what is wrong with the manifest or the identifier.
    pub fn attach_describe(
        &self,
        identifier: &str,
        text: &str,
    ) -> Result<PhoneLinesSnapshot, IpcError> {
        self.app.attach_describe(identifier, text)
    }

    /// Revokes the pairing record of `identifier` in the opened pairings file (with a backup),
    /// once `confirm` is given.
    ///
    /// # Errors
    /// `invalid_input` without `confirm` or for an unknown line; `io` naming the file.
    pub fn revoke_phone_line(
        &self,
        identifier: &str,
        confirm: bool,
    ) -> Result<PhoneLinesSnapshot, IpcError> {
        self.app.revoke_phone_line(identifier, confirm)
    }

    /// Whether `path` is excluded from search for the phone line `identifier`
    /// (`excludeFromSearch`).
    ///
    /// # Errors
    /// `not_found` for an unknown line; `invalid_input` for a bad path.
    pub fn test_exclusion(self, identifier: &str, path: &str) -> Result<ExclusionTest, IpcError> {
        self.app.test_exclusion(identifier, path)
    }

    /// Adds a known phone line to the settings' registry.
    ///
    /// # Errors
    /// `invalid_input` for a bad identifier or name; `io` when the settings cannot be saved.
    pub fn add_known_phone_line(
        &self,
        identifier: &str,
        name: &str,
    ) -> Result<PhoneLinesSnapshot, IpcError> {
        self.app.add_known_phone_line(identifier, name)
    }

    /// Removes a known phone line from the settings' registry.
    ///
    /// # Errors
    /// `not_found` for a line the registry does not hold; `io` when the settings cannot be
    /// saved.
    pub fn remove_known_phone_line(
        &self,
        identifier: &str,
    ) -> Result<PhoneLinesSnapshot, IpcError> {
        self.app.remove_known_phone_line(identifier)
    }

    /// Exports dials as JSON Lines as `request` asks: with a filter `line`, every matching dial
    /// of the whole history; else `filter`'s held dials; `redact` replaces request and response
    /// values by type markers; `replace` (default false) overwrites a file already at the path.
    /// A relative path is written in the export folder and may not leave it.
    ///
    /// # Errors
    /// `invalid_input` for an empty path, a path leaving the export folder or a filter line
    /// that does not parse; `conflict` when the file exists and `replace` is not true; `io`
    /// naming the file; `not_found` for an absent capture.
    pub async fn dials_export(self, request: ExportRequest) -> Result<ExportSummary, IpcError> {
        self.app.dials_export(request).await
    }

    /// Imports a JSON Lines file of dials into the read-only `imported` view (all or nothing).
    ///
    /// # Errors
    /// `invalid_input` for an empty path or bad lines; `io` when the file cannot be read;
    /// `internal` when the dial log did not start.
    pub async fn dials_import(self, path: String) -> Result<ImportSummary, IpcError> {
        self.app.dials()?.dials_import(path).await
    }

    /// Closes the imported capture (nothing when none is open or the log did not start).
    pub fn dials_close_import(self) {
        if let Ok(d) = self.app.dials() {
            d.dials_close_import();
        }
    }

    /// Clears the live log (`memory` or `all`); returns the stored rows deleted.
    ///
    /// # Errors
    /// `io` when the history file cannot be changed; `internal` when the log has shut down.
    pub async fn dials_clear(self, scope: DialClearScope) -> Result<u64, IpcError> {
        self.app.dials()?.dials_clear(scope).await
    }

    /// The bundle a save would write now, every file with its text, for the preview dialog.
    ///
    /// # Errors
    /// `internal` when the dial log has shut down.
    pub async fn support_preview(self, options: BundleOptions) -> Result<BundlePreview, IpcError> {
        self.app.support_preview(options).await
    }

    /// Builds a bundle of the app's state now and saves it to `path` (atomically, `0600`). A
    /// relative `path` is written in the export folder and may not leave it; an empty one gets
    /// the suggested name there.
    ///
    /// # Errors
    /// `invalid_input` for a relative path leaving the export folder; `io` naming the file
    /// when it cannot be written.
    pub async fn save_support_bundle(
        &self,
        path: &str,
        options: BundleOptions,
    ) -> Result<SavedBundle, IpcError> {
        self.app.save_support_bundle(path, options).await
    }
}

/// A view's answer as JSON: the open support bundle's copy of the view, else the live app's
/// (`live`), of the same shape.
///
/// # Errors
/// `internal` when the live value does not serialise (never for the app's types).
fn shown<T: serde::Serialize>(
    bundle: Option<serde_json::Value>,
    live: impl FnOnce() -> T,
) -> Result<serde_json::Value, IpcError> {
    match bundle {
        Some(v) => Ok(v),
        None => {
            serde_json::to_value(live()).map_err(|e| IpcError::internal(format!("answer: {e}")))
        }
    }
}

impl App {
    /// Whether a support bundle is open (the views show it, read only).
    pub fn bundle_open(&self) -> bool {
        self.viewing().is_some()
    }

    /// The Phones view as shown: the open bundle's, else [`App::phones_snapshot`]'s, as JSON
    /// of [`crate::phones::PhonesSnapshot`]'s shape.
    ///
    /// # Errors
    /// `internal` when the snapshot does not serialise (never).
    pub fn phones_shown(&self) -> Result<serde_json::Value, IpcError> {
        shown(self.viewing().map(|b| b.phones.clone()), || {
            self.phones_snapshot()
        })
    }

    /// The Bridge status view as shown (the open bundle's banners, else the live ones), as
    /// JSON of [`switchboard_domain::bridge::store::BridgeSnapshot`]'s shape.
    ///
    /// # Errors
    /// `internal` when the snapshot does not serialise (never).
    pub fn bridge_shown(&self) -> Result<serde_json::Value, IpcError> {
        shown(self.viewing().map(|b| b.banners.clone()), || {
            self.bridge_snapshot()
        })
    }

    /// The Phone lines view as shown, as JSON of [`PhoneLinesSnapshot`]'s shape.
    ///
    /// # Errors
    /// `internal` when the snapshot does not serialise (never).
    pub fn phone_lines_shown(&self) -> Result<serde_json::Value, IpcError> {
        shown(self.viewing().map(|b| b.phone_lines.clone()), || {
            self.phone_lines_snapshot()
        })
    }

    /// The Confirmations view as shown, as JSON of
    /// [`switchboard_domain::confirmations::ConfirmationsSnapshot`]'s shape.
    ///
    /// # Errors
    /// `internal` when the snapshot does not serialise (never).
    pub fn confirmations_shown(&self) -> Result<serde_json::Value, IpcError> {
        shown(self.viewing().map(|b| b.confirmations.clone()), || {
            self.confirmations_snapshot()
        })
    }

    /// The autonomy table of `phone` as shown (the open bundle's copy, else the live one), as
    /// JSON of [`crate::confirmations::PhoneAutonomy`]'s shape.
    ///
    /// # Errors
    /// `not_found` when the open bundle holds no table for `phone`; as
    /// [`App::autonomy_table`] when live.
    pub fn autonomy_shown(&self, phone: &str) -> Result<serde_json::Value, IpcError> {
        if let Some(b) = self.viewing() {
            return b.autonomy.get(phone).cloned().ok_or_else(|| {
                IpcError::not_found(format!(
                    "the support bundle holds no autonomy table for {phone}"
                ))
            });
        }
        let table = self.autonomy_table(phone)?;
        shown(None, || table)
    }
}
