//! Support bundles in the running app (save with a preview first, open one read only) and the
//! tray's summary. The bundle itself is built in [`crate::bundle`].
//!
//! **Read only while a bundle is open.** [`App::open_bundle`] keeps the bundle; the shell's
//! view commands then answer from it and every command that changes anything is refused with
//! `read_only` ([`App::change`], [`crate::change`]) until [`App::close_bundle`]. Nothing in a bundle reaches the
//! link, the hub or a file.

use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use crate::bundle::open::{open_bundle, BundleDetails, BundleInfo, OpenedBundle};
use crate::bundle::{BundleOptions, BundlePreview, SavedBundle};
use crate::tray::TraySummary;
use switchboard_wire::error::IpcError;
use switchboard_wire::sync::lock;

use super::{App, AppEvent};

impl App {
    /// The bundle a save would write now, every file with its text, for the preview dialog.
    ///
    /// # Errors
    /// `read_only` while a bundle is open; `internal` when the dial log has shut down.
    pub(crate) async fn support_preview(
        &self,
        options: BundleOptions,
    ) -> Result<BundlePreview, IpcError> {
        let bundle = crate::bundle::collect::from_app(self, options).await?;
        Ok(bundle.preview()?)
    }

    /// Builds a bundle of the app's state now and saves it to `path` (atomically, `0600`). A
    /// relative `path` is written in the export folder (`<data folder>/exports`, created when
    /// missing) and may not leave it; an empty one gets the suggested name there.
    ///
    /// # Errors
    /// `read_only` while a bundle is open; `invalid_input` for a relative path leaving the
    /// export folder; `io` naming the file when it cannot be written.
    pub(crate) async fn save_support_bundle(
        &self,
        path: &str,
        options: BundleOptions,
    ) -> Result<SavedBundle, IpcError> {
        let bundle = crate::bundle::collect::from_app(self, options).await?;
        let target = self.bundle_target(path, bundle.manifest.saved_at_ms)?;
        let saved = tokio::task::spawn_blocking(move || bundle.save(&target))
            .await
            .map_err(|e| IpcError::internal(format!("save task: {e}")))??;
        tracing::info!(path = %saved.path, bytes = saved.bytes, "support bundle saved");
        Ok(saved)
    }

    /// Where a bundle named `path` goes (see [`App::save_support_bundle`]).
    fn bundle_target(&self, path: &str, now_ms: u64) -> Result<PathBuf, IpcError> {
        let exports = self
            .config
            .paths
            .link_dir(self.config.demo)
            .join(super::paths::EXPORT_DIR);
        let path = path.trim();
        let name = if path.is_empty() {
            crate::bundle::default_file_name(now_ms)
        } else {
            path.to_string()
        };
        let p = Path::new(&name);
        if p.is_absolute() {
            return Ok(p.to_path_buf());
        }
        if p.components().any(|c| !matches!(c, Component::Normal(_))) {
            return Err(IpcError::invalid_input(format!(
                "bundle path {name}: a relative path may not leave the export folder {}",
                exports.display()
            )));
        }
        switchboard_wire::fsutil::make_private_dir(&exports).map_err(|e| {
            IpcError::io(format!(
                "creating the export folder {}: {e}",
                exports.display()
            ))
        })?;
        Ok(exports.join(p))
    }

    /// Opens the bundle at `path` for reading (replacing any open one): the views show it, and
    /// nothing can be changed until [`App::close_bundle`]. The window is told to reload.
    ///
    /// # Errors
    /// `invalid_input` naming what is wrong with a damaged or foreign archive; `io` when it
    /// cannot be read. The bundle open before stays open.
    pub async fn open_bundle(&self, path: &str) -> Result<BundleInfo, IpcError> {
        let path = path.trim();
        if path.is_empty() {
            return Err(IpcError::invalid_input(
                "bundle path is empty: give a support bundle (.tar.gz) to open",
            ));
        }
        let p = PathBuf::from(path);
        let opened = tokio::task::spawn_blocking(move || open_bundle(&p))
            .await
            .map_err(|e| IpcError::internal(format!("open task: {e}")))??;
        Ok(self.show_bundle(opened))
    }

    /// Shows an already read bundle (the shell's `--open` and drag and drop read it first).
    pub fn show_bundle(&self, opened: OpenedBundle) -> BundleInfo {
        let info = opened.info();
        tracing::info!(path = %info.path, from = %info.app_version, "support bundle opened");
        *lock(&self.viewing) = Some(Arc::new(opened));
        self.host.emit(&AppEvent::Bundle);
        info
    }

    /// Closes the open bundle (if any); the views show the live app again. Returns whether one
    /// was open.
    pub fn close_bundle(&self) -> bool {
        let was = lock(&self.viewing).take().is_some();
        if was {
            self.host.emit(&AppEvent::Bundle);
        }
        was
    }

    /// The open bundle, if any.
    pub(crate) fn viewing(&self) -> Option<Arc<OpenedBundle>> {
        lock(&self.viewing).clone()
    }

    /// The open bundle's summary for the window's banner, or `None` (live).
    pub fn bundle_info(&self) -> Option<BundleInfo> {
        self.viewing().map(|b| b.info())
    }

    /// The window's "at a glance" line: while a bundle is open, what the sender's tray showed
    /// when it was saved ([`OpenedBundle::summary`]); else the live app's (as the tray).
    pub fn glance(&self) -> TraySummary {
        match self.viewing() {
            Some(b) => b.summary(),
            None => self.tray_summary(),
        }
    }

    /// The open bundle's sender's app, settings and per-phone Phone lines views (the Settings
    /// and Phone lines views in bundle mode), or `None` (live).
    pub fn bundle_details(&self) -> Option<BundleDetails> {
        self.viewing().map(|b| b.details())
    }

    /// What the tray shows now (the live app's, also while a bundle is open). Built from the
    /// parts the tray lists, each read under its own lock (never two at once), not from the
    /// views' whole snapshots: it runs on every notice that may move a count, in the hub's
    /// task, and a flapping banner raises and clears one many times a second.
    pub fn tray_summary(&self) -> TraySummary {
        let phones = self.phones.tray_phones();
        let banners = crate::tray::banner_lines(self.bridge.lock_store().banners());
        let waiting = crate::tray::waiting_lines(self.confirmations.lock().waiting());
        let mut s = crate::tray::summarize_parts(&phones, &banners, &waiting);
        s.storage_problem = self.dials.as_ref().and_then(|d| d.log.disk_full());
        s
    }

    /// What the Phones view shows now: the link's [`crate::phones::PhonesSnapshot`] with
    /// the dial history's storage problem (a full disk, and where), which the link does not
    /// know.
    pub fn phones_snapshot(&self) -> crate::phones::PhonesSnapshot {
        let mut s = self.phones.snapshot();
        s.storage_problem = self.dials.as_ref().and_then(|d| d.log.disk_full());
        s
    }

    /// Gives the host the tray's summary now.
    pub fn refresh_tray(&self) {
        self.host.set_tray(&self.tray_summary());
    }
}
