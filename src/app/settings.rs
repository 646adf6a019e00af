//! The person's settings as the running app holds them: loaded once at start (defaults, and
//! the reason, when the file does not read), saved atomically on change.

use std::sync::Mutex;

use crate::error::IpcError;
use crate::settings::{Settings, SettingsError};
use crate::sync::lock;

use super::paths::AppPaths;

/// The settings in memory and where they are saved.
#[derive(Debug)]
pub struct SettingsState {
    file: std::path::PathBuf,
    settings: Mutex<Settings>,
    /// Set when `settings.json` could not be read at start (the app then runs on defaults and
    /// does not overwrite the file until the person saves).
    pub load_error: Option<String>,
}

impl SettingsState {
    /// Loads the settings file of `paths` (defaults when missing or unreadable, remembering why).
    pub fn load(paths: &AppPaths) -> Self {
        let file = paths.settings_file();
        let (settings, load_error) = match Settings::load(&file) {
            Ok(s) => (s, None),
            Err(e) => {
                tracing::warn!("settings not loaded, using defaults: {e}");
                (Settings::default(), Some(e.to_string()))
            }
        };
        Self {
            file,
            settings: Mutex::new(settings),
            load_error,
        }
    }

    /// A copy of the current settings.
    pub fn get(&self) -> Settings {
        lock(&self.settings).clone()
    }

    /// Validates, saves (atomically) and applies `settings`; returns what was saved.
    ///
    /// # Errors
    /// `invalid_input` for an out-of-range value, `io` when the file cannot be written (the
    /// settings in memory then stay as they were).
    pub fn save(&self, settings: Settings) -> Result<Settings, IpcError> {
        settings.save(&self.file).map_err(|e| match e {
            SettingsError::Invalid { .. } => IpcError::invalid_input(e.to_string()),
            other => IpcError::io(other.to_string()),
        })?;
        *lock(&self.settings) = settings.clone();
        Ok(settings)
    }
}
