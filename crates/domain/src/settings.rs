//! The desktop's settings: what a person chose in the Settings view, kept across restarts in
//! `settings.json` in the app's config folder (written atomically).
//!
//! Unknown or missing fields fall back to their defaults, so a settings file from an older or a
//! newer build still loads; a file that is not JSON at all gives an error naming the file, line
//! and column, and the app then runs on defaults without overwriting it until the person saves.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use ts_rs::TS;

/// Colour theme: follow the OS, or force light or dark.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS, Default)]
#[serde(rename_all = "snake_case")]
#[ts(export)]
pub enum Theme {
    /// Follow the operating system's light or dark preference (the default).
    #[default]
    System,
    /// Always light.
    Light,
    /// Always dark.
    Dark,
}

/// Which desktop notifications are shown. Each kind can be muted on its own.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(default)]
#[ts(export)]
pub struct NotificationSettings {
    /// A new bridge-status banner appeared (phone-line.md, "Failure modes and the bridge banner").
    pub banners: bool,
    /// Something started waiting for confirmation on a phone.
    pub confirmation_waiting: bool,
    /// A confirmation ended (approved, declined, expired, ...).
    pub confirmation_ended: bool,
    /// Also notify for approvals the phone made by its own policy (`policy_auto`); off by default.
    pub policy_auto: bool,
}

impl Default for NotificationSettings {
    fn default() -> Self {
        Self {
            banners: true,
            confirmation_waiting: true,
            confirmation_ended: true,
            policy_auto: false,
        }
    }
}

/// Everything the Settings view edits.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(default)]
#[ts(export)]
pub struct Settings {
    /// Closing the window keeps Switchboard running in the tray (true) or quits (false).
    pub close_to_tray: bool,
    /// Start Switchboard on login, in the tray with its window hidden (off by default). Kept
    /// as the system's own entry (`switchboard::app::autostart`: XDG autostart, a macOS
    /// LaunchAgent, the Windows Run key), which is what the app reads back; the value in
    /// `settings.json` is only what was last saved.
    pub start_on_login: bool,
    /// Colour theme.
    pub theme: Theme,
    /// Linux: let the window draw with the GPU (WebKitGTK's accelerated compositing). Off by
    /// default: where GL is software (no GPU, remote desktops, virtual machines, Xvfb) the
    /// compositor's layers cost the window's web process about 90 MB more resident memory
    /// (measured under Xvfb: 272 MB against 177 MB on the demo) for no smoother a table, and
    /// compositing is the usual cause of blank WebKitGTK windows on some drivers (reported
    /// upstream as tauri-apps/tauri#5143). Applies at the next start;
    /// `WEBKIT_DISABLE_COMPOSITING_MODE` set in the environment wins. Ignored on macOS and
    /// Windows.
    pub window_gpu: bool,
    /// Desktop notifications per kind.
    pub notifications: NotificationSettings,
    /// How many of the newest dials the dial log keeps in memory besides SQLite (default
    /// 25 000): a cache, every view reads the whole history from SQLite.
    pub dial_ring_capacity: u32,
    /// Extra known phone lines besides LumiRealm: `(identifier, name)` pairs.
    pub extra_phone_lines: Vec<KnownLineSetting>,
    /// The TCP port the phone link listens on, fixed (for firewall rules): `None` (the default)
    /// takes the first free one of 47470–47479; a fixed port that another program holds is
    /// said in words and no other is taken. Between 1024 and 65535; applies at the next start.
    #[ts(type = "number | null")]
    pub link_port: Option<u16>,
    /// The Live dials view's filter line as last applied (empty: no filter; grammar in
    /// `switchboard_dials::filter`), so the view opens on the same filter after a restart.
    /// Checked again by the filter parser when the view opens; a line that no longer parses is
    /// shown with its error and not applied.
    pub dials_filter_line: String,
}

/// A phone line added to the registry in Settings (phone-line.md, "Discovery and pairing").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct KnownLineSetting {
    /// The extension id the line is registered under (e.g. `lumirealm`).
    pub identifier: String,
    /// The display name its `describe` must declare (e.g. `LumiRealm`).
    pub name: String,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            close_to_tray: true,
            start_on_login: false,
            theme: Theme::System,
            window_gpu: false,
            notifications: NotificationSettings::default(),
            dial_ring_capacity: 25_000,
            extra_phone_lines: Vec::new(),
            link_port: None,
            dials_filter_line: String::new(),
        }
    }
}

/// Longest filter line the settings keep (bytes).
pub const MAX_FILTER_LINE_BYTES: usize = 4096;

/// Why settings could not be read or written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SettingsError {
    /// The file exists but is not valid settings JSON.
    #[error("{path}: not a valid settings file (line {line}, column {column}): {message}")]
    Parse {
        /// The settings file.
        path: PathBuf,
        /// 1-based line of the problem.
        line: usize,
        /// 1-based column of the problem.
        column: usize,
        /// What serde_json reported.
        message: String,
    },
    /// Reading or writing failed.
    #[error("{path}: {source}")]
    Io {
        /// The settings file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A value is out of its allowed range.
    #[error("invalid setting {field}: {message}")]
    Invalid {
        /// The field's name, e.g. `dial_ring_capacity`.
        field: &'static str,
        /// What is wrong with it.
        message: String,
    },
}

impl Settings {
    /// Checks value ranges: `dial_ring_capacity` between 1 000 and 5 000 000; line identifiers
    /// and names non-empty.
    ///
    /// # Errors
    /// [`SettingsError::Invalid`] naming the first bad field.
    pub fn validate(&self) -> Result<(), SettingsError> {
        if !(1_000..=5_000_000).contains(&self.dial_ring_capacity) {
            return Err(SettingsError::Invalid {
                field: "dial_ring_capacity",
                message: format!("{} is outside 1000..=5000000", self.dial_ring_capacity),
            });
        }
        if let Some(p) = self.link_port.filter(|p| *p < 1024) {
            return Err(SettingsError::Invalid {
                field: "link_port",
                message: format!(
                    "{p} is below 1024: ports under 1024 need administrator rights; choose one between 1024 and 65535"
                ),
            });
        }
        if self.dials_filter_line.len() > MAX_FILTER_LINE_BYTES {
            return Err(SettingsError::Invalid {
                field: "dials_filter_line",
                message: format!(
                    "{} bytes is longer than {MAX_FILTER_LINE_BYTES}",
                    self.dials_filter_line.len()
                ),
            });
        }
        for (i, l) in self.extra_phone_lines.iter().enumerate() {
            if l.identifier.trim().is_empty() || l.name.trim().is_empty() {
                return Err(SettingsError::Invalid {
                    field: "extra_phone_lines",
                    message: format!("entry {i} needs both an identifier and a name"),
                });
            }
        }
        Ok(())
    }

    /// Loads settings from `path`; a missing file gives the defaults.
    ///
    /// # Errors
    /// [`SettingsError::Parse`] when the file is not valid JSON of the right shape,
    /// [`SettingsError::Io`] when it cannot be read.
    pub fn load(path: &Path) -> Result<Self, SettingsError> {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Self::default()),
            Err(source) => {
                return Err(SettingsError::Io {
                    path: path.to_path_buf(),
                    source,
                })
            }
        };
        serde_json::from_str(&text).map_err(|e| SettingsError::Parse {
            path: path.to_path_buf(),
            line: e.line(),
            column: e.column(),
            message: e.to_string(),
        })
    }

    /// Validates and writes settings to `path` atomically (temp file, then rename).
    ///
    /// # Errors
    /// [`SettingsError::Invalid`] for an out-of-range value, [`SettingsError::Io`] on write.
    pub fn save(&self, path: &Path) -> Result<(), SettingsError> {
        self.validate()?;
        let text = serde_json::to_string_pretty(self).map_err(|e| SettingsError::Invalid {
            field: "settings",
            message: e.to_string(),
        })?;
        switchboard_wire::fsutil::write_atomic(path, text.as_bytes()).map_err(|source| {
            SettingsError::Io {
                path: path.to_path_buf(),
                source,
            }
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn round_trip_and_defaults_for_missing_fields() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("settings.json");
        assert_eq!(Settings::load(&p).unwrap(), Settings::default());
        let s = Settings {
            close_to_tray: false,
            theme: Theme::Dark,
            ..Settings::default()
        };
        s.save(&p).unwrap();
        assert_eq!(Settings::load(&p).unwrap(), s);
        std::fs::write(&p, r#"{"theme":"light"}"#).unwrap();
        let s = Settings::load(&p).unwrap();
        assert_eq!(s.theme, Theme::Light);
        assert!(s.close_to_tray);
    }

    #[test]
    fn bad_file_names_line_and_column_and_bad_value_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("settings.json");
        std::fs::write(&p, "{\n  \"theme\": 3\n}").unwrap();
        let e = Settings::load(&p).unwrap_err().to_string();
        assert!(e.contains("line 2"), "{e}");
        let s = Settings {
            dial_ring_capacity: 5,
            ..Settings::default()
        };
        assert!(matches!(
            s.save(&p),
            Err(SettingsError::Invalid {
                field: "dial_ring_capacity",
                ..
            })
        ));
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "{\n  \"theme\": 3\n}");
    }

    #[test]
    fn dials_filter_line_is_kept_across_a_restart_and_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("settings.json");
        let s = Settings {
            dials_filter_line: r#"op:read_item -outcome:ok phone:"Demo phone" /item_\d+/i"#.into(),
            ..Settings::default()
        };
        s.save(&p).unwrap();
        let back = Settings::load(&p).unwrap();
        assert_eq!(back.dials_filter_line, s.dials_filter_line);
        // A file from before the filter line loads with no filter.
        std::fs::write(&p, r#"{"theme":"dark"}"#).unwrap();
        let old = Settings::load(&p).unwrap();
        assert_eq!(old.dials_filter_line, "");
        let long = Settings {
            dials_filter_line: "x".repeat(MAX_FILTER_LINE_BYTES + 1),
            ..Settings::default()
        };
        assert!(matches!(
            long.save(&p),
            Err(SettingsError::Invalid {
                field: "dials_filter_line",
                ..
            })
        ));
    }
}
