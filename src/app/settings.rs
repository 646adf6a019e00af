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

/// The environment variable with which WebKitGTK draws without accelerated compositing.
pub const WEBKIT_NO_COMPOSITING: &str = "WEBKIT_DISABLE_COMPOSITING_MODE";

/// How the window is to draw (Linux, WebKitGTK), decided once before the window exists from
/// [`Settings::window_gpu`] and the environment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WindowGraphics {
    /// `WEBKIT_DISABLE_COMPOSITING_MODE` was set by whoever started the app: left as it is.
    AsTheEnvironmentSays,
    /// The setting asks for the GPU: WebKitGTK's default (accelerated compositing).
    Gpu,
    /// The default: set `WEBKIT_DISABLE_COMPOSITING_MODE=1` before the window is made.
    NoCompositing,
}

impl WindowGraphics {
    /// Decides from the setting and whether the variable is already in the environment.
    pub fn decide(window_gpu: bool, variable_set: bool) -> Self {
        match (variable_set, window_gpu) {
            (true, _) => Self::AsTheEnvironmentSays,
            (false, true) => Self::Gpu,
            (false, false) => Self::NoCompositing,
        }
    }

    /// Decides for the app whose folders are `paths` (its `settings.json`; an unreadable or
    /// missing file counts as the default, off) in this process's environment.
    pub fn for_app(paths: Option<&AppPaths>) -> Self {
        Self::decide(
            window_gpu_setting(paths),
            std::env::var_os(WEBKIT_NO_COMPOSITING).is_some(),
        )
    }

    /// The variable to set in this process's environment before the window is made, if any.
    pub fn variable(self) -> Option<(&'static str, &'static str)> {
        (self == Self::NoCompositing).then_some((WEBKIT_NO_COMPOSITING, "1"))
    }

    /// In words, for the log at start.
    pub fn words(self) -> &'static str {
        match self {
            Self::AsTheEnvironmentSays => {
                "window graphics: WEBKIT_DISABLE_COMPOSITING_MODE comes from the environment"
            }
            Self::Gpu => "window graphics: the GPU (accelerated compositing, Settings)",
            Self::NoCompositing => {
                "window graphics: without accelerated compositing (the default; Settings can turn the GPU on)"
            }
        }
    }
}

/// [`Settings::window_gpu`] as saved in the `settings.json` of `paths` (false when there is
/// no file, it does not read, or there are no folders).
fn window_gpu_setting(paths: Option<&AppPaths>) -> bool {
    paths
        .and_then(|p| Settings::load(&p.settings_file()).ok())
        .is_some_and(|s| s.window_gpu)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn the_window_draws_without_compositing_unless_the_setting_or_the_environment_says_otherwise() {
        assert_eq!(
            WindowGraphics::decide(false, false).variable(),
            Some((WEBKIT_NO_COMPOSITING, "1"))
        );
        assert_eq!(WindowGraphics::decide(true, false), WindowGraphics::Gpu);
        assert_eq!(WindowGraphics::decide(true, false).variable(), None);
        // Whoever started the app with the variable (either value) decides.
        assert_eq!(
            WindowGraphics::decide(false, true),
            WindowGraphics::AsTheEnvironmentSays
        );
        assert_eq!(WindowGraphics::decide(true, true).variable(), None);
    }

    #[test]
    fn the_setting_is_read_from_the_apps_settings_file() {
        let dir = tempfile::tempdir().unwrap();
        let paths = AppPaths::under(dir.path());
        std::fs::create_dir_all(&paths.config_dir).unwrap();
        // No folders, no file: the default, off.
        assert!(!window_gpu_setting(None));
        let gpu = |p: &AppPaths| window_gpu_setting(Some(p));
        assert!(!gpu(&paths));
        let s = Settings {
            window_gpu: true,
            ..Settings::default()
        };
        s.save(&paths.settings_file()).unwrap();
        assert!(gpu(&paths));
        // A file that does not read counts as the default.
        std::fs::write(paths.settings_file(), b"{ not json").unwrap();
        assert!(!gpu(&paths));
    }
}
